package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func required(key string, op v1.NodeSelectorOperator, values ...string) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}},
	}}}
}

func TestFilter(t *testing.T) {
	zoneA := tu.Node("a").Label("zone", "a").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want fw.Code
	}{
		{"no constraints", tu.Pod("p").Obj(), fw.Success},
		{"nodeSelector matches", tu.Pod("p").NodeSelector(map[string]string{"zone": "a"}).Obj(), fw.Success},
		{"nodeSelector does not match", tu.Pod("p").NodeSelector(map[string]string{"zone": "b"}).Obj(), fw.UnschedulableAndUnresolvable},
		{"required In matches", tu.Pod("p").Affinity(required("zone", v1.NodeSelectorOpIn, "a", "b")).Obj(), fw.Success},
		{"required NotIn excludes", tu.Pod("p").Affinity(required("zone", v1.NodeSelectorOpNotIn, "a")).Obj(), fw.UnschedulableAndUnresolvable},
		{"required DoesNotExist", tu.Pod("p").Affinity(required("gpu", v1.NodeSelectorOpDoesNotExist)).Obj(), fw.Success},
		{"nodeSelector and affinity both needed", tu.Pod("p").NodeSelector(map[string]string{"zone": "b"}).Affinity(required("zone", v1.NodeSelectorOpIn, "a")).Obj(), fw.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := &NodeAffinity{}
			state := fw.NewCycleState()
			s := pl.PreFilter(context.Background(), state, tt.pod)
			if s.IsSkip() {
				if tt.want != fw.Success {
					t.Fatalf("PreFilter skipped, want %v", tt.want)
				}
				return
			}
			got := pl.Filter(context.Background(), state, tt.pod, tu.NodeInfo(zoneA))
			if got.Code() != tt.want {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
			if tt.want != fw.Success && got.Message() != ErrReasonPod {
				t.Errorf("reason %q, want %q", got.Message(), ErrReasonPod)
			}
		})
	}
}

func TestScorePreferredTerms(t *testing.T) {
	pod := tu.Pod("p").Affinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
		{Weight: 10, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}},
		{Weight: 30, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "ssd", Operator: v1.NodeSelectorOpExists}}}},
	}}}).Obj()
	nodes := []*v1.Node{
		tu.Node("none").Obj(),
		tu.Node("zone").Label("zone", "a").Obj(),
		tu.Node("both").Label("zone", "a").Label("ssd", "1").Obj(),
	}
	pl := &NodeAffinity{}
	state := fw.NewCycleState()
	if s := pl.PreScore(context.Background(), state, pod, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	var scores fw.NodeScoreList
	for _, n := range nodes {
		s, _ := pl.Score(context.Background(), state, pod, tu.NodeInfo(n))
		scores = append(scores, fw.NodeScore{Name: n.Name, Score: s})
	}
	pl.NormalizeScore(context.Background(), state, pod, scores)
	want := []int64{0, 25, 100}
	for i := range want {
		if scores[i].Score != want[i] {
			t.Errorf("%s: %d, want %d", scores[i].Name, scores[i].Score, want[i])
		}
	}
}
