package checker

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/model"
)

// small returns the Small configuration with some constants overridden.
func small(t testing.TB, set map[string]int) model.Config {
	t.Helper()
	cfg, err := model.LoadConfig("Small")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]*int{
		"Replicas": &cfg.Replicas, "Capacity": &cfg.Capacity, "MaxScales": &cfg.MaxScales, "MaxDeletes": &cfg.MaxDeletes,
		"MaxCrashes": &cfg.MaxCrashes, "MaxWatchDrops": &cfg.MaxWatchDrops, "MaxNodeFailures": &cfg.MaxNodeFailures,
		"MaxEvictions": &cfg.MaxEvictions, "IPsPerNode": &cfg.IPsPerNode, "PodsPerRS": &cfg.PodsPerRS,
		"MaxUnavailable": &cfg.MaxUnavailable, "NumNodes": &cfg.NumNodes,
		"TrackRevisions": &cfg.TrackRevisions, "MaxLag": &cfg.MaxLag, "JoiningNodes": &cfg.JoiningNodes,
		"MaxNodeDeletes": &cfg.MaxNodeDeletes, "LabeledNodes": &cfg.LabeledNodes, "SelectorDeployments": &cfg.SelectorDeployments,
		"ReadinessProbes": &cfg.ReadinessProbes, "MaxProbeFailures": &cfg.MaxProbeFailures,
		"RestartPolicy": &cfg.RestartPolicy, "MaxCompletions": &cfg.MaxCompletions, "KubeletLag": &cfg.KubeletLag,
		"DeploymentLag": &cfg.DeploymentLag, "NodeLifecycleLag": &cfg.NodeLifecycleLag, "NodesReturn": &cfg.NodesReturn,
		"GCLag": &cfg.GCLag,
	}
	for k, v := range set {
		f, ok := fields[k]
		if !ok {
			t.Fatalf("no constant %s", k)
		}
		*f = v
	}
	var name []string
	for _, k := range []string{"Replicas", "Capacity", "MaxScales", "MaxDeletes", "MaxCrashes", "MaxWatchDrops", "MaxNodeFailures", "MaxEvictions",
		"PodsPerRS", "MaxUnavailable", "NumNodes", "IPsPerNode",
		"TrackRevisions", "MaxLag", "JoiningNodes", "MaxNodeDeletes", "LabeledNodes", "SelectorDeployments",
		"ReadinessProbes", "MaxProbeFailures", "RestartPolicy", "MaxCompletions", "KubeletLag", "DeploymentLag", "NodeLifecycleLag", "NodesReturn", "GCLag"} {
		if v, ok := set[k]; ok {
			name = append(name, k+"="+itoa(v))
		}
	}
	cfg.Name = "Small"
	if len(name) > 0 {
		cfg.Name += "{" + strings.Join(name, ",") + "}"
	}
	return cfg
}

func itoa(v int) string { return string(rune('0' + v)) }

func check(t testing.TB, cfg model.Config, mutant string, symmetry bool) Result {
	t.Helper()
	m, err := model.New(cfg, mutant)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), m, Options{Symmetry: symmetry, MaxStates: 5_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// faultConfigs exercise each fault and user operation on the small
// configuration, one at a time (their product is what the standard
// configurations check).
var faultConfigs = []map[string]int{
	{},
	{"Replicas": 2, "Capacity": 2},
	{"MaxCrashes": 1},
	{"MaxWatchDrops": 1},
	{"MaxNodeFailures": 1},
	{"MaxEvictions": 1},
	{"MaxDeletes": 1},
	{"MaxScales": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	{"MaxWatchDrops": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	// The features beyond the core pipeline, one at a time.
	{"TrackRevisions": 1},
	{"MaxLag": 1},
	{"MaxLag": 2, "TrackRevisions": 1},
	{"MaxLag": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	{"JoiningNodes": 1},
	{"MaxNodeDeletes": 1, "Capacity": 2},
	{"LabeledNodes": 1, "SelectorDeployments": 1, "Capacity": 2},
	{"ReadinessProbes": 1, "MaxProbeFailures": 1},
	{"RestartPolicy": model.RestartNever, "MaxCompletions": 1, "PodsPerRS": 3},
	{"RestartPolicy": model.RestartAlways, "ReadinessProbes": 1, "MaxCompletions": 1},
	{"ReadinessProbes": 1, "MaxNodeFailures": 1},
	// Kubelets acting on lagging views of their pods, with the faults that
	// touch them.
	{"KubeletLag": 1},
	{"KubeletLag": 1, "MaxDeletes": 1, "MaxCrashes": 1},
	{"KubeletLag": 1, "MaxNodeDeletes": 1, "MaxEvictions": 1, "Capacity": 2},
	// The deployment controller and taint-based eviction on lagging views.
	{"DeploymentLag": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3, "MaxUnavailable": 1},
	{"DeploymentLag": 1, "ReadinessProbes": 1, "MaxProbeFailures": 1},
	{"DeploymentLag": 1, "MaxDeletes": 1},
	// The garbage collector's graph lagging, with foreground deletion.
	{"GCLag": 1, "MaxDeletes": 1},
	{"GCLag": 1, "MaxDeletes": 1, "MaxLag": 1, "DeploymentLag": 1},
	{"DeploymentLag": 1, "MaxScales": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	{"NodeLifecycleLag": 1, "MaxNodeFailures": 1},
	// A deleted node registering again under its name.
	{"NodesReturn": 1, "MaxNodeDeletes": 1, "Capacity": 2},
	{"NodesReturn": 1, "MaxNodeDeletes": 1, "Capacity": 2, "KubeletLag": 1},
}

func TestSpecificationHoldsOnSmallConfigurations(t *testing.T) {
	for _, set := range faultConfigs {
		cfg := small(t, set)
		t.Run(cfg.Name, func(t *testing.T) {
			r := check(t, cfg, "", true)
			if r.Violation != nil {
				m, _ := model.New(cfg, "")
				t.Fatalf("%s", FormatViolation(m, r.Violation))
			}
			if r.Distinct < 100 || r.Quiescent == 0 {
				t.Fatalf("suspiciously small exploration: %+v", r)
			}
			t.Logf("%d distinct states, depth %d, %d quiescent, %d fair SCCs", r.Distinct, r.Depth, r.Quiescent, r.FairSCCs)
		})
	}
}

// Caches that lag at any time (MaxLag, no dropped watch): the mechanisms
// that compensate for stale views must still be there.
var lagMutantConfig = map[string]map[string]int{
	model.MutantReplicaSetIgnoresExpectations: {"MaxLag": 1},
	model.MutantSchedulerIgnoresAssumedPods:   {"Replicas": 2, "MaxLag": 1},
	// Kubelet bugs are still found when kubelets act on lagging views.
	model.MutantKubeletRunsPodBoundElsewhere:  {"KubeletLag": 1},
	model.MutantKubeletNeverFinalizesDeletion: {"KubeletLag": 1, "MaxDeletes": 1},
	model.MutantKubeletLeaksIPOnStop:          {"KubeletLag": 1},
	model.MutantKubeletReusesIP:               {"KubeletLag": 1, "Replicas": 2, "Capacity": 2},
	// The deployment controller on a lagging availability count. (The
	// availability-counting mutants are checked without it: with it DEP-2 is
	// stated over the count the controller saw, which they compute.)
	model.MutantDeploymentNeverRemovesOldReplicas: {"DeploymentLag": 1},
	model.MutantDeploymentIgnoresMaxSurge:         {"DeploymentLag": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3},
	model.MutantGCIgnoresBlockOwnerDeletion:       {"GCLag": 1, "MaxDeletes": 1},
	model.MutantSchedulerIgnoresTaints:            {"NodeLifecycleLag": 1, "MaxNodeFailures": 1},
}

func TestMutantsAreCaughtWithLaggingCaches(t *testing.T) {
	for name, set := range lagMutantConfig {
		t.Run(name, func(t *testing.T) {
			mi, _ := model.LookupMutant(name)
			cfg := small(t, set)
			m, err := model.New(cfg, name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Check(context.Background(), m, Options{MaxStates: 5_000_000})
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation == nil || r.Violation.Property != mi.Breaks {
				t.Fatalf("mutant %s with lagging caches: want %s violated, got %+v", name, mi.Breaks, r.Violation)
			}
			t.Logf("\n%s", FormatViolation(m, r.Violation))
		})
	}
}

func TestEveryMutantIsCaughtWithATrace(t *testing.T) {
	covered := map[string]bool{}
	for _, mi := range model.Mutants {
		cfg, err := model.MutantConfig(mi.Name)
		if err != nil {
			t.Errorf("mutant %s: %v", mi.Name, err)
			continue
		}
		covered[mi.Breaks] = true
		t.Run(mi.Name, func(t *testing.T) {
			m, err := model.New(cfg, mi.Name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Check(context.Background(), m, Options{MaxStates: 5_000_000})
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation == nil {
				t.Fatalf("mutant %s not caught (%d states)", mi.Name, r.Distinct)
			}
			// A liveness mutant may leave several goals unmet in the state
			// the checker stops at; the one it breaks must be among them.
			last := r.Violation.Trace[len(r.Violation.Trace)-1].State
			alsoUnmet := r.Violation.Kind == "liveness" && slices.Contains(m.UnmetGoals(&last), mi.Breaks)
			if r.Violation.Property != mi.Breaks && !alsoUnmet {
				t.Fatalf("mutant %s: want %s violated, got %s\n%s", mi.Name, mi.Breaks, r.Violation.Property, FormatViolation(m, r.Violation))
			}
			out := FormatViolation(m, r.Violation)
			if len(r.Violation.Trace) < 2 || !strings.Contains(out, "1. ") || !strings.Contains(out, mi.Breaks) {
				t.Fatalf("trace not readable:\n%s", out)
			}
			if mi.Name == model.MutantDeploymentFlapsReplicas && r.Violation.CycleLength == 0 {
				t.Fatalf("the flapping controller must be caught as a fair cycle:\n%s", out)
			}
			t.Logf("\n%s", out)
		})
	}
	for _, p := range model.Properties {
		if !covered[p.ID] {
			t.Errorf("property %s has no mutant", p.ID)
		}
	}
}

// The parallel checker without symmetry counts exactly the states a plain
// sequential search finds (the number TLC reports for the same .cfg).
func TestDistinctCountMatchesPlainSearch(t *testing.T) {
	for _, set := range []map[string]int{{"Replicas": 2, "Capacity": 2}, {"MaxNodeFailures": 1}, {"MaxWatchDrops": 1}} {
		cfg := small(t, set)
		m, err := model.New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[model.State]bool{}
		queue := m.Init()
		for _, s := range queue {
			seen[s] = true
		}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			m.Successors(&s, func(_ model.Action, next *model.State) {
				if !seen[*next] {
					seen[*next] = true
					queue = append(queue, *next)
				}
			})
		}
		r := check(t, cfg, "", false)
		if r.Distinct != int64(len(seen)) {
			t.Fatalf("%s: checker counts %d states, plain search %d", cfg.Name, r.Distinct, len(seen))
		}
	}
}

func TestCheckStopsWhenCancelled(t *testing.T) {
	m, err := model.New(small(t, map[string]int{"MaxWatchDrops": 1, "Replicas": 2, "Capacity": 2}), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Check(ctx, m, Options{}); err == nil {
		t.Fatal("a cancelled check returned no error")
	}
}

func TestCheckLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	m, err := model.New(small(t, map[string]int{"MaxCrashes": 1}), "")
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	if _, err := Check(context.Background(), m, Options{Progress: &progress, ProgressInterval: time.Millisecond, Workers: 4}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left running (before: %d)", n, before)
	}
}
