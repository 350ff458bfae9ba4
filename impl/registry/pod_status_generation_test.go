package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodStatusKeepsObservedGenerations: a /status write that leaves
// status.observedGeneration or a condition's observedGeneration at 0 keeps
// the stored value (conditions matched by type, in order), as upstream's
// pod status strategy (preserveOldObservedGeneration); a value set is taken.
func TestPodStatusKeepsObservedGenerations(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := defaultedPod(t, newPod("p"))
	old.Status.ObservedGeneration = 3
	old.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, ObservedGeneration: 2},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1},
		{Type: "example.com/Custom", Status: corev1.ConditionTrue, ObservedGeneration: 2},
		{Type: "example.com/Custom", Status: corev1.ConditionTrue, ObservedGeneration: 3},
	}
	p := old.DeepCopy()
	p.Status.ObservedGeneration = 0
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 3},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: "example.com/Custom", Status: corev1.ConditionTrue},
		{Type: "example.com/Custom", Status: corev1.ConditionTrue},
	}
	r.Status.PrepareForUpdate(ctx, p, old)
	if g := p.Status.ObservedGeneration; g != 3 {
		t.Errorf("status.observedGeneration %d, want the stored 3", g)
	}
	want := []int64{1, 3, 0, 2, 3}
	for i, c := range p.Status.Conditions {
		if c.ObservedGeneration != want[i] {
			t.Errorf("conditions[%d] (%s) observedGeneration %d, want %d", i, c.Type, c.ObservedGeneration, want[i])
		}
	}
	wantErrors(t, r.Status.ValidateUpdate(ctx, p, old))
}
