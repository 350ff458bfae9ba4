package podtopologyspread_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/podtopologyspread"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

// webSelector stands for the listers: pods labelled app=web belong to a
// workload selecting app=web; other pods to none.
func webSelector(p *v1.Pod) labels.Selector {
	if p.Labels["app"] == "web" {
		return labels.SelectorFromSet(labels.Set{"app": "web"})
	}
	return labels.NewSelector()
}

func scoresOf(t *testing.T, sp *podtopologyspread.PodTopologySpread, state *fw.CycleState, pod *v1.Pod, nodes []*fw.NodeInfo) map[string]int64 {
	t.Helper()
	var scores fw.NodeScoreList
	for _, ni := range nodes {
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
	return got
}

func TestSystemDefaultConstraintsSpreadAWorkloadsPods(t *testing.T) {
	nodes := []*v1.Node{
		tu.Node("a1").Label(v1.LabelTopologyZone, "a").Obj(),
		tu.Node("a2").Label(v1.LabelTopologyZone, "a").Obj(),
		tu.Node("b1").Label(v1.LabelTopologyZone, "b").Obj(),
		tu.Node("nozone").Obj(),
	}
	pods := []*v1.Pod{
		tu.Pod("w1").Label("app", "web").Node("a1").Obj(),
		tu.Pod("w2").Label("app", "web").Node("a1").Obj(),
		tu.Pod("db").Label("app", "db").Node("b1").Obj(),
	}
	f, snap, err := fwtest.New(pods, nodes, nil, fw.WithDefaultSelector(webSelector))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := podtopologyspread.New(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	sp := pl.(*podtopologyspread.PodTopologySpread)
	all, _ := snap.List()

	// Hostname (maxSkew 3, weight log 6) and zone (maxSkew 5; domains a, b
	// and the unlabelled node's "": weight log 5): raw scores a1 13, a2 9,
	// b1 6, nozone 2 (no zone key, so no zone term) — normalized as
	// upstream.
	pod := tu.Pod("new").Label("app", "web").Obj()
	state := fw.NewCycleState()
	if s := sp.PreScore(context.Background(), state, pod, all); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	want := map[string]int64{"a1": 15, "a2": 46, "b1": 69, "nozone": 100}
	if got := scoresOf(t, sp, state, pod, all); !equal(got, want) {
		t.Errorf("scores %v, want %v", got, want)
	}

	// A pod of no workload gets no default constraints.
	if s := sp.PreScore(context.Background(), fw.NewCycleState(), tu.Pod("lone").Label("app", "batch").Obj(), all); !s.IsSkip() {
		t.Errorf("PreScore for a pod of no workload = %v, want Skip", s)
	}
	// A pod with its own constraints does not get the defaults.
	own := tu.Pod("own").Label("app", "web").Spread(1, "rack", v1.ScheduleAnyway, "app", "web").Obj()
	state = fw.NewCycleState()
	if s := sp.PreScore(context.Background(), state, own, all); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	for name, s := range scoresOf(t, sp, state, own, all) {
		if s != 0 {
			t.Errorf("node %s without the pod's own key (rack) scored %d, want 0", name, s)
		}
	}
}

func TestListDefaultConstraintsFilter(t *testing.T) {
	nodes := []*v1.Node{
		tu.Node("a1").Label(v1.LabelTopologyZone, "a").Obj(),
		tu.Node("b1").Label(v1.LabelTopologyZone, "b").Obj(),
		tu.Node("nozone").Obj(),
	}
	pods := []*v1.Pod{tu.Pod("w1").Label("app", "web").Node("a1").Obj()}
	args, _ := json.Marshal(podtopologyspread.Args{DefaultingType: podtopologyspread.ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule},
	}})
	profile := &config.KubeSchedulerProfile{SchedulerName: config.DefaultSchedulerName, PluginConfig: []config.PluginConfig{{Name: podtopologyspread.Name, Args: args}}}
	f, snap, err := fwtest.New(pods, nodes, profile, fw.WithDefaultSelector(webSelector))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pod  *v1.Pod
		want map[string]string
	}{
		{tu.Pod("web").Label("app", "web").Obj(), map[string]string{
			"a1": podtopologyspread.ErrReasonConstraintsNotMatch, "b1": "", "nozone": podtopologyspread.ErrReasonNodeLabelNotMatch}},
		{tu.Pod("batch").Label("app", "batch").Obj(), map[string]string{"a1": "", "b1": "", "nozone": ""}},
	}
	for _, tt := range tests {
		state := fw.NewCycleState()
		if s := f.RunPreFilterPlugins(context.Background(), state, tt.pod); !s.IsSuccess() {
			t.Fatal(s)
		}
		for node, want := range tt.want {
			ni, _ := snap.Get(node)
			if got := f.RunFilterPlugins(context.Background(), state, tt.pod, ni); got.Message() != want {
				t.Errorf("pod %s on %s: Filter = %v, want %q", tt.pod.Name, node, got, want)
			}
		}
	}
}

func TestArgsValidation(t *testing.T) {
	c := func(key string, skew int32, when v1.UnsatisfiableConstraintAction) v1.TopologySpreadConstraint {
		return v1.TopologySpreadConstraint{TopologyKey: key, MaxSkew: skew, WhenUnsatisfiable: when}
	}
	withSelector := c("zone", 1, v1.DoNotSchedule)
	withSelector.LabelSelector = &metav1.LabelSelector{}
	tests := []struct {
		name    string
		args    podtopologyspread.Args
		wantErr string
	}{
		{"system", podtopologyspread.Args{DefaultingType: "System"}, ""},
		{"empty list", podtopologyspread.Args{DefaultingType: "List"}, ""},
		{"list", podtopologyspread.Args{DefaultingType: "List", DefaultConstraints: []v1.TopologySpreadConstraint{c("zone", 1, v1.DoNotSchedule), c("zone", 2, v1.ScheduleAnyway)}}, ""},
		{"system with constraints", podtopologyspread.Args{DefaultingType: "System", DefaultConstraints: []v1.TopologySpreadConstraint{c("zone", 1, v1.DoNotSchedule)}}, "when .defaultConstraints are not empty"},
		{"unknown defaulting", podtopologyspread.Args{DefaultingType: "Cluster"}, `defaultingType: Unsupported value: "Cluster"`},
		{"maxSkew 0", podtopologyspread.Args{DefaultingType: "List", DefaultConstraints: []v1.TopologySpreadConstraint{c("zone", 0, v1.DoNotSchedule)}}, "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range"},
		{"no key", podtopologyspread.Args{DefaultingType: "List", DefaultConstraints: []v1.TopologySpreadConstraint{c("", 1, v1.DoNotSchedule)}}, "defaultConstraints[0].topologyKey: Required value"},
		{"bad action", podtopologyspread.Args{DefaultingType: "List", DefaultConstraints: []v1.TopologySpreadConstraint{c("zone", 1, "Sometimes")}}, "defaultConstraints[0].whenUnsatisfiable: Unsupported value"},
		{"selector", podtopologyspread.Args{DefaultingType: "List", DefaultConstraints: []v1.TopologySpreadConstraint{withSelector}}, "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector"},
		{"duplicate", podtopologyspread.Args{DefaultingType: "List", DefaultConstraints: []v1.TopologySpreadConstraint{c("zone", 1, v1.DoNotSchedule), c("zone", 3, v1.DoNotSchedule)}}, "defaultConstraints[1]: Duplicate value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := podtopologyspread.ValidateArgs(&tt.args)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	// The factory defaults the type to System and rejects invalid args.
	if _, err := podtopologyspread.New(json.RawMessage(`{"defaultConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}`), nil); err == nil {
		t.Error("defaultConstraints with the default (System) defaulting type must be rejected")
	}
}

func equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
