package podtopologyspread_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/podtopologyspread"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

// Four nodes in two zones; zone a holds 2 matching pods, zone b holds 0.
func cluster() ([]*v1.Node, []*v1.Pod) {
	nodes := []*v1.Node{
		tu.Node("a1").Label("zone", "a").Obj(),
		tu.Node("a2").Label("zone", "a").Obj(),
		tu.Node("b1").Label("zone", "b").Obj(),
		tu.Node("b2").Label("zone", "b").Obj(),
		tu.Node("nozone").Obj(),
	}
	pods := []*v1.Pod{
		tu.Pod("w1").Label("app", "web").Node("a1").Obj(),
		tu.Pod("w2").Label("app", "web").Node("a2").Obj(),
		tu.Pod("other").Label("app", "db").Node("b1").Obj(),
	}
	return nodes, pods
}

func TestFilter(t *testing.T) {
	nodes, pods := cluster()
	f, snap, err := fwtest.New(pods, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string // node -> reason ("" fits)
	}{
		{
			name: "maxSkew 1 by zone: only zone b",
			pod:  tu.Pod("new").Label("app", "web").Spread(1, "zone", v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{
				"a1": podtopologyspread.ErrReasonConstraintsNotMatch, "a2": podtopologyspread.ErrReasonConstraintsNotMatch,
				"b1": "", "b2": "", "nozone": podtopologyspread.ErrReasonNodeLabelNotMatch,
			},
		},
		{
			name: "maxSkew 3 by zone: all zoned nodes",
			pod:  tu.Pod("new").Label("app", "web").Spread(3, "zone", v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{"a1": "", "a2": "", "b1": "", "b2": "", "nozone": podtopologyspread.ErrReasonNodeLabelNotMatch},
		},
		{
			name: "by hostname: only empty nodes",
			pod:  tu.Pod("new").Label("app", "web").Spread(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{
				"a1": podtopologyspread.ErrReasonConstraintsNotMatch, "a2": podtopologyspread.ErrReasonConstraintsNotMatch,
				"b1": "", "b2": "", "nozone": "",
			},
		},
		{
			// The API server merges matchLabelKeys into the selector when
			// the pod is created (MatchLabelKeysInPodTopologySpreadSelectorMerge);
			// the scheduler, as upstream's since 1.34, reads the selector
			// alone: here it was not merged, so the other web pods count.
			name: "matchLabelKeys are not merged by the scheduler",
			pod: func() *v1.Pod {
				p := tu.Pod("new").Label("app", "web").Label("hash", "new").Spread(1, "zone", v1.DoNotSchedule, "app", "web").Obj()
				p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"hash"}
				return p
			}(),
			want: map[string]string{
				"a1": podtopologyspread.ErrReasonConstraintsNotMatch, "a2": podtopologyspread.ErrReasonConstraintsNotMatch,
				"b1": "", "b2": "", "nozone": podtopologyspread.ErrReasonNodeLabelNotMatch,
			},
		},
		{
			name: "pod not matching its own selector does not add to skew",
			pod:  tu.Pod("new").Label("app", "other").Spread(2, "zone", v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{"a1": "", "a2": "", "b1": "", "b2": "", "nozone": podtopologyspread.ErrReasonNodeLabelNotMatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := fw.NewCycleState()
			if s := f.RunPreFilterPlugins(context.Background(), state, tt.pod); !s.IsSuccess() {
				t.Fatal(s)
			}
			for node, want := range tt.want {
				ni, _ := snap.Get(node)
				got := f.RunFilterPlugins(context.Background(), state, tt.pod, ni)
				if got.Message() != want {
					t.Errorf("node %s: Filter = %v, want %q", node, got, want)
				}
			}
		})
	}
}

func TestScorePrefersLessCrowdedDomains(t *testing.T) {
	nodes, pods := cluster()
	f, snap, err := fwtest.New(pods, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := tu.Pod("new").Label("app", "web").Spread(1, "zone", v1.ScheduleAnyway, "app", "web").Obj()
	state := fw.NewCycleState()
	if s := f.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	pl, _ := podtopologyspread.New(nil, f)
	sp := pl.(*podtopologyspread.PodTopologySpread)
	all, _ := snap.List()
	if s := sp.PreScore(context.Background(), state, pod, all); !s.IsSuccess() {
		t.Fatal(s)
	}
	var scores fw.NodeScoreList
	for _, ni := range all {
		s, st := sp.Score(context.Background(), state, pod, ni)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		scores = append(scores, fw.NodeScore{Name: ni.Name(), Score: s})
	}
	sp.NormalizeScore(context.Background(), state, pod, scores)
	got := map[string]int64{}
	for _, s := range scores {
		got[s.Name] = s.Score
	}
	if !(got["b1"] > got["a1"] && got["b1"] == got["b2"] && got["a1"] == got["a2"]) {
		t.Errorf("scores %v: zone b (0 pods) must beat zone a (2 pods)", got)
	}
	if got["nozone"] != 0 {
		t.Errorf("node without the topology key scored %d, want 0", got["nozone"])
	}
}

func TestMinDomainsCountsMissingDomainsAsEmpty(t *testing.T) {
	nodes := []*v1.Node{tu.Node("a1").Label("zone", "a").Obj()}
	pods := []*v1.Pod{tu.Pod("w1").Label("app", "web").Node("a1").Obj()}
	f, snap, err := fwtest.New(pods, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := tu.Pod("new").Label("app", "web").Spread(1, "zone", v1.DoNotSchedule, "app", "web").Obj()
	minDomains := int32(2)
	pod.Spec.TopologySpreadConstraints[0].MinDomains = &minDomains
	state := fw.NewCycleState()
	f.RunPreFilterPlugins(context.Background(), state, pod)
	ni, _ := snap.Get("a1")
	if got := f.RunFilterPlugins(context.Background(), state, pod, ni); got.Message() != podtopologyspread.ErrReasonConstraintsNotMatch {
		t.Errorf("with 1 of minDomains 2 domains the global minimum is 0, so skew 2 > 1 must fail; got %v", got)
	}
}
