package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestProbeAndHookValidationAsUpstream: probes and lifecycle hooks are
// checked as upstream's validateHandler, validateProbe and
// validateSleepAction: the first action set is checked and each further
// one is Forbidden on its own path; an HTTP GET's scheme and header names
// are checked in hooks as in probes; a sleep lasts from 0 to the pod's
// terminationGracePeriodSeconds (reported on the sleep); a readiness probe
// has no terminationGracePeriodSeconds; an init container that is no
// sidecar gets only the Forbidden.
func TestProbeAndHookValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const c0 = "spec.containers[0]"
	httpGet := &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}
	cases := []struct {
		name    string
		mutate  func(p *corev1.Pod)
		want    []string
		details []string
	}{
		{"two actions: the later one is Forbidden on its path", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec: &corev1.ExecAction{Command: []string{"true"}}, HTTPGet: httpGet.DeepCopy(), GRPC: &corev1.GRPCAction{Port: 0}}}
		}, []string{forbidden + " " + c0 + ".livenessProbe.httpGet", forbidden + " " + c0 + ".livenessProbe.grpc"},
			[]string{c0 + ".livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"}},
		{"a gRPC port", func(p *corev1.Pod) {
			p.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 0}}}
		}, []string{invalid + " " + c0 + ".startupProbe.grpc.port"}, nil},
		{"a readiness probe has no termination grace period", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: httpGet.DeepCopy()},
				TerminationGracePeriodSeconds: ptr(int64(10))}
		}, []string{invalid + " " + c0 + ".readinessProbe.terminationGracePeriodSeconds"},
			[]string{c0 + ".readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes"}},
		{"HTTP header names", func(p *corev1.Pod) {
			h := httpGet.DeepCopy()
			h.HTTPHeaders = []corev1.HTTPHeader{{Name: "X-Ok", Value: "v"}, {Name: "Bad Header", Value: "v"}}
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: h}}
		}, []string{invalid + " " + c0 + ".livenessProbe.httpGet.httpHeaders"}, nil},
		{"a hook's HTTP GET scheme", func(p *corev1.Pod) {
			h := httpGet.DeepCopy()
			h.Scheme = "FTP"
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{HTTPGet: h}}
		}, []string{notSupported + " " + c0 + ".lifecycle.postStart.httpGet.scheme"}, nil},
		{"a sleep longer than the grace period", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}}
		}, []string{invalid + " " + c0 + ".lifecycle.preStop.sleep"},
			[]string{c0 + ".lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"}},
		{"a negative sleep", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}}}
		}, []string{invalid + " " + c0 + ".lifecycle.preStop.sleep"},
			[]string{c0 + ".lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)"}},
		{"sleeps of 0 and of the whole grace period", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}},
				PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 30}}}
		}, nil, nil},
		{"an init container that is no sidecar: only the Forbidden", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox",
				LivenessProbe: &corev1.Probe{}, Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}}}
		}, []string{forbidden + " spec.initContainers[0].livenessProbe", forbidden + " spec.initContainers[0].lifecycle"}, nil},
		{"a sidecar's probes and hooks are checked", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
				LivenessProbe: &corev1.Probe{}, Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}}}
		}, []string{required + " spec.initContainers[0].livenessProbe", required + " spec.initContainers[0].lifecycle.preStop"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
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
