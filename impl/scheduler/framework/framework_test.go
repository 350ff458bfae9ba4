package framework

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubeproof/kubeproof/impl/internal/randpod"
)

func TestStatus(t *testing.T) {
	var nilStatus *Status
	if !nilStatus.IsSuccess() || nilStatus.Code() != Success || nilStatus.AsError() != nil {
		t.Error("nil status must be Success")
	}
	s := NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory").WithPlugin("NodeResourcesFit")
	if !s.IsRejected() || s.Message() != "Insufficient cpu, Insufficient memory" || s.Plugin() != "NodeResourcesFit" {
		t.Errorf("status %v", s)
	}
	err := errors.New("boom")
	if e := AsStatus(err); e.Code() != Error || !errors.Is(e.AsError(), err) {
		t.Errorf("AsStatus = %v", e)
	}
}

func TestFitErrorMessage(t *testing.T) {
	fe := &FitError{NumAllNodes: 5, Diagnosis: Diagnosis{NodeToStatus: NodeToStatus{
		"a": NewStatus(Unschedulable, "Insufficient cpu"),
		"b": NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory"),
		"c": NewStatus(Unschedulable, "Insufficient cpu"),
		"d": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint {key: value}"),
		"e": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint {key: value}"),
	}, PostFilterMsg: "preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."}}
	want := "0/5 nodes are available: 1 Insufficient memory, 2 node(s) had untolerated taint {key: value}, 3 Insufficient cpu. " +
		"preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
	if fe.Error() != want {
		t.Errorf("got  %q\nwant %q", fe.Error(), want)
	}
	pre := &FitError{NumAllNodes: 2, Diagnosis: Diagnosis{PreFilterMsg: "node(s) didn't match Pod's node affinity/selector", NodeToStatus: NodeToStatus{"a": NewStatus(UnschedulableAndUnresolvable, "x")}}}
	if got := pre.Error(); got != "0/2 nodes are available: node(s) didn't match Pod's node affinity/selector." {
		t.Errorf("prefilter message %q", got)
	}
}

func TestParallelizerVisitsEveryPieceOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 5000} {
		seen := make([]atomic.Int32, n)
		NewParallelizer(4).Until(context.Background(), n, func(i int) { seen[i].Add(1) })
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("n=%d: piece %d visited %d times", n, i, seen[i].Load())
			}
		}
	}
}

func TestParallelizerStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var visited atomic.Int32
	NewParallelizer(2).Until(ctx, 10000, func(i int) {
		if visited.Add(1) == 10 {
			cancel()
		}
	})
	if v := visited.Load(); v >= 10000 {
		t.Errorf("visited all %d pieces after cancel", v)
	}
}

func req(cpu, mem string) v1.ResourceRequirements {
	r := v1.ResourceList{}
	if cpu != "" {
		r[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		r[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return v1.ResourceRequirements{Requests: r}
}

func TestPodRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		Containers: []v1.Container{{Resources: req("1", "1Gi")}, {Resources: req("500m", "")}},
		InitContainers: []v1.Container{
			{Resources: req("2", "")},                            // plain init: 2
			{Resources: req("200m", ""), RestartPolicy: &always}, // sidecar: runs along
			{Resources: req("1", "3Gi")},                         // init after the sidecar: 1 + 0.2
		},
	}}
	r, nz := PodRequests(pod)
	// containers 1.5 + sidecar 0.2 = 1.7 < init max 2 → 2 cpu; memory max(1Gi, 3Gi) = 3Gi.
	if r.MilliCPU != 2000 || r.Memory != 3<<30 {
		t.Errorf("requests cpu=%dm mem=%d", r.MilliCPU, r.Memory)
	}
	// For scoring, containers without a memory request count 200Mi: the
	// sidecar running beside the last init container adds 200Mi to its 3Gi.
	if nz.Memory != 3<<30+200<<20 || nz.MilliCPU != 2000 {
		t.Errorf("non-zero requests cpu=%dm mem=%d", nz.MilliCPU, nz.Memory)
	}
	be, beNZ := PodRequests(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{}}}})
	if be.MilliCPU != 0 || beNZ.MilliCPU != DefaultMilliCPURequest || beNZ.Memory != DefaultMemoryRequest {
		t.Errorf("best effort: %+v %+v", be, beNZ)
	}
}

func TestNodeInfoAddRemoveClone(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	ni := &NodeInfo{}
	ni.SetNode(node)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Resources: req("1", "1Gi"), Ports: []v1.ContainerPort{{HostPort: 80, ContainerPort: 80}},
	}}}}
	ni.AddPodInfo(NewPodInfo(p))
	clone := ni.Clone()
	if err := ni.RemovePod(p); err != nil {
		t.Fatal(err)
	}
	if ni.Requested.MilliCPU != 0 || len(ni.Pods) != 0 || ni.UsedPorts.CheckConflict("", "TCP", 80) {
		t.Error("remove did not undo add")
	}
	if clone.Requested.MilliCPU != 1000 || len(clone.Pods) != 1 || !clone.UsedPorts.CheckConflict("", "TCP", 80) {
		t.Error("clone changed with the original")
	}
	if err := ni.RemovePod(p); err == nil {
		t.Error("removing an absent pod succeeded")
	}
}

// TestPodRequestsPodLevel: pod-level requests (spec.resources) of cpu,
// memory and each hugepages size stand in for the containers' aggregate,
// as upstream's PodRequests; the overhead is added to them. The non-zero
// form (what a NodeInfo adds up for scoring) fills in 100m and 200Mi only
// for a resource that neither the pod level nor any container names, as
// upstream's calculateResource, and the pod-level values win there too.
func TestPodRequestsPodLevel(t *testing.T) {
	hp := func(q string) v1.ResourceList { return v1.ResourceList{"hugepages-2Mi": resource.MustParse(q)} }
	first := req("500m", "1Gi")
	first.Requests["hugepages-2Mi"] = resource.MustParse("2Mi")
	pod := &v1.Pod{Spec: v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), "hugepages-2Mi": resource.MustParse("8Mi")}},
		Containers: []v1.Container{{Resources: first}, {Resources: req("700m", "")}},
		Overhead:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
	}}
	r, nz := PodRequests(pod)
	if r.MilliCPU != 2100 || r.Memory != 1<<30 || r.ScalarResources["hugepages-2Mi"] != 8<<20 {
		t.Errorf("requests cpu=%dm mem=%d hugepages-2Mi=%d, want 2100m, 1Gi, 8Mi", r.MilliCPU, r.Memory, r.ScalarResources["hugepages-2Mi"])
	}
	// Memory is named (by the first container), so the second adds no 200Mi.
	if nz.MilliCPU != 2100 || nz.Memory != 1<<30 {
		t.Errorf("non-zero cpu=%dm mem=%d, want 2100m, 1Gi", nz.MilliCPU, nz.Memory)
	}

	only := &v1.Pod{Spec: v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: hp("4Mi")},
		Containers: []v1.Container{{}, {Resources: v1.ResourceRequirements{Requests: hp("2Mi")}}},
	}}
	r, nz = PodRequests(only)
	if r.ScalarResources["hugepages-2Mi"] != 4<<20 || r.MilliCPU != 0 || r.Memory != 0 {
		t.Errorf("pod-level hugepages only: requests %+v, want hugepages-2Mi 4Mi alone", r)
	}
	if nz.MilliCPU != 2*DefaultMilliCPURequest || nz.Memory != 2*DefaultMemoryRequest {
		t.Errorf("pod-level hugepages only: non-zero cpu=%dm mem=%d, want the defaults of both containers", nz.MilliCPU, nz.Memory)
	}
}

// TestPodRequestsOracle: PodRequests agrees with upstream's computation
// done by component-helpers itself — the requests as
// resourcehelper.PodRequests, the non-zero cpu and memory as
// kube-scheduler's calculateResource (PodRequests again with the defaults
// as NonMissingContainerRequests: both without pod-level requests, with
// them only for cpu or memory its result lacks) — over random pods of
// containers, sidecars and init containers naming random subsets of cpu,
// memory, ephemeral-storage, hugepages and an extended resource (zeros
// included), with and without pod-level requests and overhead.
func TestPodRequestsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	for i := range 3000 {
		pod := randpod.Requests(rng, 2)

		want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		defaults := NonZeroDefaults
		if resourcehelper.IsPodLevelRequestsSet(pod) {
			defaults = v1.ResourceList{}
			for n, q := range NonZeroDefaults {
				if _, ok := want[n]; !ok {
					defaults[n] = q
				}
			}
		}
		wantNZ := want
		if len(defaults) > 0 {
			wantNZ = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: defaults})
		}

		r, nz := PodRequests(pod)
		got := v1.ResourceList{}
		if r.MilliCPU != 0 {
			got[v1.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
		}
		for n, v := range map[v1.ResourceName]int64{v1.ResourceMemory: r.Memory, v1.ResourceEphemeralStorage: r.EphemeralStorage} {
			if v != 0 {
				got[n] = *resource.NewQuantity(v, resource.BinarySI)
			}
		}
		for n, v := range r.ScalarResources {
			if v != 0 {
				got[n] = *resource.NewQuantity(v, resource.BinarySI)
			}
		}
		for n, q := range want {
			if q.IsZero() {
				delete(want, n)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("pod %d %+v: requests %v, upstream %v", i, pod.Spec, got, want)
		}
		for n, q := range want {
			if g := got[n]; g.Cmp(q) != 0 {
				t.Fatalf("pod %d %+v: requests %v, upstream %v", i, pod.Spec, got, want)
			}
		}
		if nz.MilliCPU != wantNZ.Cpu().MilliValue() || nz.Memory != wantNZ.Memory().Value() {
			t.Fatalf("pod %d %+v: non-zero cpu=%dm mem=%d, upstream %v", i, pod.Spec, nz.MilliCPU, nz.Memory, wantNZ)
		}
	}
}
