package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		percentage int32
		nodes      int
		want       int
	}{
		{0, 10, 10},
		{0, 99, 99},
		{0, 100, 100},   // 50% - 0 = 50% of 100 = 50 → at least 100
		{0, 1000, 420},  // 50 - 8 = 42%
		{0, 5000, 500},  // 50 - 40 = 10%
		{0, 6000, 300},  // 50 - 48 = 2% → 5%
		{0, 10000, 500}, // 5%
		{100, 5000, 5000},
		{30, 1000, 300},
		{1, 1000, 100},
	}
	for _, tt := range tests {
		if got := NumFeasibleNodesToFind(tt.percentage, tt.nodes); got != tt.want {
			t.Errorf("NumFeasibleNodesToFind(%d, %d) = %d, want %d", tt.percentage, tt.nodes, got, tt.want)
		}
	}
}

func TestFitErrorMessageInKubernetesForm(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 3; i++ {
		nodes = append(nodes, tu.Node(fmt.Sprintf("small-%d", i)).Capacity("cpu", "1", "memory", "1Gi").Obj())
	}
	for i := 0; i < 2; i++ {
		nodes = append(nodes, tu.Node(fmt.Sprintf("tainted-%d", i)).Capacity("cpu", "8", "memory", "8Gi").Taint("key", "value", v1.TaintEffectNoSchedule).Obj())
	}
	f, snap, err := fwtest.New(nil, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := tu.Pod("p").Req("cpu", "2").Obj()
	_, err = NewAlgorithm(0, 1).SchedulePod(context.Background(), f, fw.NewCycleState(), pod, snap)
	var fe *fw.FitError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want FitError", err)
	}
	want := "0/5 nodes are available: 2 node(s) had untolerated taint {key: value}, 3 Insufficient cpu."
	if fe.Error() != want {
		t.Errorf("message\n got %q\nwant %q", fe.Error(), want)
	}
	if !fe.Diagnosis.UnschedulablePlugins.Has("TaintToleration") || !fe.Diagnosis.UnschedulablePlugins.Has("NodeResourcesFit") {
		t.Errorf("unschedulable plugins %v", fe.Diagnosis.UnschedulablePlugins)
	}
}

func TestNoNodes(t *testing.T) {
	f, snap, err := fwtest.New(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewAlgorithm(0, 1).SchedulePod(context.Background(), f, fw.NewCycleState(), tu.Pod("p").Obj(), snap)
	if !errors.Is(err, ErrNoNodesAvailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestPicksTheBestScoredNode(t *testing.T) {
	nodes := []*v1.Node{
		tu.Node("busy").Capacity("cpu", "4", "memory", "8Gi").Obj(),
		tu.Node("idle").Capacity("cpu", "4", "memory", "8Gi").Obj(),
	}
	pods := []*v1.Pod{tu.Pod("e").Req("cpu", "3", "memory", "6Gi").Node("busy").Obj()}
	f, snap, err := fwtest.New(pods, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewAlgorithm(0, 1).SchedulePod(context.Background(), f, fw.NewCycleState(), tu.Pod("p").Req("cpu", "500m", "memory", "1Gi").Obj(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if res.SuggestedHost != "idle" || res.FeasibleNodes != 2 {
		t.Errorf("result %+v, want idle of 2 feasible", res)
	}
}

// Ties are broken at random, reproducibly for a given seed, and every tied
// node can win.
func TestTieBreakingIsSeededAndFair(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 5; i++ {
		nodes = append(nodes, tu.Node(fmt.Sprintf("n%d", i)).Capacity("cpu", "4", "memory", "8Gi").Obj())
	}
	f, snap, err := fwtest.New(nil, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed int64) []string {
		a := NewAlgorithm(0, seed)
		var out []string
		for i := 0; i < 50; i++ {
			res, err := a.SchedulePod(context.Background(), f, fw.NewCycleState(), tu.Pod("p").Req("cpu", "1").Obj(), snap)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res.SuggestedHost)
		}
		return out
	}
	first, again := run(42), run(42)
	seen := map[string]bool{}
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("same seed, different choice at %d: %s vs %s", i, first[i], again[i])
		}
		seen[first[i]] = true
	}
	if len(seen) != 5 {
		t.Errorf("only %d of 5 tied nodes ever chosen in 50 draws", len(seen))
	}
}

func TestProfileWithDisabledPluginsAndWeights(t *testing.T) {
	w := int32(5)
	profile := &config.KubeSchedulerProfile{
		SchedulerName: "custom",
		Plugins: &config.Plugins{
			Filter: config.PluginSet{Disabled: []config.Plugin{{Name: "TaintToleration"}}},
			Score: config.PluginSet{
				Disabled: []config.Plugin{{Name: "*"}},
				Enabled:  []config.Plugin{{Name: "NodeResourcesFit", Weight: &w}},
			},
		},
		PluginConfig: []config.PluginConfig{{Name: "NodeResourcesFit", Args: []byte(`{"scoringStrategy":{"type":"MostAllocated"}}`)}},
	}
	nodes := []*v1.Node{
		tu.Node("tainted-full").Capacity("cpu", "4", "memory", "8Gi").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(),
		tu.Node("empty").Capacity("cpu", "4", "memory", "8Gi").Obj(),
	}
	pods := []*v1.Pod{tu.Pod("e").Req("cpu", "2", "memory", "4Gi").Node("tainted-full").Obj()}
	f, snap, err := fwtest.New(pods, nodes, profile)
	if err != nil {
		t.Fatal(err)
	}
	got := f.ListPlugins()
	if fmt.Sprint(got[fw.ExtensionScore]) != "[NodeResourcesFit:5]" {
		t.Errorf("score plugins %v", got[fw.ExtensionScore])
	}
	for _, name := range got[fw.ExtensionFilter] {
		if name == "TaintToleration" {
			t.Error("TaintToleration still filters")
		}
	}
	res, err := NewAlgorithm(0, 1).SchedulePod(context.Background(), f, fw.NewCycleState(), tu.Pod("p").Req("cpu", "1").Obj(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if res.SuggestedHost != "tainted-full" {
		t.Errorf("MostAllocated without taint filtering chose %s, want tainted-full", res.SuggestedHost)
	}
}

func TestUnknownPluginIsAnError(t *testing.T) {
	profile := &config.KubeSchedulerProfile{SchedulerName: "x", Plugins: &config.Plugins{
		Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "NoSuchPlugin"}}},
	}}
	if _, _, err := fwtest.New(nil, nil, profile); err == nil {
		t.Fatal("unknown plugin accepted")
	}
	notAScorer := &config.KubeSchedulerProfile{SchedulerName: "x", Plugins: &config.Plugins{
		Score: config.PluginSet{Enabled: []config.Plugin{{Name: "NodePorts"}}},
	}}
	if _, _, err := fwtest.New(nil, nil, notAScorer); err == nil {
		t.Fatal("NodePorts enabled as a score plugin accepted")
	}
}
