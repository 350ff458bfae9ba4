package kubelet

import (
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A kubelet keeps one record per pod (thousands in a process of many
// simulated nodes). What a running pod without probes, failures or a second
// projected token leaves empty is kept apart (podExtra), so that such a
// pod's record is 128 bytes: it was 176 with those fields inline.
func TestPodRecordIsSmall(t *testing.T) {
	if size := unsafe.Sizeof(podRecord{}); size > 128 {
		t.Errorf("podRecord is %d bytes, want at most 128", size)
	}
}

// The extra part is made when a container has to wait and dropped once
// the pod runs; a pod that starts at once never has one.
func TestPodRecordExtraOnlyWhileNeeded(t *testing.T) {
	h := newHarness(t, nil)
	plain := h.create(h.pod("plain", nil))
	if got := h.sync(plain); got.Status.Phase != v1.PodRunning {
		t.Fatalf("plain pod %s", got.Status.Phase)
	}
	if x := h.k.pods[plain.UID].extra; x != nil {
		t.Errorf("a running pod without waits keeps an extra part: %+v", x)
	}

	p := h.create(h.pod("needs-cm", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "x"}}}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodPending {
		t.Fatalf("pod without its ConfigMap %s", got.Status.Phase)
	}
	if x := h.k.pods[p.UID].extra; x == nil || len(x.waiting) != 1 {
		t.Fatalf("the waiting container is not in the extra part: %+v", x)
	}
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"x": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("not running once the ConfigMap exists: %+v", cstatus(got, "app"))
	}
	if x := h.k.pods[p.UID].extra; x != nil {
		t.Errorf("the extra part outlives the wait: %+v", x)
	}
}
