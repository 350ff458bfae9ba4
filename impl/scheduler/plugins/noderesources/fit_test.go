package noderesources

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func newFit(t *testing.T, args string) *Fit {
	t.Helper()
	p, err := NewFit(json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("NewFit: %v", err)
	}
	return p.(*Fit)
}

func TestFitFilter(t *testing.T) {
	node := tu.Node("n").Capacity("cpu", "4", "memory", "8Gi", "pods", "3", "example.com/gpu", "2").Obj()
	existing := []*v1.Pod{tu.Pod("e1").Req("cpu", "2", "memory", "4Gi").Obj(), tu.Pod("e2").Req("example.com/gpu", "1").Obj()}
	tests := []struct {
		name    string
		pod     *v1.Pod
		code    fw.Code
		reasons []string
	}{
		{"fits", tu.Pod("p").Req("cpu", "2", "memory", "4Gi").Obj(), fw.Success, nil},
		{"best effort fits", tu.Pod("p").Obj(), fw.Success, nil},
		{"insufficient cpu", tu.Pod("p").Req("cpu", "2500m").Obj(), fw.Unschedulable, []string{"Insufficient cpu"}},
		{"insufficient cpu and memory", tu.Pod("p").Req("cpu", "3", "memory", "5Gi").Obj(), fw.Unschedulable, []string{"Insufficient cpu", "Insufficient memory"}},
		{"insufficient extended resource", tu.Pod("p").Req("example.com/gpu", "2").Obj(), fw.Unschedulable, []string{"Insufficient example.com/gpu"}},
		{"extended resource the node lacks entirely", tu.Pod("p").Req("example.com/fpga", "1").Obj(), fw.UnschedulableAndUnresolvable, []string{"Insufficient example.com/fpga"}},
		{"more than the node has at all", tu.Pod("p").Req("cpu", "5").Obj(), fw.UnschedulableAndUnresolvable, []string{"Insufficient cpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newFit(t, "")
			state := fw.NewCycleState()
			pl.PreFilter(context.Background(), state, tt.pod)
			got := pl.Filter(context.Background(), state, tt.pod, tu.NodeInfo(node, existing...))
			if got.Code() != tt.code || !reflect.DeepEqual(got.Reasons(), tt.reasons) {
				t.Errorf("Filter = %v %q, want %v %q", got.Code(), got.Reasons(), tt.code, tt.reasons)
			}
		})
	}
}

func TestFitFilterTooManyPods(t *testing.T) {
	node := tu.Node("n").Capacity("cpu", "4", "memory", "8Gi", "pods", "2").Obj()
	pl := newFit(t, "")
	pod := tu.Pod("p").Obj()
	state := fw.NewCycleState()
	pl.PreFilter(context.Background(), state, pod)
	got := pl.Filter(context.Background(), state, pod, tu.NodeInfo(node, tu.Pod("a").Obj(), tu.Pod("b").Obj()))
	if got.Code() != fw.Unschedulable || got.Message() != "Too many pods" {
		t.Errorf("Filter = %v, want Unschedulable: Too many pods", got)
	}
}

func TestFitFilterIgnoredResources(t *testing.T) {
	node := tu.Node("n").Capacity("cpu", "4", "memory", "8Gi").Obj()
	pl := newFit(t, `{"ignoredResources":["example.com/foo"],"ignoredResourceGroups":["bar.io"]}`)
	pod := tu.Pod("p").Req("example.com/foo", "1", "bar.io/baz", "1").Obj()
	state := fw.NewCycleState()
	pl.PreFilter(context.Background(), state, pod)
	if got := pl.Filter(context.Background(), state, pod, tu.NodeInfo(node)); !got.IsSuccess() {
		t.Errorf("ignored resources must not filter: %v", got)
	}
}

func TestInitContainersAndOverhead(t *testing.T) {
	pod := tu.Pod("p").Req("cpu", "1").Obj()
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": resource.MustParse("3")}}}}
	pod.Spec.Overhead = v1.ResourceList{"cpu": resource.MustParse("250m")}
	r, _ := fw.PodRequests(pod)
	if r.MilliCPU != 3250 {
		t.Errorf("requests = %dm, want max(1, 3) + 0.25 = 3250m", r.MilliCPU)
	}
}

func scoreAll(t *testing.T, pl fw.ScorePlugin, pod *v1.Pod, infos []*fw.NodeInfo, pre func(*fw.CycleState)) []int64 {
	t.Helper()
	state := fw.NewCycleState()
	pre(state)
	var out []int64
	for _, ni := range infos {
		s, st := pl.Score(context.Background(), state, pod, ni)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		out = append(out, s)
	}
	return out
}

func TestScoringStrategies(t *testing.T) {
	node := func(name string) *v1.Node { return tu.Node(name).Capacity("cpu", "4", "memory", "10Gi").Obj() }
	infos := []*fw.NodeInfo{
		tu.NodeInfo(node("empty")),
		tu.NodeInfo(node("half"), tu.Pod("e").Req("cpu", "2", "memory", "5Gi").Obj()),
	}
	pod := tu.Pod("p").Req("cpu", "1", "memory", "2560Mi").Obj() // 25% of each
	least := newFit(t, "")
	got := scoreAll(t, least, pod, infos, func(s *fw.CycleState) { least.PreFilter(context.Background(), s, pod) })
	if want := []int64{75, 25}; !reflect.DeepEqual(got, want) {
		t.Errorf("LeastAllocated = %v, want %v", got, want)
	}
	most := newFit(t, `{"scoringStrategy":{"type":"MostAllocated"}}`)
	got = scoreAll(t, most, pod, infos, func(s *fw.CycleState) { most.PreFilter(context.Background(), s, pod) })
	if want := []int64{25, 75}; !reflect.DeepEqual(got, want) {
		t.Errorf("MostAllocated = %v, want %v", got, want)
	}
	if _, err := NewFit(json.RawMessage(`{"scoringStrategy":{"type":"Bogus"}}`), nil); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func TestBalancedAllocation(t *testing.T) {
	infos := []*fw.NodeInfo{
		tu.NodeInfo(tu.Node("balanced").Capacity("cpu", "4", "memory", "4Gi").Obj()),
		tu.NodeInfo(tu.Node("skewed").Capacity("cpu", "4", "memory", "4Gi").Obj(), tu.Pod("e").Req("cpu", "3", "memory", "0").Obj()),
	}
	pod := tu.Pod("p").Req("cpu", "1", "memory", "1Gi").Obj()
	p, _ := NewBalancedAllocation(nil, nil)
	pl := p.(*BalancedAllocation)
	got := scoreAll(t, pl, pod, infos, func(s *fw.CycleState) { pl.PreScore(context.Background(), s, pod, infos) })
	// balanced: cpu 25%, mem 25% → 100; skewed: cpu 100%, mem 25% → 1 - 0.375.
	if want := []int64{100, 62}; !reflect.DeepEqual(got, want) {
		t.Errorf("BalancedAllocation = %v, want %v", got, want)
	}
	if s := pl.PreScore(context.Background(), fw.NewCycleState(), tu.Pod("be").Obj(), infos); !s.IsSkip() {
		t.Errorf("best-effort pod: PreScore = %v, want Skip", s)
	}
}

// withPodLevel gives pod pod-level requests (spec.resources.requests) of
// kv, name/quantity pairs.
func withPodLevel(pod *v1.Pod, kv ...string) *v1.Pod {
	rl := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	pod.Spec.Resources = &v1.ResourceRequirements{Requests: rl}
	return pod
}

// TestFitFilterPodLevelHugePages: pod-level hugepages requests count, for
// the pod being scheduled and for the pods on the node, in place of the
// containers' (which ask less or nothing), as upstream's PodRequests; the
// reason is upstream's "Insufficient hugepages-2Mi".
func TestFitFilterPodLevelHugePages(t *testing.T) {
	node := tu.Node("n").Capacity("cpu", "4", "memory", "8Gi", "pods", "10", "hugepages-2Mi", "8Mi").Obj()
	existing := withPodLevel(tu.Pod("e").Obj(), "hugepages-2Mi", "6Mi")
	tests := []struct {
		name    string
		pod     *v1.Pod
		code    fw.Code
		reasons []string
	}{
		{"fits beside the existing pod-level request", withPodLevel(tu.Pod("p").Obj(), "hugepages-2Mi", "2Mi"), fw.Success, nil},
		{"pod-level request over the container's", withPodLevel(tu.Pod("p").Req("hugepages-2Mi", "2Mi").Obj(), "hugepages-2Mi", "4Mi"),
			fw.Unschedulable, []string{"Insufficient hugepages-2Mi"}},
		{"more than the node has", withPodLevel(tu.Pod("p").Obj(), "hugepages-2Mi", "10Mi"),
			fw.UnschedulableAndUnresolvable, []string{"Insufficient hugepages-2Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newFit(t, "")
			state := fw.NewCycleState()
			pl.PreFilter(context.Background(), state, tt.pod)
			got := pl.Filter(context.Background(), state, tt.pod, tu.NodeInfo(node, existing))
			if got.Code() != tt.code || !reflect.DeepEqual(got.Reasons(), tt.reasons) {
				t.Errorf("Filter = %v %q, want %v %q", got.Code(), got.Reasons(), tt.code, tt.reasons)
			}
		})
	}
}

// TestFitFilterIgnoresOnlyExtendedResources: ignoredResources and
// ignoredResourceGroups apply to extended resources only, as upstream's
// fitsRequest; hugepages are checked whatever the arguments say.
func TestFitFilterIgnoresOnlyExtendedResources(t *testing.T) {
	node := tu.Node("n").Capacity("cpu", "4", "memory", "8Gi", "pods", "10").Obj()
	pl := newFit(t, `{"ignoredResources":["hugepages-2Mi","example.com/gpu"]}`)
	pod := tu.Pod("p").Req("hugepages-2Mi", "2Mi", "example.com/gpu", "1").Obj()
	state := fw.NewCycleState()
	pl.PreFilter(context.Background(), state, pod)
	got := pl.Filter(context.Background(), state, pod, tu.NodeInfo(node))
	if want := []string{"Insufficient hugepages-2Mi"}; got.Code() != fw.UnschedulableAndUnresolvable || !reflect.DeepEqual(got.Reasons(), want) {
		t.Errorf("Filter = %v %q, want UnschedulableAndUnresolvable %q", got.Code(), got.Reasons(), want)
	}
}

// TestFitScorePodLevel: the strategies score a pod's pod-level requests:
// hugepages (scored when the strategy names them), and cpu and memory as
// upstream's resourceAllocationScorer counts the pod being scheduled —
// pod-level cpu in place of the containers', and memory with 200Mi for the
// container that names none even though another names some (a NodeInfo's
// non-zero form would leave it out).
func TestFitScorePodLevel(t *testing.T) {
	hp := tu.Node("n").Capacity("cpu", "4", "memory", "4Gi", "hugepages-2Mi", "8Mi").Obj()
	pod := withPodLevel(tu.Pod("p").Obj(), "hugepages-2Mi", "4Mi")
	most := newFit(t, `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"hugepages-2Mi","weight":1}]}}`)
	got := scoreAll(t, most, pod, []*fw.NodeInfo{tu.NodeInfo(hp)}, func(s *fw.CycleState) { most.PreFilter(context.Background(), s, pod) })
	if want := []int64{50}; !reflect.DeepEqual(got, want) {
		t.Errorf("MostAllocated on hugepages-2Mi = %v, want %v", got, want)
	}

	mixed := withPodLevel(tu.Pod("m").Req("memory", "1Gi").Obj(), "cpu", "1")
	mixed.Spec.Containers = append(mixed.Spec.Containers, v1.Container{Name: "second"})
	least := newFit(t, "")
	got = scoreAll(t, least, mixed, []*fw.NodeInfo{tu.NodeInfo(hp)}, func(s *fw.CycleState) { least.PreFilter(context.Background(), s, mixed) })
	// cpu 1000m of 4000m → 75; memory 1Gi+200Mi of 4Gi → 70; (75+70)/2.
	if want := []int64{72}; !reflect.DeepEqual(got, want) {
		t.Errorf("LeastAllocated = %v, want %v", got, want)
	}
}

// TestBalancedAllocationUsesRequests: BalancedAllocation scores the
// requests as they are, the node's (Requested, not NonZeroRequested) and
// the pod's, as upstream (useRequested): a best-effort pod on the node
// does not count 100m and 200Mi.
func TestBalancedAllocationUsesRequests(t *testing.T) {
	infos := []*fw.NodeInfo{tu.NodeInfo(tu.Node("n").Capacity("cpu", "4", "memory", "4Gi").Obj(), tu.Pod("be").Obj())}
	pod := tu.Pod("p").Req("cpu", "1", "memory", "1Gi").Obj()
	p, _ := NewBalancedAllocation(nil, nil)
	pl := p.(*BalancedAllocation)
	got := scoreAll(t, pl, pod, infos, func(s *fw.CycleState) { pl.PreScore(context.Background(), s, pod, infos) })
	// cpu 25%, memory 25% → 100 (with the defaults: 27.5% and 29.9% → 98).
	if want := []int64{100}; !reflect.DeepEqual(got, want) {
		t.Errorf("BalancedAllocation = %v, want %v", got, want)
	}
}
