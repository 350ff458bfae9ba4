package kubelet

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubeproof/kubeproof/impl/internal/randpod"
	"github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// podRequests is the pod's effective request of one resource as Admit
// reads it: the scheduler's framework.PodRequests (upstream's kubelet
// admission and scheduler share PodRequests: the larger of the sum over
// app containers and sidecars and the peak while init containers run;
// pod-level requests of cpu, memory or a hugepages size in its place; plus
// overhead). CPU in millicores, anything else in units.
func podRequests(pod *v1.Pod, name v1.ResourceName) int64 {
	r, _ := framework.PodRequests(pod)
	return requestOf(&r, name)
}

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
		{"cpu", req("1500m", ""), []*v1.Pod{req("3", "")}, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1500, used: 3000, capacity: 4000"},
		{"memory", req("", "2Gi"), []*v1.Pod{req("", "7Gi")}, "OutOfmemory", "Node didn't have enough resource: memory, requested: 2147483648, used: 7516192768, capacity: 8589934592"},
		{"pods first", req("5", ""), []*v1.Pod{req("", ""), req("", "")}, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
		{"best effort always fits resources", req("", ""), []*v1.Pod{req("4", "8Gi")}, "", ""},
	} {
		ok, reason, message := Admit(alloc, tc.pod, tc.admitted)
		if ok != (tc.reason == "") || reason != tc.reason || message != tc.message {
			t.Errorf("%s: %v %q %q", tc.name, ok, reason, message)
		}
	}
}

// TestPodRequestsPodLevel: a pod-level request (spec.resources) of cpu,
// memory or a hugepages size stands in for the containers' aggregate, as
// upstream's PodRequests with PodLevelResources on; the overhead is added
// to it; a resource the pod level does not name keeps the aggregate.
func TestPodRequestsPodLevel(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{
		Resources: &v1.ResourceRequirements{Requests: resList("cpu", "2", "hugepages-2Mi", "8Mi")},
		Containers: []v1.Container{
			withResources(resList("cpu", "500m", "memory", "1Gi", "hugepages-2Mi", "2Mi"), nil),
			withResources(resList("cpu", "700m"), nil),
		},
		Overhead: resList("cpu", "100m"),
	}}
	for name, want := range map[v1.ResourceName]int64{v1.ResourceCPU: 2100, v1.ResourceMemory: 1 << 30, "hugepages-2Mi": 8 << 20} {
		if got := podRequests(p, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// TestAdmitScalarResources: hugepages and extended resources are admitted
// as cpu and memory are, by upstream's noderesources fit (reason
// OutOf<resource>); a hugepages size the node lacks has capacity 0, an
// extended resource the node lacks is not checked; pod-level hugepages
// requests count; scalars are checked after cpu, memory and
// ephemeral-storage, by name.
func TestAdmitScalarResources(t *testing.T) {
	alloc := resList("cpu", "4", "memory", "8Gi", "pods", "10", "hugepages-2Mi", "8Mi", "example.com/gpu", "2")
	pod := func(req v1.ResourceList) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{withResources(req, req)}}}
	}
	podLevel := &v1.Pod{Spec: v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: resList("hugepages-2Mi", "6Mi"), Limits: resList("hugepages-2Mi", "6Mi")},
		Containers: []v1.Container{{Name: "c"}},
	}}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		reason   string
		message  string
	}{
		{"hugepages fit", pod(resList("hugepages-2Mi", "4Mi")), []*v1.Pod{pod(resList("hugepages-2Mi", "4Mi"))}, "", ""},
		{"hugepages", pod(resList("hugepages-2Mi", "6Mi")), []*v1.Pod{pod(resList("hugepages-2Mi", "4Mi"))}, "OutOfhugepages-2Mi",
			"Node didn't have enough resource: hugepages-2Mi, requested: 6291456, used: 4194304, capacity: 8388608"},
		{"a size the node lacks", pod(resList("hugepages-1Gi", "1Gi")), nil, "OutOfhugepages-1Gi",
			"Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
		{"pod-level hugepages", podLevel, []*v1.Pod{pod(resList("hugepages-2Mi", "4Mi"))}, "OutOfhugepages-2Mi",
			"Node didn't have enough resource: hugepages-2Mi, requested: 6291456, used: 4194304, capacity: 8388608"},
		{"extended resource", pod(resList("example.com/gpu", "2")), []*v1.Pod{pod(resList("example.com/gpu", "1"))}, "OutOfexample.com/gpu",
			"Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2"},
		{"an extended resource the node lacks is not checked", pod(resList("example.com/fpga", "1")), nil, "", ""},
		{"scalars by name", pod(resList("hugepages-2Mi", "10Mi", "example.com/gpu", "3")), nil, "OutOfexample.com/gpu",
			"Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2"},
		{"memory before scalars", pod(resList("memory", "9Gi", "hugepages-2Mi", "10Mi")), nil, "OutOfmemory",
			"Node didn't have enough resource: memory, requested: 9663676416, used: 0, capacity: 8589934592"},
		{"a zero request fits", pod(resList("hugepages-1Gi", "0")), nil, "", ""},
	} {
		ok, reason, message := Admit(alloc, tc.pod, tc.admitted)
		if ok != (tc.reason == "") || reason != tc.reason || message != tc.message {
			t.Errorf("%s: %v %q %q", tc.name, ok, reason, message)
		}
	}
}

// TestPodRequestsOracle: podRequests agrees with upstream's PodRequests
// (k8s.io/component-helpers, what kube-scheduler and the kubelet's
// admission call) on random pods: app, regular and sidecar init
// containers, pod-level requests, overhead, zero quantities, hugepages
// and extended resources.
func TestPodRequestsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 27))
	for i := range 3000 {
		pod := randpod.Requests(rng, 3)
		want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		for _, n := range randpod.Names {
			q := want[n]
			w := q.Value()
			if n == v1.ResourceCPU {
				w = q.MilliValue()
			}
			if got := podRequests(pod, n); got != w {
				t.Fatalf("pod %d: podRequests(%s) = %d, upstream's PodRequests %d\n%+v", i, n, got, w, pod.Spec)
			}
		}
	}
}
