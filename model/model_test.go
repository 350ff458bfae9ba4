package model

import (
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func loadSmall(t testing.TB) *Model {
	t.Helper()
	cfg, err := LoadConfig("Small")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Replicas, cfg.Capacity, cfg.MaxCrashes, cfg.MaxWatchDrops, cfg.MaxNodeFailures, cfg.MaxEvictions, cfg.MaxDeletes = 2, 2, 1, 1, 1, 1, 1
	cfg.PodsPerRS = 3
	m, err := New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loadSmallModels is loadSmall and loadSmall with every lagging view and
// returning nodes.
func loadSmallModels(t testing.TB) []*Model {
	m := loadSmall(t)
	cfg := m.Config()
	cfg.KubeletLag, cfg.DeploymentLag, cfg.NodeLifecycleLag, cfg.NodesReturn, cfg.MaxNodeDeletes = 1, 1, 1, 1, 1
	lag, err := New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return []*Model{m, lag}
}

func TestEveryConfigurationParses(t *testing.T) {
	names := ConfigNames()
	for _, want := range StandardConfigs {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("standard configuration %s missing from spec/*.cfg (%v)", want, names)
		}
	}
	for _, n := range names {
		cfg, err := LoadConfig(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Invariants) == 0 || len(cfg.Properties) == 0 {
			t.Errorf("%s: no invariants or properties", n)
		}
	}
}

func TestParseConfigRejectsBadInput(t *testing.T) {
	for _, text := range []string{
		"CONSTANTS\n NumNodes = 2\n",   // constants missing
		"CONSTANTS\n Bogus = 2\n",      // unknown constant
		"CONSTANTS\n NumNodes = two\n", // not a number
		"stray words\n",                // outside a section
		"PROPERTIES\n NOPE_1\n",        // unknown property (after constants fail)
	} {
		if _, err := ParseConfig("bad", text); err == nil {
			t.Errorf("ParseConfig accepted %q", text)
		}
	}
}

// The TLA+ module has every variable and every action of the Go model,
// under the same names, and every property operator.
func TestTLAModuleNamesMatchTheGoModel(t *testing.T) {
	b, err := os.ReadFile("../spec/PodPipeline.tla")
	if err != nil {
		t.Fatal(err)
	}
	tla := string(b)
	for _, k := range Kinds() {
		if !regexp.MustCompile(`(?m)^` + k.String() + `\(`).MatchString(tla) {
			t.Errorf("action %s has no operator definition in PodPipeline.tla", k)
		}
		if !strings.Contains(tla, k.String()+"(") {
			t.Errorf("action %s missing from Next", k)
		}
	}
	m := loadSmall(t)
	s := m.Init()[0]
	seen := map[string]bool{}
	for _, b := range m.Bindings(&s) {
		name, _, _ := strings.Cut(b.Name, "[")
		if seen[name] {
			continue
		}
		seen[name] = true
		if !regexp.MustCompile(`(?m)^\s+`+name+`,?\s`).MatchString(tla) && !strings.Contains(tla, "VARIABLES crashes") {
			t.Errorf("variable %s not declared in PodPipeline.tla", name)
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(tla) {
			t.Errorf("variable %s not in PodPipeline.tla", name)
		}
	}
	for _, p := range Properties {
		if !regexp.MustCompile(`(?m)^` + OperatorFromID(p.ID) + ` ==`).MatchString(tla) {
			t.Errorf("property %s has no operator %s in PodPipeline.tla", p.ID, OperatorFromID(p.ID))
		}
	}
}

// randomWalk returns the states of a random behaviour of m.
func randomWalk(m *Model, r *rand.Rand, steps int) []State {
	s := m.Init()[0]
	out := []State{s}
	for i := 0; i < steps; i++ {
		var succ []State
		m.Successors(&s, func(_ Action, t *State) { succ = append(succ, *t) })
		if len(succ) == 0 {
			break
		}
		s = succ[r.IntN(len(succ))]
		out = append(out, s)
	}
	return out
}

// Canonicalisation is a function of the orbit: permuting nodes or slots
// does not change the representative, and the representative is in the
// orbit (it satisfies the same invariants and has as many successors).
func TestCanonicalIsInvariantUnderSymmetry(t *testing.T) {
	for _, m := range loadSmallModels(t) {
		canonicalIsInvariant(t, m)
	}
}

func canonicalIsInvariant(t *testing.T, m *Model) {
	r := rand.New(rand.NewPCG(1, 2))
	for walk := 0; walk < 40; walk++ {
		for _, s := range randomWalk(m, r, 40) {
			c, enc := m.Canonical(&s, nil)
			perm := nodePerms[m.cfg.NumNodes][1]
			ps := m.permuteNodes(&s, perm)
			// swap two slots of the first ReplicaSet as well
			swapPods(&ps, Pod(1, 1, 1), Pod(1, 1, 2))
			_, enc2 := m.Canonical(&ps, nil)
			if string(enc) != string(enc2) {
				t.Fatalf("canonical form differs for a permuted state:\n%v\n%v", m.Summary(&s), m.Summary(&ps))
			}
			var n1, n2 int
			m.Successors(&s, func(Action, *State) { n1++ })
			m.Successors(&c, func(Action, *State) { n2++ })
			if n1 != n2 {
				t.Fatalf("representative has %d successors, state has %d", n2, n1)
			}
		}
	}
}

func TestEveryActionIsAStep(t *testing.T) {
	// No enabled action leaves the state unchanged (so ENABLED A is A's
	// guard, which the liveness check relies on).
	for _, m := range loadSmallModels(t) {
		r := rand.New(rand.NewPCG(3, 4))
		for walk := 0; walk < 40; walk++ {
			for _, s := range randomWalk(m, r, 40) {
				m.Successors(&s, func(a Action, next *State) {
					if *next == s {
						t.Fatalf("%s is enabled but changes nothing", a)
					}
				})
			}
		}
	}
}

func TestApplyAndActionNames(t *testing.T) {
	m := loadSmall(t)
	s := m.Init()[0]
	if _, ok := m.Apply(&s, act(UpdateDeployment, 1)); ok {
		t.Fatal("UpdateDeployment enabled before the deployment exists")
	}
	s1, ok := m.Apply(&s, act(CreateDeployment, 1))
	if !ok || s1.DepState[1] != Live || s1.DepReplicas[1] != 2 {
		t.Fatalf("CreateDeployment: %v %+v", ok, s1.DepState)
	}
	if got := actPod(SchedulerBindPod, 0, Pod(1, 2, 3), 2).String(); got != "SchedulerBindPod(<<1, 2, 3>>, 2)" {
		t.Fatalf("action name %q", got)
	}
	if got := act(WatchDrop, Scheduler).String(); got != `WatchDrop("Scheduler")` {
		t.Fatalf("action name %q", got)
	}
	if d := m.Diff(&s, &s1); len(d) != 3 || !strings.Contains(d[0], `depState[1]: "Absent" -> "Live"`) {
		t.Fatalf("diff %v", d)
	}
}

// bfs explores every reachable state, canonicalising with symmetry or not.
func bfs(m *Model, symmetry bool) map[string]bool {
	seen := map[string]bool{}
	var queue []State
	add := func(s *State) {
		var key []byte
		var c State
		if symmetry {
			c, key = m.Canonical(s, nil)
		} else {
			c, key = *s, m.Encode(s, nil)
		}
		if !seen[string(key)] {
			seen[string(key)] = true
			queue = append(queue, c)
		}
	}
	for _, s := range m.Init() {
		add(&s)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.Successors(&s, func(_ Action, t *State) { add(t) })
	}
	return seen
}

// The symmetry-reduced search visits exactly one representative of every
// orbit of the full search: reduction loses no behaviour.
func TestSymmetryReductionVisitsEveryOrbit(t *testing.T) {
	for _, set := range []func(*Config){
		func(c *Config) { c.Replicas, c.Capacity = 2, 2 },
		func(c *Config) { c.MaxNodeFailures = 1 },
		func(c *Config) { c.MaxWatchDrops = 1 },
		func(c *Config) { c.MaxLag, c.TrackRevisions = 2, 1 },
		func(c *Config) { c.JoiningNodes, c.MaxNodeDeletes, c.Capacity = 1, 1, 2 },
		func(c *Config) { c.LabeledNodes, c.SelectorDeployments, c.NumNodes, c.Capacity = 2, 1, 3, 2 },
		func(c *Config) { c.KubeletLag, c.NodeLifecycleLag, c.MaxNodeFailures = 1, 1, 1 },
		func(c *Config) { c.DeploymentLag, c.Replicas, c.Capacity, c.PodsPerRS = 1, 2, 2, 3 },
		func(c *Config) { c.NodesReturn, c.MaxNodeDeletes, c.KubeletLag, c.Capacity = 1, 1, 1, 2 },
	} {
		cfg, err := LoadConfig("Small")
		if err != nil {
			t.Fatal(err)
		}
		set(&cfg)
		m, err := New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		full := bfs(m, false)
		reduced := bfs(m, true)
		orbits := map[string]bool{}
		for _, s := range allStates(m) {
			_, key := m.Canonical(&s, nil)
			orbits[string(key)] = true
		}
		if len(orbits) != len(reduced) {
			t.Fatalf("%+v: %d orbits in the full graph, %d states in the reduced search", cfg, len(orbits), len(reduced))
		}
		if len(reduced) >= len(full) {
			t.Fatalf("no reduction: %d vs %d", len(reduced), len(full))
		}
		t.Logf("%d states, %d orbits", len(full), len(reduced))
	}
}

// allStates lists every reachable state (no reduction).
func allStates(m *Model) []State { return explore(m, nil) }

// explore walks every state reachable from m's initial states breadth
// first (no reduction) and returns them in that order. It calls step, if
// not nil, for every action enabled in a walked state, and stops after
// the state in which step first returns false.
func explore(m *Model, step func(from *State, a Action) bool) []State {
	seen := map[State]bool{}
	var walked []State
	queue := m.Init()
	for _, s := range queue {
		seen[s] = true
	}
	for more := true; more && len(queue) > 0; {
		s := queue[0]
		queue = queue[1:]
		walked = append(walked, s)
		m.Successors(&s, func(a Action, next *State) {
			if step != nil && !step(&s, a) {
				more = false
			}
			if !seen[*next] {
				seen[*next] = true
				queue = append(queue, *next)
			}
		})
	}
	return walked
}

func TestPropertyHelpers(t *testing.T) {
	m := loadSmall(t)
	s := m.Init()[0]
	if v := m.ViolatedInvariants(&s); len(v) != 0 {
		t.Fatalf("initial state violates %v", v)
	}
	bad := s
	bad.Sandboxes[Pod(1, 1, 1)] = 2
	bad.SandboxNode[Pod(1, 1, 1)] = 1
	if v := m.ViolatedInvariants(&bad); strings.Join(v, ",") != "KUBELET-1,KUBELET-2" {
		t.Fatalf("got %v", v)
	}
	if v := m.UnmetGoals(&bad); strings.Join(v, ",") != "LIVE-3" {
		t.Fatalf("got %v", v)
	}
	rebound := s
	rebound.PodState[Pod(1, 1, 1)], rebound.PodNode[Pod(1, 1, 1)] = Live, 1
	moved := rebound
	moved.PodNode[Pod(1, 1, 1)] = 2
	if v := m.ViolatedStepProperties(&rebound, &moved); !strings.Contains(strings.Join(v, ","), "SCHED-1") {
		t.Fatalf("got %v", v)
	}
}

func TestDecodeInvertsEncode(t *testing.T) {
	for _, m := range loadSmallModels(t) {
		r := rand.New(rand.NewPCG(5, 6))
		for walk := 0; walk < 20; walk++ {
			for _, s := range randomWalk(m, r, 40) {
				enc := m.Encode(&s, nil)
				if len(enc) != m.EncodedSize() || m.Decode(enc) != s {
					t.Fatalf("decode(encode(s)) != s for\n%v", m.Summary(&s))
				}
			}
		}
	}
}

// A snapshot carries readiness, Succeeded pods and deleted nodes into the
// model state.
func TestFromSnapshotReadinessAndNodes(t *testing.T) {
	m := loadSmall(t)
	s, err := m.FromSnapshot(Snapshot{
		Deployments: []DeploymentSnapshot{{Number: 1, State: Live, Replicas: 2, Version: 1, Observed: true}},
		ReplicaSets: []ReplicaSetSnapshot{{Deployment: 1, Version: 1, Replicas: 2}},
		Pods: []PodSnapshot{
			{Deployment: 1, Version: 1, State: Live, Node: 1, Phase: Running, NotReady: true, OwnerVersions: []int{1},
				Sandboxes: 1, SandboxNode: 1, SandboxIP: 1},
			{Deployment: 1, Version: 1, State: Live, Node: 1, Phase: Running, OwnerVersions: []int{1},
				Sandboxes: 1, SandboxNode: 1, SandboxIP: 2},
			{Deployment: 1, Version: 1, State: Live, Node: 2, Phase: Succeeded, OwnerVersions: []int{1}},
		},
		Nodes: []NodeSnapshot{{Number: 1, Up: true, KubeletUp: true}, {Number: 2, Deleted: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p1, p2, p3 := Pod(1, 1, 1), Pod(1, 1, 2), Pod(1, 1, 3)
	if s.PodReady[p1] || !s.PodReady[p2] || s.PodReady[p3] || s.PodPhase[p3] != Succeeded {
		t.Fatalf("readiness or phase not carried over: %v", m.Summary(&s))
	}
	if s.NodeState[1] != Live || s.NodeState[2] != Gone || s.NodeUp[2] {
		t.Fatalf("node states not carried over: %v", m.Summary(&s))
	}
	if got := m.AvailablePods(&s, 1, 1); got != 1 {
		t.Fatalf("available pods = %d, want 1 (only the Ready one)", got)
	}
	if v := m.UnmetGoals(&s); !slices.Contains(v, "LIVE-4") || !slices.Contains(v, "LIVE-1") {
		t.Fatalf("unmet goals %v: want LIVE-1 (one pod unready) and LIVE-4 (a pod on a deleted node)", v)
	}
	if v := m.ViolatedInvariants(&s); len(v) != 0 {
		t.Fatalf("violated %v", v)
	}
}

// With KubeletLag a kubelet acts on its own view: it can start a pod that
// is already terminating in the store (its view still shows it live), and
// then stops it once it sees the deletion; without the lag it cannot.
func TestKubeletActsOnItsLaggingView(t *testing.T) {
	for _, lag := range []int{0, 1} {
		m := loadSmall(t)
		cfg := m.Config()
		cfg.KubeletLag, cfg.MaxCrashes, cfg.MaxWatchDrops, cfg.MaxNodeFailures, cfg.MaxEvictions = lag, 0, 0, 0, 0
		cfg.Replicas, cfg.Capacity, cfg.PodsPerRS = 1, 1, 2
		m, err := New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		startedTerminating := false
		explore(m, func(s *State, a Action) bool {
			if a.Kind == KubeletStartPod && s.PodState[a.Args[1]] == Deleting {
				startedTerminating = true
			}
			return !startedTerminating
		})
		if startedTerminating != (lag == 1) {
			t.Errorf("KubeletLag=%d: a kubelet started a terminating pod: %v", lag, startedTerminating)
		}
	}
}

// With NodesReturn a node deleted and registered again under its name runs
// the pods still bound to it again (Running pods with no sandbox); without
// it no kubelet ever starts a Running pod.
func TestReturningNodeRunsItsPodsAgain(t *testing.T) {
	for _, returns := range []int{0, 1} {
		m := loadSmall(t)
		cfg := m.Config()
		cfg.NodesReturn, cfg.MaxNodeDeletes = returns, 1
		cfg.MaxCrashes, cfg.MaxWatchDrops, cfg.MaxNodeFailures, cfg.MaxEvictions, cfg.MaxDeletes = 0, 0, 0, 0, 0
		cfg.Replicas, cfg.Capacity, cfg.PodsPerRS, cfg.NumVersions = 1, 1, 2, 1
		m, err := New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		restarted, returned := false, false
		explore(m, func(s *State, a Action) bool {
			returned = returned || a.Kind == NodeReturn
			if a.Kind == KubeletStartPod && s.PodPhase[a.Args[1]] == Running {
				restarted = true
			}
			return true
		})
		if restarted != (returns == 1) || returned != (returns == 1) {
			t.Errorf("NodesReturn=%d: node returned %v, a Running pod restarted %v", returns, returned, restarted)
		}
	}
}

// With DeploymentLag the deployment controller scales an old ReplicaSet
// down on a count of available pods that is not the pods' current one; it
// never does without.
func TestDeploymentControllerActsOnItsLaggingCount(t *testing.T) {
	for _, lag := range []int{0, 1} {
		m := loadSmall(t)
		cfg := m.Config()
		cfg.DeploymentLag, cfg.MaxCrashes, cfg.MaxWatchDrops, cfg.MaxNodeFailures, cfg.MaxEvictions, cfg.MaxDeletes = lag, 0, 0, 0, 0, 0
		cfg.Replicas, cfg.Capacity, cfg.PodsPerRS, cfg.ReadinessProbes, cfg.MaxProbeFailures = 1, 2, 2, 1, 1
		m, err := New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		stale := false
		explore(m, func(s *State, a Action) bool {
			if a.Kind == DeploymentScaleDown {
				d, v := int(a.Args[0]), int(a.Args[1])
				if m.AvailablePods(s, d, v) != m.AvailablePodsNow(s, d, v) {
					stale = true
				}
			}
			return true
		})
		if stale != (lag == 1) {
			t.Errorf("DeploymentLag=%d: a scale-down on a stale count: %v", lag, stale)
		}
	}
}

// With DeploymentLag the deployment controller writes ReplicaSets from a
// view of the deployment that is not the current one (a spec change, a
// scale or a deletion it has not seen yet), and it never has an observed
// generation on a stale view: depObserved implies its view is current, so
// DEP-2 stated over its view is stated over the store's replicas once the
// generation is observed. (Random behaviours: the exhaustive search of this
// configuration is too large for a unit test without symmetry.)
func TestDeploymentControllerActsOnItsLaggingDeploymentView(t *testing.T) {
	m := loadSmall(t)
	cfg := m.Config()
	cfg.DeploymentLag, cfg.MaxCrashes, cfg.MaxWatchDrops, cfg.MaxNodeFailures, cfg.MaxEvictions = 1, 0, 0, 0, 0
	cfg.MaxUnavailable, cfg.MaxScales, cfg.MaxDeletes = 1, 1, 1
	m, err := New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	staleWrite := map[Kind]bool{}
	r := rand.New(rand.NewPCG(7, 11))
	for walk := 0; walk < 3000; walk++ {
		s := m.Init()[0]
		for step := 0; step < 60; step++ {
			for d := 1; d <= cfg.NumDeployments; d++ {
				if s.DepObserved[d] && m.DCSees(&s, d) != DeploymentNow(&s, d) {
					t.Fatalf("deployment %d observed on a stale view:\n%s", d, strings.Join(m.Summary(&s), "\n"))
				}
			}
			var next []State
			m.Successors(&s, func(a Action, t *State) {
				switch a.Kind {
				case DeploymentCreateReplicaSet, DeploymentScaleUp, DeploymentScaleDown:
					if d := int(a.Args[0]); m.DCSees(&s, d) != DeploymentNow(&s, d) {
						staleWrite[a.Kind] = true
					}
				}
				next = append(next, *t)
			})
			if len(next) == 0 {
				break
			}
			s = next[r.IntN(len(next))]
		}
	}
	for _, k := range []Kind{DeploymentCreateReplicaSet, DeploymentScaleUp, DeploymentScaleDown} {
		if !staleWrite[k] {
			t.Errorf("%s never acts on a stale view of the deployment", k)
		}
	}
}

// With GCLag the garbage collector removes the foregroundDeletion
// finalizer of a ReplicaSet whose pod exists but is not yet in its graph
// (upstream's blocking dependents come from the graph); without it, never.
func TestGarbageCollectorActsOnItsLaggingGraph(t *testing.T) {
	for _, lag := range []int{0, 1} {
		cfg, err := LoadConfig("Small")
		if err != nil {
			t.Fatal(err)
		}
		cfg.GCLag, cfg.MaxDeletes = lag, 1
		m, err := New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		early := false
		states := explore(m, func(s *State, a Action) bool {
			if a.Kind == GCRemoveReplicaSet {
				for k := 1; k <= cfg.PodsPerRS; k++ {
					if s.PodState[Pod(int(a.Args[0]), int(a.Args[1]), k)] != Absent {
						early = true
					}
				}
			}
			return true
		})
		if early != (lag == 1) {
			t.Errorf("GCLag=%d: a ReplicaSet's finalizer removed while its pod exists: %v (%d states)", lag, early, len(states))
		}
	}
}

// TestMutantConfig: a mutant's own configuration is Small with its
// constants changed, named after it; an unknown name is refused.
func TestMutantConfig(t *testing.T) {
	cfg, err := MutantConfig(MutantKubeletFailsPodBeforeStop)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "mutant-"+MutantKubeletFailsPodBeforeStop || cfg.MaxEvictions != 1 {
		t.Errorf("got %s with MaxEvictions %d, want mutant-%s with 1", cfg.Name, cfg.MaxEvictions, MutantKubeletFailsPodBeforeStop)
	}
	if _, err := MutantConfig("Nope"); err == nil || !strings.Contains(err.Error(), "no such mutant") {
		t.Errorf("unknown mutant: %v", err)
	}
}
