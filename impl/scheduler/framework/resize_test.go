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
