package endpoints

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pods/status write takes a non-canonical IPv6 pod IP with a Warning
// header and refuses a new IP with leading zeros, as upstream 1.37's pod
// status strategy (legacy IP fields, StrictIPCIDRValidation on).
func TestPodStatusIPsThroughTheAPI(t *testing.T) {
	h, mem := servedHandler(t, "pods")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	h.res.Strategy.Default(pod)
	mem.mu.Lock()
	mem.put("/pods/ns/p", pod)
	mem.mu.Unlock()
	const path = "/api/v1/namespaces/ns/pods/p/status"
	r := do(h, "PATCH", path, "application/merge-patch+json",
		`{"status":{"podIP":"10.0.0.2","podIPs":[{"ip":"10.0.0.2"},{"ip":"fd00:0:0:0::2"}]}}`)
	if r.code != 200 {
		t.Fatalf("status write: %d %s", r.code, r.body)
	}
	if want := `status.podIPs[1].ip: IPv6 address \"fd00:0:0:0::2\" should be in RFC 5952 canonical format (\"fd00::2\")`; !strings.Contains(r.warning, want) {
		t.Errorf("Warning header %q, want it to hold %q", r.warning, want)
	}
	r = do(h, "PATCH", path, "application/merge-patch+json", `{"status":{"podIP":"010.0.0.3","podIPs":[{"ip":"010.0.0.3"}]}}`)
	if r.code != 422 {
		t.Fatalf("status write with a leading-zero IP: %d %s", r.code, r.body)
	}
	if msg := r.status(t).Message; !strings.Contains(msg, `status.podIPs[0]: Invalid value: "010.0.0.3": must not have leading 0s`) {
		t.Errorf("message %q", msg)
	}
}
