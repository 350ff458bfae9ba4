package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestResizePolicyValidationAsUpstream: containers' resizePolicy is checked
// as upstream's validateResizePolicy, and a non-sidecar init container may
// not restart on resize.
func TestResizePolicyValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const rp = "spec.containers[0].resizePolicy"
	initContainer := func(restart *corev1.ContainerRestartPolicy, policy corev1.ResourceResizeRestartPolicy) []corev1.Container {
		return []corev1.Container{{Name: "init", Image: "busybox", RestartPolicy: restart,
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: policy}}}}
	}
	cases := []struct {
		name    string
		mutate  func(s *corev1.PodSpec)
		want    []string
		details []string
	}{
		{"valid", func(s *corev1.PodSpec) {
			s.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}, {ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, nil, nil},
		{"duplicate and unknown", func(s *corev1.PodSpec) {
			s.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}, {ResourceName: corev1.ResourceCPU, RestartPolicy: "Sometimes"}, {ResourceName: "storage", RestartPolicy: corev1.NotRequired}}
		}, []string{duplicate + " " + rp + "[1]", notSupported + " " + rp, notSupported + " " + rp},
			[]string{rp + `: Unsupported value: "storage": supported values: "cpu", "memory"`}},
		{"empty", func(s *corev1.PodSpec) {
			s.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{}}
		}, []string{required + " " + rp, required + " " + rp}, nil},
		{"restart in a pod that never restarts", func(s *corev1.PodSpec) {
			s.RestartPolicy = corev1.RestartPolicyNever
			s.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, []string{invalid + " " + rp}, []string{rp + `: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy` is 'Never'"}},
		{"non-sidecar init container restarting", func(s *corev1.PodSpec) {
			s.InitContainers = initContainer(nil, corev1.RestartContainer)
		}, []string{invalid + " spec.initContainers[0].resizePolicy[0].restartPolicy"},
			[]string{`spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers`}},
		{"non-sidecar init container not restarting", func(s *corev1.PodSpec) {
			s.InitContainers = initContainer(nil, corev1.NotRequired)
		}, nil, nil},
		{"sidecar restarting", func(s *corev1.PodSpec) {
			s.InitContainers = initContainer(ptr(corev1.ContainerRestartPolicyAlways), corev1.RestartContainer)
		}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(&p.Spec)
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}
