package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// resizingPod is a running pod whose containers ask spec (cpu) and whose
// node reports allocated and actual (cpu; "" for none).
func resizingPod(containers ...[3]string) *v1.Pod {
	p := &v1.Pod{}
	for i, c := range containers {
		name := string(rune('a' + i))
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: name, Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(c[0]), v1.ResourceMemory: resource.MustParse("64Mi")}}})
		s := v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
		if c[1] != "" {
			s.AllocatedResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse(c[1]), v1.ResourceMemory: resource.MustParse("64Mi")}
		}
		if c[2] != "" {
			s.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(c[2]), v1.ResourceMemory: resource.MustParse("64Mi")}}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
	}
	return p
}

// TestPodRequestsDuringResize: a pod being resized is accounted at the
// larger of what its spec asks and what its node allocated or applied,
// summed per kind (spec, allocated, actual) first, as upstream's
// calculateResource (component-helpers PodRequests with
// UseStatusResources); with the resize Infeasible, at what the node has.
func TestPodRequestsDuringResize(t *testing.T) {
	infeasible := func(p *v1.Pod) *v1.Pod {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible}}
		return p
	}
	cases := []struct {
		name    string
		pod     *v1.Pod
		wantCPU int64
	}{
		{"not resized", resizingPod([3]string{"100m", "100m", "100m"}), 100},
		{"resized up, not yet allocated", resizingPod([3]string{"300m", "100m", "100m"}), 300},
		{"resized down, not yet applied", resizingPod([3]string{"100m", "300m", "300m"}), 300},
		{"resized down, allocated, not yet applied", resizingPod([3]string{"100m", "100m", "300m"}), 300},
		{"no status resources", resizingPod([3]string{"200m", "", ""}), 200},
		{"one up, one down", resizingPod([3]string{"300m", "100m", "100m"}, [3]string{"100m", "300m", "300m"}), 400},
		{"infeasible", infeasible(resizingPod([3]string{"900m", "100m", "100m"})), 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := resourcehelper.PodRequests(tc.pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
			if want.Cpu().MilliValue() != tc.wantCPU {
				t.Fatalf("upstream says %s, the table %dm", want.Cpu(), tc.wantCPU)
			}
			r, nz := AccountedPodRequests(tc.pod)
			if r.MilliCPU != tc.wantCPU || r.Memory != want.Memory().Value() {
				t.Errorf("requests cpu %dm memory %d, want %dm %d", r.MilliCPU, r.Memory, tc.wantCPU, want.Memory().Value())
			}
			if nz.MilliCPU != tc.wantCPU || nz.Memory != want.Memory().Value() {
				t.Errorf("non-zero cpu %dm memory %d, want %dm %d", nz.MilliCPU, nz.Memory, tc.wantCPU, want.Memory().Value())
			}
			// A pod being placed is its spec (upstream's
			// computePodResourceRequest reads no status).
			spec := resourcehelper.PodRequests(tc.pod, resourcehelper.PodResourcesOptions{})
			if r, _ := PodRequests(tc.pod); r.MilliCPU != spec.Cpu().MilliValue() {
				t.Errorf("PodRequests cpu %dm, want the spec's %s", r.MilliCPU, spec.Cpu())
			}
		})
	}
}

// A pod that is not being resized costs no allocation more to account.
func TestPodRequestsNotResizingAllocs(t *testing.T) {
	p := resizingPod([3]string{"100m", "100m", "100m"}, [3]string{"200m", "200m", ""})
	if n := testing.AllocsPerRun(100, func() { AccountedPodRequests(p) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// podLevelResized is a running pod of one container (cpu 100m, memory
// 64Mi) whose node reports the pod-level status.allocatedResources and
// status.resources.requests alloc and actual (cpu, memory), as the kubelet
// does for every pod; podLevel, if set, are its pod-level requests.
func podLevelResized(podLevel, alloc, actual [2]string, overhead v1.ResourceList) *v1.Pod {
	list := func(v [2]string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(v[0]), v1.ResourceMemory: resource.MustParse(v[1])}
	}
	own := list([2]string{"100m", "64Mi"})
	p := &v1.Pod{}
	p.Spec.Containers = []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: own}}}
	if podLevel[0] != "" {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: list(podLevel)}
	}
	p.Spec.Overhead = overhead
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		AllocatedResources: own, Resources: &v1.ResourceRequirements{Requests: own}}}
	p.Status.AllocatedResources = list(alloc)
	p.Status.Resources = &v1.ResourceRequirements{Requests: list(actual)}
	return p
}

// TestPodRequestsDuringPodLevelResize: a pod on a node is accounted at the
// larger of what its spec asks and its pod-level allocated and actual
// requests, as upstream 1.37's scheduler (component-helpers PodRequests
// with UseStatusResources and InPlacePodLevelResourcesVerticalScalingEnabled):
// a pod whose pod-level requests were resized down in spec but not yet
// actuated holds its larger status values. The pod-level status lists
// include the overhead (the kubelet reports PodRequests, overhead added);
// upstream adds the overhead once more (kubernetes#139627), kubeproof not.
func TestPodRequestsDuringPodLevelResize(t *testing.T) {
	none := [2]string{}
	oh := v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	infeasible := func(p *v1.Pod) *v1.Pod {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible}}
		return p
	}
	mi := int64(1 << 20)
	cases := []struct {
		name     string
		pod      *v1.Pod
		cpu, mem int64
		// upstream: component-helpers gives the same (no overhead).
		upstream bool
	}{
		{"not resized", podLevelResized([2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, nil), 1000, 1024 * mi, true},
		{"pod level resized down, not yet allocated", podLevelResized([2]string{"500m", "512Mi"}, [2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, nil), 1000, 1024 * mi, true},
		{"pod level resized down, allocated, not yet actuated", podLevelResized([2]string{"500m", "512Mi"}, [2]string{"500m", "512Mi"}, [2]string{"1", "1Gi"}, nil), 1000, 1024 * mi, true},
		{"pod level resized up, not yet allocated", podLevelResized([2]string{"2", "2Gi"}, [2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, nil), 2000, 2048 * mi, true},
		{"container resized down, pod level status larger", podLevelResized(none, [2]string{"300m", "128Mi"}, [2]string{"300m", "128Mi"}, nil), 300, 128 * mi, true},
		{"infeasible", infeasible(podLevelResized([2]string{"4", "4Gi"}, [2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, nil)), 1000, 1024 * mi, true},
		// The overhead is in the status lists: counted once.
		{"overhead, not resized", podLevelResized([2]string{"1", "1Gi"}, [2]string{"1050m", "1040Mi"}, [2]string{"1050m", "1040Mi"}, oh), 1050, 1040 * mi, false},
		{"overhead, resized down, not yet actuated", podLevelResized([2]string{"500m", "512Mi"}, [2]string{"1050m", "1040Mi"}, [2]string{"1050m", "1040Mi"}, oh), 1050, 1040 * mi, false},
		{"overhead, resized up", podLevelResized([2]string{"2", "2Gi"}, [2]string{"1050m", "1040Mi"}, [2]string{"1050m", "1040Mi"}, oh), 2050, 2064 * mi, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.upstream {
				want := resourcehelper.PodRequests(tc.pod, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
				if want.Cpu().MilliValue() != tc.cpu || want.Memory().Value() != tc.mem {
					t.Fatalf("upstream says %s %s, the table %dm %d", want.Cpu(), want.Memory(), tc.cpu, tc.mem)
				}
			}
			r, nz := AccountedPodRequests(tc.pod)
			if r.MilliCPU != tc.cpu || r.Memory != tc.mem {
				t.Errorf("requests cpu %dm memory %d, want %dm %d", r.MilliCPU, r.Memory, tc.cpu, tc.mem)
			}
			if nz.MilliCPU != tc.cpu || nz.Memory != tc.mem {
				t.Errorf("non-zero cpu %dm memory %d, want %dm %d", nz.MilliCPU, nz.Memory, tc.cpu, tc.mem)
			}
			n := NewNodeInfo(tc.pod)
			if n.Requested.MilliCPU != tc.cpu || n.Requested.Memory != tc.mem {
				t.Errorf("node requested cpu %dm memory %d, want %dm %d", n.Requested.MilliCPU, n.Requested.Memory, tc.cpu, tc.mem)
			}
		})
	}
}

// A pod whose pod-level status gives no more than its spec costs no
// allocation more to account (every running pod reports one).
func TestPodRequestsPodLevelStatusNotResizingAllocs(t *testing.T) {
	oh := v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	for _, p := range []*v1.Pod{
		podLevelResized([2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, [2]string{"1", "1Gi"}, nil),
		podLevelResized([2]string{}, [2]string{"100m", "64Mi"}, [2]string{"100m", "64Mi"}, nil),
		podLevelResized([2]string{"1", "1Gi"}, [2]string{"1050m", "1040Mi"}, [2]string{"1050m", "1040Mi"}, oh),
	} {
		if Resizing(p) {
			t.Errorf("%+v: resizing", p.Status)
		}
		if n := testing.AllocsPerRun(100, func() { AccountedPodRequests(p); Resizing(p) }); n != 0 {
			t.Errorf("%v allocations", n)
		}
	}
}

// TestResizingPodLevelNonZero: the non-zero requests of a pod with
// pod-level requests that is being resized are upstream's calculateResource
// ones (getNonMissingContainerRequests): its requests where they name cpu
// and memory, else with the default only of what they lack given to every
// container without it.
func TestResizingPodLevelNonZero(t *testing.T) {
	rl := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	// Container a asks a and its node reports alloc allocated (a resize
	// down not yet applied), b asks nothing; no pod-level status lists (a
	// node that does not report them).
	pod := func(podLevel, a, alloc v1.ResourceList) *v1.Pod {
		p := &v1.Pod{}
		p.Spec.Resources = &v1.ResourceRequirements{Requests: podLevel}
		p.Spec.Containers = []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: a}}, {Name: "b"}}
		p.Status.ContainerStatuses = []v1.ContainerStatus{
			{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, AllocatedResources: alloc},
			{Name: "b", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		}
		return p
	}
	for name, p := range map[string]*v1.Pod{
		"pod-level cpu, a container's memory":       pod(rl("cpu", "1"), rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "300m", "memory", "64Mi")),
		"pod-level cpu, no memory":                  pod(rl("cpu", "1"), rl("cpu", "100m"), rl("cpu", "300m")),
		"pod-level memory, a container's cpu":       pod(rl("memory", "1Gi"), rl("cpu", "100m"), rl("cpu", "300m")),
		"pod-level hugepages, a container's cpu":    pod(rl("hugepages-2Mi", "4Mi"), rl("cpu", "100m"), rl("cpu", "300m")),
		"pod-level hugepages, a container's memory": pod(rl("hugepages-2Mi", "4Mi"), rl("memory", "64Mi"), rl("memory", "128Mi")),
		"pod-level cpu and memory":                  pod(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "100m"), rl("cpu", "300m")),
	} {
		t.Run(name, func(t *testing.T) {
			if !Resizing(p) {
				t.Fatal("not resizing")
			}
			opts := resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true}
			reqs := resourcehelper.PodRequests(p, opts)
			missing := v1.ResourceList{}
			for name, q := range NonZeroDefaults {
				if _, ok := reqs[name]; !ok {
					missing[name] = q
				}
			}
			want := reqs
			if len(missing) > 0 {
				opts.NonMissingContainerRequests = missing
				want = resourcehelper.PodRequests(p, opts)
			}
			_, nz := AccountedPodRequests(p)
			if nz.MilliCPU != want.Cpu().MilliValue() || nz.Memory != want.Memory().Value() {
				t.Errorf("non-zero cpu %dm memory %d, want %dm %d", nz.MilliCPU, nz.Memory, want.Cpu().MilliValue(), want.Memory().Value())
			}
		})
	}
}
