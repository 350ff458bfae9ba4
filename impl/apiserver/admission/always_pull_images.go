package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AlwaysPullImages sets imagePullPolicy Always on every container of new
// pods (and of updated pods whose images changed), and rejects pods that
// still do not pull always, so a node's cached image cannot be used by a
// pod without credentials for it. Off by default, as in kube-apiserver.
type AlwaysPullImages struct{}

func newAlwaysPullImages(*deps) (any, error) { return AlwaysPullImages{}, nil }

// Admit implements Mutator.
func (AlwaysPullImages) Admit(_ context.Context, a *Attributes) error {
	pod := podOf(a)
	if pod == nil || !pullPolicyApplies(a) {
		return nil
	}
	eachContainer(&pod.Spec, func(c *corev1.Container, _ *field.Path) {
		c.ImagePullPolicy = corev1.PullAlways
	})
	return nil
}

// Validate implements Validator.
func (AlwaysPullImages) Validate(_ context.Context, a *Attributes) error {
	pod := podOf(a)
	if pod == nil || !pullPolicyApplies(a) {
		return nil
	}
	var bad *field.Error
	eachContainer(&pod.Spec, func(c *corev1.Container, path *field.Path) {
		if bad == nil && c.ImagePullPolicy != corev1.PullAlways {
			bad = field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, []string{string(corev1.PullAlways)})
		}
	})
	if bad != nil {
		return forbidden(a, bad)
	}
	return nil
}

// pullPolicyApplies: creates, and updates that bring a new image.
func pullPolicyApplies(a *Attributes) bool {
	switch a.Operation {
	case Create:
		return true
	case Update:
		old, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return true
		}
		had := map[string]bool{}
		eachContainer(&old.Spec, func(c *corev1.Container, _ *field.Path) { had[c.Image] = true })
		newImage := false
		eachContainer(&a.Object.(*corev1.Pod).Spec, func(c *corev1.Container, _ *field.Path) {
			if !had[c.Image] {
				newImage = true
			}
		})
		return newImage
	}
	return false
}

// eachContainer calls f with every init, regular and ephemeral container
// of spec (ephemeral containers through their common fields) and its path.
func eachContainer(spec *corev1.PodSpec, f func(c *corev1.Container, path *field.Path)) {
	specPath := field.NewPath("spec")
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		f(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		c := (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		f(c, specPath.Child("ephemeralContainers").Index(i))
	}
}
