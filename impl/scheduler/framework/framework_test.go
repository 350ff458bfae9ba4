package framework

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
