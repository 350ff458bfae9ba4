package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestPodChecksAllocateOnlyForErrors: the per-container and per-field pod
// checks that run on every create make no allocation for a valid,
// ordinary pod (a sidecar, two app containers, a pod security context,
// a kube-api-access volume, an annotation): the container paths and field
// paths are built only when an error names them (containerPath). Before,
// each visit built every container's path (two allocations a container).
func TestPodChecksAllocateOnlyForErrors(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	uid := int64(1000)
	c := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.k8s.io/pause:3.10",
			SecurityContext: &corev1.SecurityContext{RunAsUser: &uid},
			Env:             []corev1.EnvVar{{Name: "A", Value: "b"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m")}}}
	}
	init := c("proxy")
	init.RestartPolicy = &always
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"team": "a"}},
		Spec: corev1.PodSpec{
			InitContainers:  []corev1.Container{init},
			Containers:      []corev1.Container{c("app"), c("log")},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, FSGroup: &uid},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
		},
	}
	spec := field.NewPath("spec")
	scPath := spec.Child("securityContext")
	opts := podValidationOptions{}
	for _, tc := range []struct {
		name  string
		check func() field.ErrorList
	}{
		{"validateImageWhitespace", func() field.ErrorList { return validateImageWhitespace(&p.Spec, spec, true) }},
		{"validateResizePolicies", func() field.ErrorList { return validateResizePolicies(&p.Spec, spec, opts) }},
		{"validateFileKeyRefVolumes", func() field.ErrorList { return validateFileKeyRefVolumes(&p.Spec, spec) }},
		{"validateProcMountUserNamespace", func() field.ErrorList { return validateProcMountUserNamespace(&p.Spec, spec) }},
		{"validatePodSecurityContext", func() field.ErrorList { return validatePodSecurityContext(&p.Spec, scPath, opts) }},
		{"validatePodAnnotations", func() field.ErrorList { return validatePodAnnotations(p, false) }},
	} {
		if errs := tc.check(); len(errs) != 0 {
			t.Fatalf("%s: %v", tc.name, errs)
		}
		if n := testing.AllocsPerRun(20, func() { _ = tc.check() }); n != 0 {
			t.Errorf("%s: %v allocations for a valid pod, want 0", tc.name, n)
		}
	}
}
