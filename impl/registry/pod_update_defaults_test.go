package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// TestPodUpdateKeepsStoredPodLevelResources: an update never derives new
// pod-level values for a pod stored under earlier defaulting (here 1.36's,
// which gave no pod-level request beside pod-level requests alone): a
// metadata-only update (a label, a finalizer gone, a new owner) of such a
// pod is accepted and leaves spec.resources as stored, where defaulting it
// anew would change the immutable spec.resources and refuse the update.
// The values a body leaves out are the stored pod's (PR 140514: existing
// pod-level fields are preserved on update).
func TestPodUpdateKeepsStoredPodLevelResources(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := newPod("web")
	old.Spec.Containers[0].Resources.Requests = rlist("cpu", "500m", "memory", "64Mi")
	old = defaultedPod(t, old)
	// As stored before: the pod-level memory request was never defaulted.
	old.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1")}
	stored := old.Spec.Resources.DeepCopy()

	labeled := old.DeepCopy()
	labeled.Labels = map[string]string{"app": "web"}
	r.Strategy.Default(labeled)
	r.Strategy.PrepareForUpdate(ctx, labeled, old)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, labeled, old))
	if !apiequality.Semantic.DeepEqual(labeled.Spec.Resources, stored) {
		t.Errorf("spec.resources %+v after a label update, want the stored %+v", labeled.Spec.Resources, stored)
	}

	// A body without the pod-level values gets the stored ones back.
	bare := old.DeepCopy()
	bare.Spec.Resources.Requests = nil
	bare.Spec.Containers[0].Image = "nginx:1.28"
	r.Strategy.Default(bare)
	r.Strategy.PrepareForUpdate(ctx, bare, old)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, bare, old))
	if !apiequality.Semantic.DeepEqual(bare.Spec.Resources, stored) {
		t.Errorf("spec.resources %+v from a body without them, want the stored %+v", bare.Spec.Resources, stored)
	}
}
