package podsync

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestContainersAmount(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	req := func(cpu string) v1.ResourceRequirements {
		return v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Ki")},
		}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: req("100m")},
			{Name: "init", Resources: req("900m")}, // runs beside the sidecar: 1000m
			{Name: "late-sidecar", RestartPolicy: &always, Resources: req("50m")},
		},
		Containers: []v1.Container{{Name: "a", Resources: req("200m")}, {Name: "b", Resources: req("300m")}},
	}}
	for _, tc := range []struct {
		name          string
		res           v1.ResourceName
		limits, milli bool
		want          int64
		named         bool
	}{
		// max(200+300 + 100+50, 100+900) millicores.
		{"cpu requests, the init peak", v1.ResourceCPU, false, true, 1000, true},
		// Each container's rounded up to a core: max(1+1 + 1+1, 1+1).
		{"cpu requests in units", v1.ResourceCPU, false, false, 4, true},
		// Sidecars and app containers add up, 4 Ki, above the init peak (2 Ki).
		{"memory limits", v1.ResourceMemory, true, false, 4 << 10, true},
		{"memory requests named by none", v1.ResourceMemory, false, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, named := ContainersAmount(pod, tc.res, tc.limits, tc.milli)
			if got != tc.want || named != tc.named {
				t.Errorf("ContainersAmount = %d, %v; want %d, %v", got, named, tc.want, tc.named)
			}
		})
	}
}
