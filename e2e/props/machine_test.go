package props

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/faults"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/model"
)

// Budgets. The defaults keep `go test ./e2e/props/` within two minutes on
// a 2-core machine; PROPS_CHECKS (runs per rapid.Check), PROPS_STEPS
// (actions per run) and PROPS_DURATION (repeat rapid.Check with fresh
// seeds until this much time has passed, e.g. 1h) set a longer campaign.
const (
	numNodes    = 3
	nodeMaxPods = 5
	// convergeTimeout bounds how long the cluster may take, once faults
	// stop, to reach a stable state (LIVE-1..3). Generous: the machine is
	// shared.
	convergeTimeout = 90 * time.Second
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	flag.Parse()
	// rapid's own flags win when given on the command line.
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.checks"] {
		_ = flag.Set("rapid.checks", strconv.Itoa(envInt("PROPS_CHECKS", 3)))
	}
	os.Exit(m.Run())
}

// maxSteps is the most actions one run draws (PROPS_STEPS, default 10);
// every action checks the safety properties after its settle.
func maxSteps() int { return envInt("PROPS_STEPS", 10) }

// stats are the campaign's totals, printed at the end.
var stats struct {
	runs, actions, faults, observations, modelStates, unrepresentable, changes atomic.Int64
	traceValidated, traceSkipped, traceLongest, traceExplored, traceUnused     atomic.Int64
	traceOverBudget                                                            atomic.Int64
	lagFaults, crashes                                                         atomic.Int64
	// the history window's measurements: the longest a watch event took
	// to reach a component after it reached the recorder, the slowest
	// component write (nanoseconds), and the runs whose window had to be
	// wider than LagWindow
	maxViewLag, maxWriteLatency, widenedRuns atomic.Int64
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// testCluster is the harness's cluster: API server and etcd from
// impl/cluster, and components (controller manager, scheduler, kubelets)
// the harness runs itself so that it can crash and restart each.
type testCluster struct {
	*cluster.Cluster
	comps *components
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	return startClusterWith(t, nil)
}

// startClusterWith starts the harness's cluster; etcdServers, when set, are
// external etcd endpoints (a multi-member cluster).
func startClusterWith(t *testing.T, etcdServers []string) *testCluster {
	t.Helper()
	faults.ArmTransports() // component clients get watch-fault hooks (lagWatch)
	c, err := cluster.Start(context.Background(), cluster.Config{
		DataDir:            t.TempDir(),
		BindAddress:        "127.0.0.1:0",
		EtcdServers:        etcdServers,
		WatchCache:         true,
		CompactionInterval: -1,
		UnsafeNoFsync:      true,
	})
	if err != nil {
		t.Fatalf("starting cluster: %v", err)
	}
	comps, err := startComponents(c)
	if err != nil {
		_ = c.Stop()
		t.Fatalf("starting components: %v", err)
	}
	return &testCluster{Cluster: c, comps: comps}
}

// Stop stops the components, then the API server and etcd.
func (tc *testCluster) Stop() error {
	tc.comps.stop()
	return tc.Cluster.Stop()
}

// Runtimes are the kubelets' runtimes by node name.
func (tc *testCluster) Runtimes() map[string]kruntime.Runtime { return tc.comps.runtimes }

// TestPipelineProperties is the state-machine property test: rapid drives
// one cluster (reused across runs, one namespace per run) with user
// operations and node faults; after each action every safety property is
// checked on observed states and on every recorded change; at the end of a
// run faults stop and the cluster must converge (LIVE-1..3).
func TestPipelineProperties(t *testing.T) {
	if testing.Short() {
		return
	}
	before := runtime.NumGoroutine()
	c := startCluster(t)
	// rapid reports a failure with t.Fatal: the summary, the cluster's stop
	// (its embedded etcd must not outlive the test's directory) and the
	// goroutine check run in any case.
	defer func() {
		delivered, hidden := faults.WatchStats()
		t.Logf("summary: %d runs, %d actions, %d faults injected, %d observed states checked (%d as model states against %d invariants, %d outside the model's bounds), %d changes checked against step properties; trace validation: %d observed steps explained by model actions (longest path %d actions, at most %d states searched for one step; %d observations not used: changing while listed), %d steps skipped (trace restarted across a user operation the model does not have), %d steps not checked (farther apart than PROPS_TRACE_FAIL_DISTANCE and not connected within the search budget), 0 unexplained; %d watch-lag faults (%d watch events delivered through fault hooks, %d intermediate states hidden); %d component crashes (%d component restarts; crash points hit: %v); history window: watch events reached the controller manager and the scheduler at most %s after the recorder, their writes took at most %s, window %s (widened in %d runs)",
			stats.runs.Load(), stats.actions.Load(), stats.faults.Load(), stats.observations.Load(),
			stats.modelStates.Load(), countInvariants(), stats.unrepresentable.Load(), stats.changes.Load(),
			stats.traceValidated.Load(), stats.traceLongest.Load(), stats.traceExplored.Load(), stats.traceUnused.Load(), stats.traceSkipped.Load(), stats.traceOverBudget.Load(),
			stats.lagFaults.Load(), delivered, hidden,
			stats.crashes.Load(), c.comps.restarts.Load(), faults.CrashHits(),
			time.Duration(stats.maxViewLag.Load()).Round(time.Millisecond), time.Duration(stats.maxWriteLatency.Load()).Round(time.Millisecond),
			max(LagWindow, time.Duration(stats.maxViewLag.Load()+stats.maxWriteLatency.Load())+time.Second).Round(time.Millisecond), stats.widenedRuns.Load())
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
		waitGoroutines(t, before)
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
	var run atomic.Int64
	prop := func(rt *rapid.T) {
		h := newHarness(rt, c, client, m, runtimes, fmt.Sprintf("props-%d", run.Add(1)))
		defer h.close()
		h.create(rt) // every run starts with a deployment
		acts := h.actions()
		names := make([]string, 0, len(acts))
		for n := range acts {
			names = append(names, n)
		}
		sort.Strings(names)
		steps := rapid.IntRange(1, maxSteps()).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			acts[rapid.SampledFrom(names).Draw(rt, "action")](rt)
		}
		h.converge()
	}
	deadline := time.Now()
	if d, err := time.ParseDuration(os.Getenv("PROPS_DURATION")); err == nil {
		deadline = deadline.Add(d)
	}
	// PROPS_SEED makes a campaign's draws reproducible: round r runs
	// rapid.Check with seed PROPS_SEED + r*1000 (its runs take the seeds
	// after it), unless -rapid.seed was given.
	base, _ := strconv.ParseUint(os.Getenv("PROPS_SEED"), 10, 64)
	seedFlag := flag.Lookup("rapid.seed")
	for round := uint64(0); ; round++ {
		if base != 0 && seedFlag != nil && !flagGiven("rapid.seed") {
			seed := base + round*1000
			_ = seedFlag.Value.Set(strconv.FormatUint(seed, 10))
			t.Logf("round %d: -rapid.seed=%d", round, seed)
		}
		rapid.Check(t, prop)
		if t.Failed() || !time.Now().Before(deadline) {
			break
		}
		t.Logf("progress: %d runs, %d actions, %d faults, %d observations (%d model states, %d outside the model's bounds), %d changes recorded, %d steps validated",
			stats.runs.Load(), stats.actions.Load(), stats.faults.Load(), stats.observations.Load(),
			stats.modelStates.Load(), stats.unrepresentable.Load(), stats.changes.Load(), stats.traceValidated.Load())
	}
}

// flagGiven reports whether the command line set the flag.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// newTraceValidator is the harness's validator: paths of up to
// PROPS_TRACE_DEPTH (default 100) model actions, searching at most
// PROPS_TRACE_STATES (default 300000) states per observed step; a step the
// search cannot connect within that is a failure when its observable
// distance is at most PROPS_TRACE_FAIL_DISTANCE (default 16), else it is
// counted as not checked.
func newTraceValidator(m *model.Model) *TraceValidator {
	return &TraceValidator{Model: m, MaxDepth: envInt("PROPS_TRACE_DEPTH", 100), MaxStates: envInt("PROPS_TRACE_STATES", 300000),
		FailDistance: envInt("PROPS_TRACE_FAIL_DISTANCE", 16)}
}

// waitGoroutines fails the test when goroutines the cluster started are
// still running a while after it stopped.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before+5 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines after stop, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// harness is one rapid run: a namespace, its recorder, what the user did.
type harness struct {
	t        *rapid.T
	c        *testCluster
	client   kubernetes.Interface
	ns       string
	obs      *Observer
	abs      *Abstraction
	rec      *Recorder
	script   []string        // the actions so far, readable
	deps     []string        // created deployments, in order
	live     map[string]bool // deployments not deleted
	updated  map[string]bool // deployments whose image was updated
	paused   map[string]bool
	cordoned map[string]bool
	down     map[string]bool   // nodes whose kubelet is paused
	lagging  map[string]func() // component -> clears its watch fault
	tainted  map[string]bool   // nodes with the probe NoExecute taint
	scaled   map[string]bool   // deployments the user scaled (DEP-2 suspects of theirs are not judged)
	disarm   []func()          // armed crash points
	trace    *TraceValidator
	// traceFrom is the snapshot of the trace's last state (saved with a
	// trace-validation failure).
	traceFrom model.Snapshot
	// traceEarlier are the snapshots before it (the deployment
	// controller's possible stale views, saved with a failure too).
	traceEarlier []model.Snapshot
	side         string // the namespace of probes (created on first use)
	// availabilityFaultAt is when the run first took availability away
	// (node failure, pod deletion, eviction by the probe taint, kubelet
	// crash): DEP-2 suspects after it are not judged.
	availabilityFaultAt time.Time
	// cmCrashed: the controller manager crashed in this run; a pod
	// creation in flight at its crash may land after its successor
	// counted, so RS-1 is not judged.
	cmCrashed      atomic.Bool
	kubeletCrashed atomic.Bool
	// viewLag and writeLatency are the run's measurements for the history
	// window (historyWindow); stopDeliveries ends the measuring.
	viewLag, writeLatency atomic.Int64
	// longestLag describes the delivery behind a viewLag beyond LagWindow.
	lagMu          sync.Mutex
	longestLag     string
	widened        bool
	stopDeliveries func()
	// schedCrashed: the scheduler crashed in this run; a binding in
	// flight at its crash may land after its successor decided, so SCHED-2
	// is not judged at bindings.
	schedCrashed atomic.Bool
}

func newHarness(t *rapid.T, c *testCluster, client kubernetes.Interface, m *model.Model, runtimes map[string]kruntime.Runtime, ns string) *harness {
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	rec, err := StartRecorder(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	stats.runs.Add(1)
	h := &harness{t: t, c: c, client: client, ns: ns, rec: rec,
		obs:   &Observer{Client: client, Namespace: ns, Runtimes: runtimes},
		abs:   NewAbstraction(m),
		trace: newTraceValidator(m),
		live:  map[string]bool{}, updated: map[string]bool{}, paused: map[string]bool{},
		cordoned: map[string]bool{}, down: map[string]bool{}, lagging: map[string]func(){},
		tainted: map[string]bool{}, scaled: map[string]bool{}}
	h.stopDeliveries = faults.ObserveDeliveries(func(d faults.Delivery) {
		if !historyComponents[d.Component] || (d.Type != "ADDED" && d.Type != "MODIFIED" && d.Type != "DELETED") {
			return // a BOOKMARK carries the latest revision, which may be an old write's
		}
		if d.Initial {
			return // a watch-list's current state, each object with its last (maybe old) revision
		}
		if at, ok := rec.ArrivedAt(d.ResourceVersion); ok {
			lag := d.At.Sub(at)
			if lag > LagWindow && int64(lag) > h.viewLag.Load() {
				h.lagMu.Lock()
				h.longestLag = fmt.Sprintf("%s: %s %s/%s resourceVersion %s delivered %s after the recorder had it",
					d.Component, d.Type, d.Namespace, d.Name, d.ResourceVersion, lag.Round(time.Millisecond))
				h.lagMu.Unlock()
			}
			storeMax(&h.viewLag, int64(lag))
		}
	})
	return h
}

// historyComponents are the components whose decisions the history checks
// judge: the controller manager (ReplicaSet controller: RS-1; taint
// manager: GC-1) and the scheduler (SCHED-3). A kubelet's view does not
// count: a paused kubelet receives its backlog late, but it does not act
// on it while paused.
var historyComponents = map[string]bool{"controller-manager": true, "scheduler": true}

// historyWindow is how stale a component's view may have been in this run,
// derived from what the run measured: a component's cache at the moment it
// decides holds every event delivered to it, and an event reaches it at
// most viewLag after it reached the recorder; its write then reaches the
// store at most writeLatency after it was sent, and the recorder at once
// (in process). One second more covers the component's own work between
// reading its cache and sending the write. It is never less than
// LagWindow.
func (h *harness) historyWindow() time.Duration {
	for comp := range historyComponents {
		storeMax(&h.writeLatency, int64(faults.MaxWriteLatency(comp)))
	}
	lag, write := h.viewLag.Load(), h.writeLatency.Load()
	storeMax(&stats.maxViewLag, lag)
	storeMax(&stats.maxWriteLatency, write)
	w := time.Duration(lag+write) + time.Second
	if w > LagWindow && !h.widened {
		h.widened = true
		stats.widenedRuns.Add(1)
	}
	return w
}

// close restores the shared cluster for the next run: nodes back up and
// schedulable, the run's namespace deleted.
func (h *harness) close() {
	ctx := context.Background()
	h.stopFaults()
	h.stopDeliveries()
	h.lagMu.Lock()
	if h.longestLag != "" {
		h.t.Logf("run %s: the history window widened: %s", h.ns, h.longestLag)
	}
	h.lagMu.Unlock()
	h.rec.Stop()
	stats.changes.Add(int64(h.rec.Count()))
	stats.traceValidated.Add(int64(h.trace.Validated))
	stats.traceSkipped.Add(int64(h.trace.Skipped))
	stats.traceOverBudget.Add(int64(h.trace.OverBudget))
	storeMax(&stats.traceLongest, int64(h.trace.Longest))
	storeMax(&stats.traceExplored, int64(h.trace.Explored))
	policy := metav1.DeletePropagationBackground
	_ = h.client.CoreV1().Namespaces().Delete(ctx, h.ns, metav1.DeleteOptions{PropagationPolicy: &policy})
	if h.side != "" {
		_ = h.client.CoreV1().Namespaces().Delete(ctx, h.side, metav1.DeleteOptions{PropagationPolicy: &policy})
	}
}

// stopFaults disarms crash points and waits for crashed components to be
// back, resumes failed nodes, uncordons cordoned ones, removes probe taints
// and ends watch lag.
func (h *harness) stopFaults() {
	for _, disarm := range h.disarm {
		disarm()
	}
	h.disarm = nil
	if err := h.c.comps.waitRunning(time.Minute); err != nil {
		h.t.Fatalf("after faults stopped: %v", err)
	}
	for comp, clear := range h.lagging {
		clear()
		delete(h.lagging, comp)
	}
	for _, n := range sortedKeys(h.tainted) {
		h.setTaint(n, false)
		delete(h.tainted, n)
	}
	for _, n := range sortedKeys(h.down) {
		h.trace.UserDid(model.NodeRecover, nodeNumber(n))
		h.c.comps.resume(n)
		delete(h.down, n)
	}
	for _, n := range sortedKeys(h.cordoned) {
		h.setUnschedulable(n, false)
		delete(h.cordoned, n)
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (h *harness) step(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.script = append(h.script, s)
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "%s: %s\n", h.ns, s)
	}
	stats.actions.Add(1)
}

// fail reports violations with the action script and the recent changes.
func (h *harness) fail(what string, vs []Violation) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s in namespace %s:\n%s\n\naction script:\n", what, h.ns, FormatViolations(vs))
	for i, s := range h.script {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, s)
	}
	b.WriteString("\nlast recorded changes (kind name type resourceVersion):\n")
	ch := h.rec.Changes()
	if len(ch) > 60 {
		ch = ch[len(ch)-60:]
	}
	for _, c := range ch {
		fmt.Fprintf(&b, "  %s %s %s rv=%s %s\n", c.Kind, c.Name, c.Type, c.ResourceVersion, c.Summary)
	}
	h.t.Fatal(b.String())
}

// check observes the cluster a few times (a short settle after the action)
// and checks every safety property on each observation and every recorded
// change.
func (h *harness) check() {
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(150 * time.Millisecond)
		}
		h.checkOnce()
	}
}

func (h *harness) observe() *Observation {
	ob, err := h.obs.Observe(context.Background())
	if err != nil {
		h.t.Fatalf("observing: %v", err)
	}
	for _, p := range h.rec.Pods() {
		h.abs.Remember(p)
	}
	return ob
}

func (h *harness) checkOnce() {
	ob := h.observe()
	stats.observations.Add(1)
	vs := CheckObservation(ob)
	if s, ok := ModelState(h.abs, ob, h.down); ok {
		stats.modelStates.Add(1)
		vs = append(vs, CheckState(h.abs.Model, &s)...)
		if len(h.tainted) > 0 {
			// Evictions by the probe taint are no model action: the
			// trace restarts after it is gone.
			h.trace.Reset()
		} else if ob.UnstableSandboxes > 0 || !ob.Consistent {
			// not one complete abstract state: validate across it
			stats.traceUnused.Add(1)
		} else {
			sn, _ := h.abs.Snapshot(ob, h.down)
			over := h.trace.OverBudget
			msg := h.trace.Step(s)
			if h.trace.OverBudget > over {
				file, _ := SaveTraceStep(h.traceFrom, sn, h.trace.LastAllowed, h.traceEarlier)
				h.t.Logf("trace step over the search budget (observable distance %d), not checked: %s", h.trace.LastDistance, file)
			}
			if msg != "" {
				if file, err := SaveTraceStep(h.traceFrom, sn, h.trace.LastAllowed, h.traceEarlier); err == nil {
					msg += "\n(the two observed states: " + file + "; copy it to testdata/trace-steps/ to keep it as a regression)"
				}
				vs = append(vs, Violation{ID: "TRACE", Detail: msg})
			}
			if h.traceFrom.Deployments != nil {
				h.traceEarlier = append(h.traceEarlier, h.traceFrom)
				if len(h.traceEarlier) > 6 {
					h.traceEarlier = h.traceEarlier[1:]
				}
			}
			h.traceFrom = sn
		}
	} else {
		stats.unrepresentable.Add(1)
		h.trace.Reset()
	}
	vs = append(vs, h.rec.Violations()...)
	h.rec.SetWindow(h.historyWindow())
	vs = append(vs, h.rec.HistoryViolations(!h.cmCrashed.Load(), !h.schedCrashed.Load())...)
	vs = append(vs, h.dep2()...)
	if len(vs) > 0 {
		h.fail("safety violation", vs)
	}
}

func (h *harness) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"create":         h.create,
		"scale":          h.scale,
		"updateImage":    h.updateImage,
		"pauseResume":    h.pauseResume,
		"delete":         h.delete,
		"deletePod":      h.deletePod,
		"cordonUncordon": h.cordon,
		"failRecover":    h.failNode,
		"rebindPod":      h.rebindPod,
		"compactEtcd":    h.compactEtcd,
		"recreatePod":    h.recreatePod,
		"lagWatch":       h.lagWatch,
		"taintNode":      h.taintNode,
		"armCrashPoint":  h.armCrashPoint,
		"crashComponent": h.crashComponent,
		"probeWatch":     h.probeWatchResume,
		"probeList":      h.probeQuorumList,
		"probeGC":        h.probeGC,
		"probeNeverPod":  h.probeNeverPod,
	}
}

func (h *harness) liveDeployments() []string {
	var out []string
	for _, d := range h.deps {
		if h.live[d] {
			out = append(out, d)
		}
	}
	return out
}

func (h *harness) create(t *rapid.T) {
	if len(h.deps) >= 2 { // the model holds two deployments
		return
	}
	h.createDeployment(t, int32(rapid.IntRange(1, 4).Draw(t, "replicas")))
}

// createDeployment creates the next deployment (d1, d2) with replicas pods
// of image app:v1.
func (h *harness) createDeployment(t *rapid.T, replicas int32) {
	name := fmt.Sprintf("d%d", len(h.deps)+1)
	one := intstr.FromInt32(1)
	grace := int64(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas:             &replicas,
			RevisionHistoryLimit: ptr(int32(0)),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: name}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{AppLabel: name}},
				Spec: v1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []v1.Container{{Name: "app", Image: "registry.example/app:v1"}},
					Tolerations:                   probeTolerations(name),
				},
			},
		},
	}
	h.step("create deployment %s replicas=%d image=app:v1", name, replicas)
	if num, err := h.abs.deployment(name); err == nil {
		h.trace.UserDid(model.CreateDeployment, num)
		// The model creates a deployment with Replicas (4) replicas; a
		// smaller count is a scale right after.
		h.trace.UserDid(model.ScaleDeployment, num, int(replicas))
	}
	if _, err := h.client.AppsV1().Deployments(h.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	h.deps = append(h.deps, name)
	h.live[name] = true
	h.check()
}

func ptr[T any](v T) *T { return &v }

// update applies f to deployment name with retries on conflict.
func (h *harness) update(name string, f func(*appsv1.Deployment)) {
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		d, err := h.client.AppsV1().Deployments(h.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			h.t.Fatalf("getting %s: %v", name, err)
		}
		f(d)
		if _, err = h.client.AppsV1().Deployments(h.ns).Update(ctx, d, metav1.UpdateOptions{}); err == nil {
			return
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			h.t.Fatalf("updating %s: %v", name, err)
		}
	}
}

func (h *harness) pickDeployment(t *rapid.T) string {
	live := h.liveDeployments()
	if len(live) == 0 {
		return ""
	}
	return rapid.SampledFrom(live).Draw(t, "deployment")
}

func (h *harness) scale(t *rapid.T) {
	name := h.pickDeployment(t)
	if name == "" {
		return
	}
	replicas := int32(rapid.IntRange(0, 4).Draw(t, "replicas"))
	h.step("scale %s to %d", name, replicas)
	h.scaled[name] = true
	h.trace.UserDid(model.ScaleDeployment, h.abs.deps[name], int(replicas))
	h.update(name, func(d *appsv1.Deployment) { d.Spec.Replicas = &replicas })
	h.check()
}

func (h *harness) updateImage(t *rapid.T) {
	name := h.pickDeployment(t)
	if name == "" {
		return
	}
	if h.updated[name] { // the model holds two template versions
		return
	}
	h.step("update image of %s to app:v2 (rolling update)", name)
	h.trace.UserDid(model.UpdateDeployment, h.abs.deps[name])
	h.update(name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "registry.example/app:v2" })
	h.updated[name] = true
	h.check()
}

func (h *harness) pauseResume(t *rapid.T) {
	name := h.pickDeployment(t)
	if name == "" {
		return
	}
	p := !h.paused[name]
	if p {
		h.step("pause %s", name)
	} else {
		h.step("resume %s", name)
	}
	h.trace.UserTouched(h.abs.deps[name])
	h.update(name, func(d *appsv1.Deployment) { d.Spec.Paused = p })
	h.paused[name] = p
	h.check()
}

func (h *harness) delete(t *rapid.T) {
	name := h.pickDeployment(t)
	if name == "" {
		return
	}
	policy := rapid.SampledFrom([]metav1.DeletionPropagation{
		metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan,
	}).Draw(t, "policy")
	h.step("delete %s propagationPolicy=%s", name, policy)
	switch policy {
	case metav1.DeletePropagationOrphan:
		h.abs.Orphaned[name] = true
		h.trace.Reset() // orphaned objects leave the abstraction
	case metav1.DeletePropagationForeground:
		h.trace.UserDid(model.DeleteDeployment, h.abs.deps[name], 1)
	default:
		h.trace.UserDid(model.DeleteDeployment, h.abs.deps[name], 0)
	}
	if err := h.client.AppsV1().Deployments(h.ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
	h.live[name] = false
	h.check()
}

func (h *harness) deletePod(t *rapid.T) {
	pods, err := h.client.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*v1.Pod{}
	for i, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
			byName[p.Name] = &pods.Items[i]
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	name := rapid.SampledFrom(names).Draw(t, "pod")
	h.step("delete pod %s", name)
	h.availabilityFault()
	// A user deleting a pod is not a model action: the trace validator
	// takes it as one step of the path to the next observed state.
	if d, v, ok := h.abs.PodGroup(byName[name]); ok {
		h.trace.UserDeletedPod(d, v)
	} else {
		h.trace.Reset()
	}
	if err := h.client.CoreV1().Pods(h.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
	h.check()
}

func (h *harness) setUnschedulable(node string, u bool) {
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		n, err := h.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			h.t.Fatalf("getting node %s: %v", node, err)
		}
		n.Spec.Unschedulable = u
		if _, err = h.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err == nil {
			return
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			h.t.Fatalf("updating node %s: %v", node, err)
		}
	}
}

// nodeNumber is node-N's number in the model.
func nodeNumber(name string) int {
	n, _ := NodeNumber(name)
	return n
}

func nodeName(t *rapid.T) string {
	return fmt.Sprintf("node-%d", rapid.IntRange(1, numNodes).Draw(t, "node"))
}

func (h *harness) cordon(t *rapid.T) {
	n := nodeName(t)
	c := !h.cordoned[n]
	if c {
		h.step("cordon %s", n)
	} else {
		h.step("uncordon %s", n)
	}
	h.setUnschedulable(n, c)
	h.cordoned[n] = c
	stats.faults.Add(1)
	h.check()
}

func (h *harness) failNode(t *rapid.T) {
	n := nodeName(t)
	if h.down[n] {
		h.step("recover %s (kubelet resumes)", n)
		h.trace.UserDid(model.NodeRecover, nodeNumber(n))
		h.c.comps.resume(n)
		h.down[n] = false
	} else {
		if len(sortedKeys(h.down)) >= 1 { // keep capacity for every deployment
			return
		}
		h.step("fail %s (kubelet stops: no heartbeats, no syncs)", n)
		h.trace.UserDid(model.NodeFail, nodeNumber(n))
		h.availabilityFault()
		h.c.comps.pause(n)
		h.down[n] = true
		stats.faults.Add(1)
	}
	h.check()
}

// boundPod draws a bound, non-terminating pod.
func (h *harness) boundPod(t *rapid.T) *v1.Pod {
	pods, err := h.client.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bound []v1.Pod
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			bound = append(bound, p)
		}
	}
	if len(bound) == 0 {
		return nil
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].Name < bound[j].Name })
	i := rapid.IntRange(0, len(bound)-1).Draw(t, "pod")
	return &bound[i]
}

// rebindPod is a second scheduler trying to bind a bound pod elsewhere
// (SCHED-1, STORE-3): the API server must refuse with Conflict; were it to
// accept, the recorder would also see the re-binding.
func (h *harness) rebindPod(t *rapid.T) {
	p := h.boundPod(t)
	if p == nil {
		return
	}
	target := nodeName(t)
	h.step("bind already bound pod %s (on %s) to %s", p.Name, p.Spec.NodeName, target)
	b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID},
		Target: v1.ObjectReference{Kind: "Node", Name: target}}
	err := h.client.CoreV1().Pods(h.ns).Bind(context.Background(), b, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		h.fail("binding a bound pod", []Violation{{ID: "SCHED-1", Detail: fmt.Sprintf(
			"binding bound pod %s (uid %s, on %s) to %s returned %v, want Conflict", p.Name, p.UID, p.Spec.NodeName, target, err)}})
	}
	h.check()
}

// recreatePod creates a pod under an existing pod's name (STORE-2): the API
// server must refuse with AlreadyExists and leave the pod as it was.
func (h *harness) recreatePod(t *rapid.T) {
	p := h.boundPod(t)
	if p == nil {
		return
	}
	h.step("create a fresh pod under existing name %s", p.Name)
	fresh := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: p.Labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: image(&p.Spec)}}}}
	created, err := h.client.CoreV1().Pods(h.ns).Create(context.Background(), fresh, metav1.CreateOptions{})
	if err == nil {
		// Legal only if the old pod was removed in the meantime; the
		// fresh pod (no owner) is no model object.
		h.trace.Reset()
		zero := int64(0)
		_ = h.client.CoreV1().Pods(h.ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		deadline := time.Now().Add(10 * time.Second)
		for !h.rec.Deleted(string(p.UID)) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if !h.rec.Deleted(string(p.UID)) {
			h.fail("creating a pod under an existing name", []Violation{{ID: "STORE-2", Detail: fmt.Sprintf(
				"creating pod %s while uid %s exists succeeded (new uid %s), want AlreadyExists", p.Name, p.UID, created.UID)}})
		}
	} else if !apierrors.IsAlreadyExists(err) {
		h.fail("creating a pod under an existing name", []Violation{{ID: "STORE-2", Detail: fmt.Sprintf(
			"creating pod %s while uid %s exists returned %v, want AlreadyExists", p.Name, p.UID, err)}})
	}
	h.check()
}

// compactEtcd compacts etcd's history up to its current revision: a
// component whose watch breaks after this must relist (410 Gone) rather
// than resume from a compacted resourceVersion.
func (h *harness) compactEtcd(t *rapid.T) {
	ctx := context.Background()
	resp, err := h.c.EtcdClient.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatalf("reading etcd revision: %v", err)
	}
	h.step("compact etcd at revision %d", resp.Header.Revision)
	if _, err := h.c.EtcdClient.Compact(ctx, resp.Header.Revision); err != nil && !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("compacting etcd: %v", err)
	}
	stats.faults.Add(1)
	h.check()
}

// watchComponents are the client names (impl/cluster) whose watches
// lagWatch can slow down.
var watchComponents = []string{"controller-manager", "scheduler", "node-1", "node-2", "node-3"}

// lagWatch is the stale-state and unobserved-state fault: one component's
// watch events arrive up to two seconds late and a MODIFIED event
// superseded by a later one of the same object while waiting is never
// delivered (the component never sees that intermediate state). Drawn
// again for a lagging component, it ends the lag.
func (h *harness) lagWatch(t *rapid.T) {
	comp := rapid.SampledFrom(watchComponents).Draw(t, "component")
	if clear, ok := h.lagging[comp]; ok {
		h.step("%s's watches catch up", comp)
		clear()
		delete(h.lagging, comp)
		h.check()
		return
	}
	delay := time.Duration(rapid.IntRange(2, 20).Draw(t, "delay")) * 100 * time.Millisecond
	h.step("%s's watches lag %s, superseded updates dropped", comp, delay)
	h.lagging[comp] = faults.SetWatchFault(comp, faults.WatchFault{Delay: delay, Coalesce: true})
	stats.faults.Add(1)
	stats.lagFaults.Add(1)
	h.check()
}
