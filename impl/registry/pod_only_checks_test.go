package registry

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestPodOnlyContainerChecksAsUpstream: the checks upstream makes of pods
// and, differently or not at all, of workload templates:
// validatePodHostNetworkDeps (in the host network an app container's
// hostPort must match its containerPort, reported on hostPort; a template
// may leave it 0) and validateContainerOnlyForPod (no whitespace around a
// pod's images; a template's are not checked).
func TestPodOnlyContainerChecksAsUpstream(t *testing.T) {
	pods, deployments := find(t, coreV1, "pods"), find(t, appsV1, "deployments")
	validatePodWith := func(mutate func(*corev1.PodSpec)) field.ErrorList {
		p := newPod("p")
		mutate(&p.Spec)
		defaultPod(p)
		return pods.Strategy.Validate(context.Background(), p)
	}
	validateTemplateWith := func(mutate func(*corev1.PodSpec)) field.ErrorList {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: newPod("p").Spec}}}
		mutate(&d.Spec.Template.Spec)
		deployments.Strategy.Default(d)
		return deployments.Strategy.Validate(context.Background(), d)
	}
	hostNet := func(hostPort int32) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.HostNetwork = true
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: hostPort}}
		}
	}

	errs := validatePodWith(hostNet(8080))
	wantErrors(t, errs, invalid+" spec.containers[0].ports[0].hostPort")
	wantError(t, errs, "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true")
	wantErrors(t, validatePodWith(hostNet(0))) // defaulted to 80
	wantErrors(t, validateTemplateWith(hostNet(0)))
	wantErrors(t, validateTemplateWith(hostNet(8080)), invalid+" spec.template.spec.containers[0].ports[0].hostPort")

	spaced := func(s *corev1.PodSpec) {
		s.Containers[0].Image = " nginx:1.27"
		s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox "}}
	}
	errs = validatePodWith(spaced)
	wantErrors(t, errs, invalid+" spec.containers[0].image", invalid+" spec.initContainers[0].image")
	wantError(t, errs, `spec.containers[0].image: Invalid value: " nginx:1.27": must not have leading or trailing whitespace`)
	wantErrors(t, validateTemplateWith(spaced))

	// An ephemeral container's image is checked as a pod's.
	p := newPod("p")
	defaultPod(p)
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox ", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
	wantErrors(t, validatePod(p, podValidationOptions{}), invalid+" spec.ephemeralContainers[0].image")
}
