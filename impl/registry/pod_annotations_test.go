package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodAnnotationValidationAsUpstream: a pod's own annotations are
// checked as upstream's ValidatePodSpecificAnnotations and, on create,
// ValidatePodCreate's gated nodeName and annotation/field agreement.
func TestPodAnnotationValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const md = "metadata.annotations"
	cases := []struct {
		name    string
		mutate  func(p *corev1.Pod)
		want    []string
		details []string
	}{
		{"mirror pod without node", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"} },
			[]string{invalid + " " + md + "[kubernetes.io/config.mirror]"},
			[]string{md + `[kubernetes.io/config.mirror]: Invalid value: "h": must set spec.nodeName if mirror pod annotation is set`}},
		{"deletion cost", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: "+10"} },
			[]string{invalid + " " + md + "[controller.kubernetes.io/pod-deletion-cost]"},
			[]string{md + `[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "+10": must be a 32bit integer`}},
		{"valid deletion cost", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: "-5"} }, nil, nil},
		{"seccomp annotations", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.SeccompPodAnnotationKey: "runtime/default", corev1.SeccompContainerAnnotationKeyPrefix + "web": "strict"}
		}, []string{invalid + " " + md + ".container.seccomp.security.alpha.kubernetes.io/web"},
			[]string{md + `.container.seccomp.security.alpha.kubernetes.io/web: Invalid value: "strict": must be a valid seccomp profile`}},
		{"AppArmor annotations", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "nobody": "runtime/default",
				corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "web": "strict"}
		}, []string{invalid + " " + md + "[container.apparmor.security.beta.kubernetes.io/nobody]", invalid + " " + md + "[container.apparmor.security.beta.kubernetes.io/web]"},
			[]string{md + `[container.apparmor.security.beta.kubernetes.io/web]: Invalid value: "strict": invalid AppArmor profile name: "strict"`}},
		{"gated pod with a node", func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		}, []string{forbidden + " spec.nodeName"}, []string{"spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"}},
		{"seccomp annotation and field disagree", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.SeccompContainerAnnotationKeyPrefix + "web": "unconfined"}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		}, []string{forbidden + " spec.containers[0].securityContext.seccompProfile.type"}, nil},
		{"AppArmor annotation and pod field disagree", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "web": "localhost/a"}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("b")}}
		}, []string{forbidden + " spec.containers[0].securityContext.appArmorProfile.localhostProfile"},
			[]string{"spec.containers[0].securityContext.appArmorProfile.localhostProfile: Forbidden: apparmor profile in annotation and field must match"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			p.Spec.Containers[0].Name = "web"
			tc.mutate(p)
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}

// TestPodAnnotationUpdatesAsUpstream: AppArmor and mirror annotations may
// not be added, changed or removed by an update; a stored invalid deletion
// cost may stay.
func TestPodAnnotationUpdatesAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := newPod("p")
	old.Spec.Containers[0].Name = "web"
	old.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "web": "runtime/default"}
	old = defaultedPod(t, old)
	old.Annotations[corev1.PodDeletionCost] = "007" // stored before the check

	p := old.DeepCopy()
	p.Labels = map[string]string{"a": "b"}
	r.Strategy.PrepareForUpdate(ctx, p, old)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, p, old))

	p = old.DeepCopy()
	p.Annotations = map[string]string{corev1.PodDeletionCost: "007", corev1.MirrorPodAnnotationKey: "x"}
	p.Spec.NodeName = old.Spec.NodeName
	r.Strategy.PrepareForUpdate(ctx, p, old)
	errs := r.Strategy.ValidateUpdate(ctx, p, old)
	wantError(t, errs, "metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: Forbidden: may not remove or update AppArmor annotations")
	wantError(t, errs, "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation")
}
