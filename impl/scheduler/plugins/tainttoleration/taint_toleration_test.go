package tainttoleration

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want *fw.Status
	}{
		{"no taints", tu.Pod("p").Obj(), tu.Node("n").Obj(), nil},
		{"untolerated NoSchedule", tu.Pod("p").Obj(), tu.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}")},
		{"untolerated NoExecute", tu.Pod("p").Obj(), tu.Node("n").Taint("node.kubernetes.io/unreachable", "", v1.TaintEffectNoExecute).Obj(),
			fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) had untolerated taint {node.kubernetes.io/unreachable: }")},
		{"PreferNoSchedule does not filter", tu.Pod("p").Obj(), tu.Node("n").Taint("k", "v", v1.TaintEffectPreferNoSchedule).Obj(), nil},
		{"tolerated by Equal", tu.Pod("p").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}).Obj(),
			tu.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(), nil},
		{"toleration with wrong value", tu.Pod("p").Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "cpu"}).Obj(),
			tu.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}")},
		{"tolerated by Exists without key", tu.Pod("p").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(),
			tu.Node("n").Taint("a", "b", v1.TaintEffectNoExecute).Obj(), nil},
		// The NodeInfo keeps the taints split by effect: the first
		// untolerated one in the node's order is still the one named.
		{"first untolerated in the node's order among mixed effects", tu.Pod("p").Toleration(v1.Toleration{Key: "first", Operator: v1.TolerationOpExists}).Obj(),
			tu.Node("n").Taint("soft", "", v1.TaintEffectPreferNoSchedule).Taint("first", "", v1.TaintEffectNoSchedule).
				Taint("second", "x", v1.TaintEffectNoExecute).Taint("third", "y", v1.TaintEffectNoSchedule).Obj(),
			fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) had untolerated taint {second: x}")},
		{"only PreferNoSchedule among them untolerated", tu.Pod("p").Toleration(v1.Toleration{Key: "hard", Operator: v1.TolerationOpExists}).Obj(),
			tu.Node("n").Taint("soft", "", v1.TaintEffectPreferNoSchedule).Taint("hard", "", v1.TaintEffectNoExecute).Obj(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&TaintToleration{}).Filter(context.Background(), fw.NewCycleState(), tt.pod, tu.NodeInfo(tt.node))
			if got.Code() != tt.want.Code() || got.Message() != tt.want.Message() {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScorePrefersFewerUntoleratedPreferNoScheduleTaints(t *testing.T) {
	pl := &TaintToleration{}
	pod := tu.Pod("p").Toleration(v1.Toleration{Key: "tolerated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}).Obj()
	nodes := []*v1.Node{
		tu.Node("clean").Obj(),
		tu.Node("one").Taint("a", "", v1.TaintEffectPreferNoSchedule).Taint("tolerated", "", v1.TaintEffectPreferNoSchedule).Obj(),
		tu.Node("two").Taint("a", "", v1.TaintEffectPreferNoSchedule).Taint("b", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	state := fw.NewCycleState()
	if s := pl.PreScore(context.Background(), state, pod, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	var scores fw.NodeScoreList
	for _, n := range nodes {
		s, st := pl.Score(context.Background(), state, pod, tu.NodeInfo(n))
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		scores = append(scores, fw.NodeScore{Name: n.Name, Score: s})
	}
	pl.NormalizeScore(context.Background(), state, pod, scores)
	want := []int64{100, 50, 0}
	for i := range want {
		if scores[i].Score != want[i] {
			t.Errorf("score of %s = %d, want %d", scores[i].Name, scores[i].Score, want[i])
		}
	}
}
