package apiproxy

import (
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's query is kube-apiserver's streamParams': "1" for each set
// flag, the ports joined by commas in one "port".
func TestKubeletStreamQuery(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n"}}
	kq, err := streamQuery(url.Values{"stdin": {"x"}, "stdout": {"false"}, "stderr": {""}, "tty": {"TRUE"}}, pod, "exec into")
	if want := "stderr=1&stdin=1&tty=1"; err != nil || kq.Encode() != want {
		t.Errorf("streamQuery = %q, %v; want %q", kq.Encode(), err, want)
	}
	kq, err = portForwardQuery(url.Values{"ports": {"80,443", "0008080"}})
	if want := "port=80%2C443%2C8080"; err != nil || kq.Encode() != want {
		t.Errorf("portForwardQuery = %q, %v; want %q", kq.Encode(), err, want)
	}
}
