package props

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/model"
)

// mutantScenarios drive the harness through the code path each catalog
// mutation breaks. The harness is the same as TestPipelineProperties'
// (same checks after every action, same convergence check); only the
// choice of actions is directed so that the budget stays small.
var mutantScenarios = map[string]func(h *harness, t *rapid.T){
	faults.BindingOverwritesBinding: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 2)
		h.waitBound(t)
		h.rebindPod(t)
	},
	faults.CreateOverwritesExistingKey: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 2)
		h.waitBound(t)
		h.recreatePod(t)
	},
	faults.KubeletReusesIP: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 4) // four pods on three nodes: two share a node
		h.waitBound(t)
		h.check()
	},
	faults.DeploymentIgnoresMaxSurge: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 4)
		h.waitBound(t)
		// With every node cordoned the new pods stay Pending, so the
		// rollout holds still where maxSurge bounds it.
		h.cordonAll()
		h.updateImage(t)
		h.check()
	},
	faults.DeploymentCountsUnavailable: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 4)
		h.waitReady(t, 4)
		h.cordonAll()
		h.updateImage(t)
		h.check()
	},
	faults.ReplicaSetIgnoresExpectations: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 1)
		h.waitReady(t, 1)
		// The controller manager sees every event two seconds late (not
		// coalesced): the second scale-up reaches the ReplicaSet
		// controller before its cache shows the pods of the first.
		h.step("controller-manager's watches lag 2s")
		h.lagging["controller-manager"] = faults.SetWatchFault("controller-manager", faults.WatchFault{Delay: 2 * time.Second})
		h.scaleTo("d1", 3)
		time.Sleep(500 * time.Millisecond)
		h.scaleTo("d1", 4)
		h.checkFor(8 * time.Second)
	},
	faults.SchedulerIgnoresAssumedPods: func(h *harness, t *rapid.T) {
		// One schedulable node of five pods; the scheduler sees its
		// bindings two seconds late.
		for i := 2; i <= numNodes; i++ {
			n := fmt.Sprintf("node-%d", i)
			h.step("cordon %s", n)
			h.setUnschedulable(n, true)
			h.cordoned[n] = true
		}
		h.step("scheduler's watches lag 2s")
		h.lagging["scheduler"] = faults.SetWatchFault("scheduler", faults.WatchFault{Delay: 2 * time.Second})
		h.createDeployment(t, 4)
		h.createDeployment(t, 4)
		h.checkFor(6 * time.Second)
	},
	faults.SchedulerIgnoresTaints: func(h *harness, t *rapid.T) {
		for i := 1; i < numNodes; i++ {
			n := fmt.Sprintf("node-%d", i)
			h.step("taint %s with %s:NoExecute", n, ProbeTaint.Key)
			h.setTaint(n, true)
			h.tainted[n] = true
		}
		h.checkFor(LagWindow + time.Second) // every component has seen the taints
		h.createDeployment(t, 4)
		h.checkFor(5 * time.Second)
	},
	faults.GCDeletesWithLiveOwner: func(h *harness, t *rapid.T) {
		h.probeGC(t)
	},
	faults.WatchResumeSkipsEvent: func(h *harness, t *rapid.T) {
		h.probeWatchResume(t)
	},
	faults.QuorumListFromCache: func(h *harness, t *rapid.T) {
		for i := 0; i < 5; i++ {
			h.probeQuorumList(t)
		}
	},
	faults.NodeLifecycleEvictsTolerated: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 1)
		h.createDeployment(t, 3) // d2 tolerates the probe taint
		h.waitReady(t, 4)
		for i := 1; i <= numNodes; i++ {
			n := fmt.Sprintf("node-%d", i)
			h.step("taint %s with %s:NoExecute", n, ProbeTaint.Key)
			h.setTaint(n, true)
			h.tainted[n] = true
		}
		h.checkFor(5 * time.Second)
	},
	faults.KubeletRestartsNeverPods: func(h *harness, t *rapid.T) {
		h.probeNeverPod(t)
	},
	faults.SchedulerIgnoresPodCapacity: func(h *harness, t *rapid.T) {
		// Two nodes cordoned: eight pods for one node of five.
		for i := 2; i <= numNodes; i++ {
			n := fmt.Sprintf("node-%d", i)
			h.step("cordon %s", n)
			h.setUnschedulable(n, true)
			h.cordoned[n] = true
		}
		h.createDeployment(t, 4)
		h.createDeployment(t, 4)
		h.waitBound(t)
		h.check()
	},
}

// knownSurvivors are catalog mutations the harness does not catch yet,
// with the reason. They run only when PROPS_MUTANTS names them, and count
// as survivors in the score. (None at present.)
var knownSurvivors = map[string]string{}

// scaleTo scales deployment name to n replicas.
func (h *harness) scaleTo(name string, n int32) {
	h.step("scale %s to %d", name, n)
	h.scaled[name] = true
	h.trace.UserDid(model.ScaleDeployment, h.abs.deps[name], int(n))
	h.update(name, func(d *appsv1.Deployment) { d.Spec.Replicas = &n })
}

// checkFor checks safety every 200 ms for d.
func (h *harness) checkFor(d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		h.checkOnce()
	}
}

// cordonAll cordons every node, so that new pods stay Pending.
func (h *harness) cordonAll() {
	for i := 1; i <= numNodes; i++ {
		n := fmt.Sprintf("node-%d", i)
		h.step("cordon %s", n)
		h.setUnschedulable(n, true)
		h.cordoned[n] = true
	}
}

// waitReady waits (at most 30 s) until n pods of the namespace are Ready,
// checking safety meanwhile.
func (h *harness) waitReady(t *rapid.T, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		h.checkOnce()
		ready := 0
		for _, p := range h.rec.Pods() {
			if PodReady(p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		if ready >= n {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("fewer than %d pods of namespace %s were Ready within 30s", n, h.ns)
}

// waitBound waits (at most 30 s) until the namespace has a bound pod,
// checking safety meanwhile.
func (h *harness) waitBound(t *rapid.T) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		h.checkOnce()
		for _, p := range h.rec.Pods() {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no pod of namespace %s was bound within 30s", h.ns)
}

// failureRecorder is a rapid.TB that keeps a property's failure instead of
// failing the test: a mutant run is expected to fail.
type failureRecorder struct {
	name string
	mu   sync.Mutex
	out  []string
	fail bool
}

func (r *failureRecorder) Helper()      {}
func (r *failureRecorder) Name() string { return r.name }
func (r *failureRecorder) record(failed bool, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out = append(r.out, s)
	r.fail = r.fail || failed
}
func (r *failureRecorder) Logf(format string, args ...any) {
	r.record(false, fmt.Sprintf(format, args...))
}
func (r *failureRecorder) Log(args ...any) { r.record(false, fmt.Sprint(args...)) }
func (r *failureRecorder) Skipf(format string, args ...any) {
	r.record(false, "skip: "+fmt.Sprintf(format, args...))
}
func (r *failureRecorder) Skip(args ...any) { r.record(false, "skip: "+fmt.Sprint(args...)) }
func (r *failureRecorder) SkipNow()         { r.record(false, "skip") }
func (r *failureRecorder) Errorf(format string, args ...any) {
	r.record(true, fmt.Sprintf(format, args...))
}
func (r *failureRecorder) Error(args ...any) { r.record(true, fmt.Sprint(args...)) }
func (r *failureRecorder) Fatalf(format string, args ...any) {
	r.record(true, fmt.Sprintf(format, args...))
}
func (r *failureRecorder) Fatal(args ...any) { r.record(true, fmt.Sprint(args...)) }
func (r *failureRecorder) FailNow()          { r.record(true, "FailNow") }
func (r *failureRecorder) Fail()             { r.record(true, "Fail") }
func (r *failureRecorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fail
}

func (r *failureRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.out, "\n")
}

// setFlag sets a flag for the duration of the test.
func setFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// TestMutantsAreCaught is the mutation proof of issue 6: each mutation of
// the catalog (impl/faults) is switched on in turn and the harness must
// report a violation of one of the properties the catalog says catch it
// (or a trace-validation failure). PROPS_MUTANTS limits the run to a
// comma-separated list of mutation names.
func TestMutantsAreCaught(t *testing.T) {
	if testing.Short() {
		return
	}
	setFlag(t, "rapid.checks", "2")      // a scenario is directed: two tries suffice
	setFlag(t, "rapid.shrinktime", "1s") // the scenario is short already
	setFlag(t, "rapid.nofailfile", "true")
	// PROPS_MUTANTS_BASELINE=1 runs every scenario with its mutation off:
	// each must then pass (the scenarios raise no false alarm).
	baseline := os.Getenv("PROPS_MUTANTS_BASELINE") != ""
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("PROPS_MUTANTS"), ",") {
		if n != "" {
			only[n] = true
		}
	}
	c := startCluster(t)
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	}()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(nodeMaxPods)
	if err != nil {
		t.Fatal(err)
	}
	runtimes := c.Runtimes()
	caught, total := 0, 0
	var table []string
	for i, mut := range faults.Catalog {
		if len(only) > 0 && !only[mut.Name] {
			continue
		}
		scenario := mutantScenarios[mut.Name]
		if scenario == nil {
			t.Errorf("mutation %s has no scenario", mut.Name)
			continue
		}
		total++
		if why, known := knownSurvivors[mut.Name]; known && !only[mut.Name] {
			table = append(table, fmt.Sprintf("%-40s survives (known, not run): %s", mut.Name, why))
			continue
		}
		rec := &failureRecorder{name: t.Name() + "/" + mut.Name}
		var run int
		disable := func() {}
		if !baseline {
			disable = faults.Enable(mut.Name)
		}
		rapid.Check(rec, func(rt *rapid.T) {
			run++
			h := newHarness(rt, c, client, m, runtimes, fmt.Sprintf("mutant-%d-%d", i, run))
			defer h.close()
			scenario(h, rt)
			h.converge()
		})
		disable()
		out := rec.text()
		if baseline {
			if rec.Failed() {
				t.Errorf("scenario of %s failed without the mutation:\n%s", mut.Name, out)
			}
			table = append(table, fmt.Sprintf("%-40s scenario passes unmutated: %v", mut.Name, !rec.Failed()))
			continue
		}
		by := ""
		for _, id := range append(append([]string(nil), mut.CaughtBy...), "TRACE") {
			if strings.Contains(out, id+" ") || strings.Contains(out, id+":") {
				by = id
				break
			}
		}
		switch {
		case !rec.Failed():
			if _, known := knownSurvivors[mut.Name]; !known {
				t.Errorf("mutation %s (%s) survived: the harness found no violation", mut.Name, mut.Bug)
			}
			table = append(table, fmt.Sprintf("%-40s survived", mut.Name))
		case by == "":
			t.Errorf("mutation %s (%s): the harness failed, but not on %v:\n%s", mut.Name, mut.Bug, mut.CaughtBy, out)
			table = append(table, fmt.Sprintf("%-40s failed otherwise", mut.Name))
		default:
			caught++
			table = append(table, fmt.Sprintf("%-40s caught by %s", mut.Name, by))
			if testing.Verbose() {
				t.Logf("mutation %s caught:\n%s", mut.Name, firstLines(out, 30))
			}
		}
	}
	if baseline {
		t.Logf("scenarios without their mutations:\n  %s", strings.Join(table, "\n  "))
		return
	}
	t.Logf("mutation score: %d of %d caught\n  %s", caught, total, strings.Join(table, "\n  "))
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
