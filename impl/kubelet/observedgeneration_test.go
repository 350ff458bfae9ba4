package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEvictionDisruptionTargetObservedGeneration: the DisruptionTarget
// the kubelet writes with an eviction observed the evicted pod's
// generation, as upstream's eviction manager sets it
// (CalculatePodConditionObservedGeneration), and the status its
// generation too.
func TestEvictionDisruptionTargetObservedGeneration(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pod("hog", nil)
	p.Generation = 4 // as the API server keeps it after spec updates
	p = h.sync(h.create(p))
	if err := evictNow(h, p); err != nil {
		t.Fatal(err)
	}
	got := h.get(p)
	wantEvicted(t, "evicted", got)
	if c := cond(got, v1.DisruptionTarget); c.ObservedGeneration != 4 {
		t.Errorf("DisruptionTarget observedGeneration %d, want 4", c.ObservedGeneration)
	}
	if got.Status.ObservedGeneration != 4 {
		t.Errorf("status.observedGeneration %d, want 4", got.Status.ObservedGeneration)
	}
}

// TestSpecUpdateObservedGeneration: a pod whose spec changes in place
// (activeDeadlineSeconds added: the API server bumps
// metadata.generation) is reported with the new generation as
// status.observedGeneration and on its kubelet-owned conditions at the
// next sync, though none of their statuses changed.
func TestSpecUpdateObservedGeneration(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pod("web", nil)
	p.Generation = 1
	p = h.sync(h.create(p))
	if p.Status.Phase != v1.PodRunning || p.Status.ObservedGeneration != 1 {
		t.Fatalf("phase %s observedGeneration %d, want Running 1", p.Status.Phase, p.Status.ObservedGeneration)
	}
	upd := p.DeepCopy()
	deadline := int64(3600)
	upd.Spec.ActiveDeadlineSeconds = &deadline
	upd.Generation = 2 // what kube-apiserver's pod strategy does for a spec change
	if _, err := h.client.CoreV1().Pods(p.Namespace).Update(h.ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := h.sync(p)
	if got.Status.ObservedGeneration != 2 {
		t.Errorf("status.observedGeneration %d, want 2", got.Status.ObservedGeneration)
	}
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady, v1.PodInitialized, v1.PodScheduled, "PodReadyToStartContainers"} {
		if c := cond(got, ct); c.ObservedGeneration != 2 {
			t.Errorf("%s observedGeneration %d, want 2", ct, c.ObservedGeneration)
		}
	}
}
