package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestGRPCProbeServiceDefaulted: a gRPC probe without a service gets
// service "" (GRPCAction.Service's +default=""), as upstream's defaulter
// does for every probe of a pod or template; a service given stays.
func TestGRPCProbeServiceDefaulted(t *testing.T) {
	grpc := func(service *string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000, Service: service}}}
	}
	p := newPod("p")
	p.Spec.Containers[0].LivenessProbe = grpc(nil)
	p.Spec.Containers[0].ReadinessProbe = grpc(ptr("health"))
	p.Spec.InitContainers = []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), StartupProbe: grpc(nil)}}
	defaultPod(p)
	for what, probe := range map[string]*corev1.Probe{
		"liveness": p.Spec.Containers[0].LivenessProbe, "sidecar startup": p.Spec.InitContainers[0].StartupProbe,
	} {
		if s := probe.GRPC.Service; s == nil || *s != "" {
			t.Errorf("%s probe's gRPC service = %v, want \"\"", what, s)
		}
	}
	if s := p.Spec.Containers[0].ReadinessProbe.GRPC.Service; s == nil || *s != "health" {
		t.Errorf("readiness probe's gRPC service = %v, want the health given", s)
	}
}
