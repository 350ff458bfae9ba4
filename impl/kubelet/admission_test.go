package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodRequests(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}},
		Containers: []v1.Container{
			{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Gi")}}},
			{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("700m")}}},
		},
		Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
	}}
	if got := podRequests(p, v1.ResourceCPU); got != 2100 { // max(1200, 2000) + 100
		t.Errorf("cpu = %d", got)
	}
	if got := podRequests(p, v1.ResourceMemory); got != 1<<30 {
		t.Errorf("memory = %d", got)
	}
}

func TestAdmit(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("2")}
	req := func(cpu, mem string) *v1.Pod {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: l}}}}}
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		reason   string
		message  string
	}{
		{"fits", req("1", "1Gi"), []*v1.Pod{req("3", "7Gi")}, "", ""},
		{"cpu", req("1500m", ""), []*v1.Pod{req("3", "")}, "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, requested: 1500, used: 3000, capacity: 4000"},
		{"memory", req("", "2Gi"), []*v1.Pod{req("", "7Gi")}, "OutOfmemory", "Pod was rejected: Node didn't have enough resource: memory, requested: 2147483648, used: 7516192768, capacity: 8589934592"},
		{"pods first", req("5", ""), []*v1.Pod{req("", ""), req("", "")}, "OutOfpods", "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
		{"best effort always fits resources", req("", ""), []*v1.Pod{req("4", "8Gi")}, "", ""},
	} {
		ok, reason, message := Admit(alloc, tc.pod, tc.admitted)
		if ok != (tc.reason == "") || reason != tc.reason || message != tc.message {
			t.Errorf("%s: %v %q %q", tc.name, ok, reason, message)
		}
	}
}
