package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestSubMilliQuantitiesRoundedAsUpstream: every resource list of a pod is
// rounded up to milli precision by defaulting (upstream's
// SetDefaults_ResourceList, which its defaulter applies to each
// ResourceList of the pod: containers', overhead, pod-level, an ephemeral
// volume's claim template, the status's), before validation: a sub-milli
// value is neither refused nor stored as given, on create, on update and in
// a status write.
func TestSubMilliQuantitiesRoundedAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	q := resource.MustParse
	wantQ := func(t *testing.T, what string, l corev1.ResourceList, name corev1.ResourceName, want string) {
		t.Helper()
		if got, ok := l[name]; !ok || got.String() != want {
			t.Errorf("%s %s = %v, want %s", what, name, l[name], want)
		}
	}

	// Create: a request above its limit before rounding is equal to it
	// after, and valid.
	p := newPod("p")
	c := &p.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: q("0.5m"), corev1.ResourceMemory: q("64Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: q("0.9m")},
	}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: q("0.1m")}
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: q("0.5m")},
				Limits:   corev1.ResourceList{corev1.ResourceStorage: q("1500u")},
			}}}}}}}
	r.Strategy.Default(p)
	r.Strategy.PrepareForCreate(ctx, p)
	wantErrors(t, r.Strategy.Validate(ctx, p))
	wantQ(t, "limits", c.Resources.Limits, corev1.ResourceCPU, "1m")
	wantQ(t, "requests", c.Resources.Requests, corev1.ResourceCPU, "1m")
	wantQ(t, "overhead", p.Spec.Overhead, corev1.ResourceCPU, "1m")
	claim := p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.Resources
	wantQ(t, "claim template requests", claim.Requests, corev1.ResourceStorage, "1m")
	wantQ(t, "claim template limits", claim.Limits, corev1.ResourceStorage, "2m")

	// Update: a body carrying the stored values unrounded is no change.
	old := p.DeepCopy()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.Containers[0].Image = "nginx:1.28"
	upd.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = q("0.2m")
	upd.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q("0.7m")
	r.Strategy.Default(upd)
	r.Strategy.PrepareForUpdate(ctx, upd, old)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, old))

	// A status write's resource lists are rounded too.
	st := old.DeepCopy()
	st.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: q("0.5m")}
	st.Status.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("0.5m")}}
	st.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: q("0.5m")},
		Resources:          &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("0.5m")}}}}
	r.Strategy.Default(st)
	wantQ(t, "status allocatedResources", st.Status.AllocatedResources, corev1.ResourceCPU, "1m")
	wantQ(t, "status resources", st.Status.Resources.Requests, corev1.ResourceCPU, "1m")
	wantQ(t, "container status allocatedResources", st.Status.ContainerStatuses[0].AllocatedResources, corev1.ResourceCPU, "1m")
	wantQ(t, "container status resources", st.Status.ContainerStatuses[0].Resources.Limits, corev1.ResourceCPU, "1m")
}
