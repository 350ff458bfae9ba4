package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// maxStartupNodes bounds StartupConfig.Nodes: node i gets pod CIDR
// 10.(244+i/256).(i%256).0/24, inside 10.244.0.0/14.
const maxStartupNodes = 1024

// StartupConfig configures RunStartup.
type StartupConfig struct {
	// Nodes is the number of simulated nodes (default 10, at most 1024).
	Nodes int
	// Pods is the number of pods created (default 20).
	Pods int
	// Rate is the pod arrival rate per second (default 100).
	Rate float64
	// NodeCPU, NodeMemory and NodeMaxPods are each node's capacity
	// (defaults 4, 32Gi, 110: `kubeproof up`'s).
	NodeCPU, NodeMemory string
	NodeMaxPods         int64
	// UnsafeNoFsync turns fsync off in the embedded etcd (tests).
	UnsafeNoFsync bool
	// Timeout bounds the wait for nodes to be Ready and for pods to be
	// Running (default 10 min).
	Timeout time.Duration
	// Settle is how long memory is left to settle before each reading,
	// and between the MemoryReadings readings of which the lowest live
	// heap is kept (defaults 2 s and 4).
	Settle         time.Duration
	MemoryReadings int
	// SkipControl skips the control run (UpMemory) that memory "beyond
	// the API server's own share" is measured against; ControlBinary is
	// this binary, which runs the control in a process of its own (empty:
	// in this process, after the full run).
	SkipControl   bool
	ControlBinary string
	// HeapProfile, if set, is a file the heap profile is written to once
	// every pod is Running (go tool pprof -sample_index=inuse_space); the
	// process's CPU profile from the first pod created to the last one
	// Running goes next to it, to PATH.cpu, and each pod's timeline (when
	// its create was sent, relative to the first, and its create→bound and
	// create→Running latencies) to PATH.pods.csv. The heap profile once
	// every node is Ready goes to PATH.nodes, and the control run's (see
	// UpMemory) to PATH.control.nodes and PATH.control, so that what the
	// pods cost can be compared by component (go tool pprof -diff_base).
	// The goroutines, grouped by stack (what holds the goroutine stacks
	// class), go next to each heap profile of the full run, to
	// PATH.nodes.goroutines and PATH.goroutines.
	HeapProfile string
	// CPUProfile, if set, is a file the process's CPU profile from the
	// first pod created to the last one Running is written to, and each
	// pod's timeline to CPUProfile.pods.csv, without HeapProfile's finer
	// heap sampling (whose bookkeeping costs CPU of its own). With
	// HeapProfile and no CPUProfile the CPU profile goes to
	// HeapProfile.cpu.
	CPUProfile string
	// CPUProfileEvery, if positive, cuts CPUProfile into windows of this
	// width from the first pod created: CPUProfile.000, CPUProfile.001, …
	// (no CPUProfile itself), so that early and late windows of a run can
	// be classified apart (go tool pprof merges them back).
	CPUProfileEvery time.Duration
	// Idle, if positive, keeps the cluster this long after every pod is
	// Running, with no arrivals, and reports the process's cores then
	// (StartupResult.Idle): the steady cost of the pods already running.
	// The CPU profile (its windows) goes on through it.
	Idle time.Duration
	// GCHeapFloorPerNode is `kubeproof up --gc-heap-floor-per-node`: the
	// process keeps its heap goal at least this many bytes per node while
	// its live heap is small (sim.ApplyHostGCPolicy; 0: no floor).
	GCHeapFloorPerNode uint64
	// Progress, if set, is called about once a second.
	Progress func(Progress)
	Logger   *slog.Logger

	// gcPercent is the GC percent the full run set (RunStartup), which
	// the control process takes too (controlRequest.GCPercent).
	gcPercent int
}

// StartupResult is one pod-startup measurement.
type StartupResult struct {
	Nodes   int     `json:"nodes"`
	Pods    int     `json:"pods"`
	Rate    float64 `json:"rate"`
	Running int     `json:"running"`
	Ready   int     `json:"ready"`
	// CreateToRunning and CreateToReady run from the moment the create
	// request was sent to the moment a pod watch first delivered the pod
	// with phase Running, or with condition Ready=True. (Measured from the
	// client's clock, because creationTimestamp has 1 s resolution.)
	CreateToRunning Latencies `json:"createToRunning"`
	CreateToReady   Latencies `json:"createToReady"`
	// CreateToBound runs from the create to the moment the watch first
	// delivered the pod with spec.nodeName set: the scheduler's share of
	// create→Running (the rest is the kubelet's and its status write).
	CreateToBound Latencies `json:"createToBound"`
	// RunningCDF is create→Running at every percentile 0, 1, …, 100 (the
	// latency CDF the charts draw).
	RunningCDF []time.Duration `json:"runningCDF,omitempty"`
	// Memory: live heap after a forced GC, and VmRSS, of the one process
	// running etcd, the API server, controller manager, scheduler and every
	// simulated kubelet, read before the cluster starts, once every node
	// is Ready, and once every pod is Running.
	HeapBefore, HeapAfterNodes, HeapAfterPods uint64
	RSSBefore, RSSAfterNodes, RSSAfterPods    int64
	// HeapObjectsAfterNodes and HeapObjectsAfterPods are the heap objects
	// at the nodes' and the pods' readings (/gc/heap/objects:objects): the
	// collector marks objects and follows pointers, so the work of a cycle
	// goes with them as much as with the bytes.
	HeapObjectsAfterNodes, HeapObjectsAfterPods uint64 `json:",omitempty"`
	// HeapPerNode = (HeapAfterNodes-HeapBefore)/Nodes and HeapPerPod =
	// (HeapAfterPods-HeapAfterNodes)/Pods: everything a node or pod costs
	// the whole process, the API server's watch cache, etcd and the other
	// components' informers included (per node also the whole control
	// plane's start); UpMemory separates the API server's share.
	HeapPerNode float64 `json:"heapPerNode"`
	HeapPerPod  float64 `json:"heapPerPod"`
	RSSPerNode  float64 `json:"rssPerNode"`
	RSSPerPod   float64 `json:"rssPerPod"`
	// Throttled counts the API server's 429 answers (max requests in
	// flight) during the run, by "VERB resource[/subresource]": each
	// costs its client a retry after a second.
	Throttled map[string]int `json:"throttled,omitempty"`
	// ClosedWatchers counts, by resource, the watches the API server's
	// watch cache closed during the run because they fell behind its
	// events (apiserver_terminated_watchers_total): each makes its client
	// watch again from where it was, or list everything.
	ClosedWatchers map[string]int `json:"closedWatchers,omitempty"`
	// CreateErrors counts the workload's creates that the API server
	// answered with an error leaving their outcome unknown (a 5xx, a
	// timeout, a 409 AlreadyExists for the run's own pod after the client
	// sent it again) and that the benchmark settled by reading the pod
	// back, by "<reason>, stored" or "<reason>, not stored, sent again".
	CreateErrors map[string]int `json:"createErrors,omitempty"`
	// Requests counts every request the API server counted in
	// apiserver_request_total from the first pod created to the last one
	// Running, by "VERB resource[/subresource]" (the metric's verb label:
	// the HTTP method, or LIST, WATCH, APPLY, CONNECT), or "VERB /path"
	// for the health reports and OpenAPI v3 documents kube-apiserver
	// counts too: divided by Pods, the pipeline's API calls per pod (the
	// CPU profile's span).
	Requests map[string]int `json:"requests,omitempty"`
	// Stages is where create→Running went, step by step through the
	// pipeline, for every pod and for the slowest 1%; Windows is the run
	// cut into 30-s windows of arrivals (the last one the whole run), with
	// what the process and the Go runtime did in each (CPU, garbage
	// collection, run-queue latency).
	Stages  StageBreakdown  `json:"stages"`
	Windows []RuntimeWindow `json:"windows,omitempty"`
	// Seconds is the same by 1-s window (JSON only), to line the slow
	// pods up with what the runtime did.
	Seconds []RuntimeWindow `json:"seconds,omitempty"`
	// UpMemory is memory beyond the API server's share (nil with
	// StartupConfig.SkipControl).
	UpMemory *UpMemory `json:"upMemory,omitempty"`
	// Idle is the process and the runtime during StartupConfig.Idle, once
	// every pod was Running and none arrived (Start and End in seconds
	// after the first create, as Windows; no pods).
	Idle *RuntimeWindow `json:"idle,omitempty"`
}

// RunStartup measures pod startup latency in one `kubeproof up` process:
// cluster.Start with cluster.UpConfig (embedded etcd, API server,
// controller manager, scheduler and cfg.Nodes simulated nodes exactly as
// `up` configures them, their pods read through one shared watch), pods
// arriving at cfg.Rate per second; then, unless cfg.SkipControl, the
// control run that memory beyond the API server's share is measured
// against (UpMemory).
func RunStartup(ctx context.Context, cfg StartupConfig) (StartupResult, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 10
	}
	if cfg.Pods == 0 {
		cfg.Pods = 20
	}
	if cfg.Rate == 0 {
		cfg.Rate = 100
	}
	if cfg.HeapProfile != "" {
		finerHeapProfile()
		if cfg.CPUProfile == "" {
			cfg.CPUProfile = cfg.HeapProfile + ".cpu"
		}
	}
	up := cluster.UpConfig("")
	if cfg.NodeCPU == "" {
		cfg.NodeCPU = up.NodeCPU
	}
	if cfg.NodeMemory == "" {
		cfg.NodeMemory = up.NodeMemory
	}
	if cfg.NodeMaxPods == 0 {
		cfg.NodeMaxPods = up.NodeMaxPods
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Settle == 0 {
		cfg.Settle = 2 * time.Second
	}
	if cfg.MemoryReadings == 0 {
		cfg.MemoryReadings = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	res := StartupResult{Nodes: cfg.Nodes, Pods: cfg.Pods, Rate: cfg.Rate}
	if cfg.Nodes > maxStartupNodes {
		return res, fmt.Errorf("at most %d simulated nodes, %d asked", maxStartupNodes, cfg.Nodes)
	}
	cpu, err := resource.ParseQuantity(cfg.NodeCPU)
	if err != nil {
		return res, fmt.Errorf("node cpu: %w", err)
	}
	mem, err := resource.ParseQuantity(cfg.NodeMemory)
	if err != nil {
		return res, fmt.Errorf("node memory: %w", err)
	}
	if fit := podsPerNode(cpu, mem, cfg.NodeMaxPods); fit*cfg.Nodes < cfg.Pods {
		return res, fmt.Errorf("%d pods do not fit on %d nodes: each takes %d bench pods (100m cpu, 500Mi memory)", cfg.Pods, cfg.Nodes, fit)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir, err := os.MkdirTemp("", "kubeproof-bench-startup-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	prog := &progressLine{workload: "startup"}
	prog.set("settle", func() int { return 0 }, 0)
	if cfg.Progress != nil {
		stop := prog.report(ctx, cfg.Progress)
		defer stop()
	}
	// `kubeproof up` sets the collector's target for a process hosting
	// simulated nodes; so does this one (Go's default unless GOGC or
	// GOMEMLIMIT say otherwise, with up's heap floor per node if given).
	gc, gcDone := sim.ApplyHostGCPolicy(ctx, sim.HostGCPercent, false, cfg.GCHeapFloorPerNode*uint64(cfg.Nodes))
	defer func() { cancel(); <-gcDone }()
	cfg.Logger.Info("garbage collector", "setting", gc)
	// Read now, before a heap floor could raise it: the control process
	// measures the API server's share at the same setting.
	cfg.gcPercent = currentGCPercent()
	// Each pod's moments through the pipeline, told by the components'
	// trace hooks; allocated before the first reading, so it costs nothing
	// per node or per pod.
	ns := fmt.Sprintf("bench-startup-%d", time.Now().UnixNano())
	stages := newPodStages(ns, cfg.Pods)
	var full [3]MemoryReading
	if full[0], err = settledReading(ctx, cfg.MemoryReadings, cfg.Settle); err != nil {
		return res, err
	}

	ccfg := cluster.UpConfig(filepath.Join(dir, "cluster"))
	ccfg.BindAddress, ccfg.UnsafeNoFsync, ccfg.Logger = "127.0.0.1:0", cfg.UnsafeNoFsync, cfg.Logger
	ccfg.Nodes, ccfg.NodeCPU, ccfg.NodeMemory, ccfg.NodeMaxPods = cfg.Nodes, cfg.NodeCPU, cfg.NodeMemory, cfg.NodeMaxPods
	ccfg.PodTrace = stages.trace
	c, err := cluster.Start(ctx, ccfg)
	if err != nil {
		return res, err
	}
	stopCluster := sync.OnceValue(c.Stop)
	defer stopCluster()
	// The full run ends early, saying why, if the cluster stops by itself
	// (a component failed): its pods would never be created or Running.
	fullCtx, cancelFull := context.WithCancelCause(ctx)
	defer cancelFull(nil)
	go func() {
		select {
		case <-c.Done():
			cause := fmt.Errorf("the cluster stopped during the run: %w", c.Err())
			if fullCtx.Err() == nil {
				cfg.Logger.Error("startup", "err", cause)
			}
			cancelFull(cause)
		case <-fullCtx.Done():
		}
	}()
	cs, err := kubernetes.NewForConfig(APIClientConfig(c.AdminConfig, runtime.ContentTypeProtobuf))
	if err != nil {
		return res, err
	}
	if err := waitNodesReady(fullCtx, cs, cfg.Nodes, cfg.Timeout, prog); err != nil {
		return res, err
	}
	prog.set("settle", func() int { return 0 }, 0)
	if full[1], err = settledReading(fullCtx, cfg.MemoryReadings, cfg.Settle); err != nil {
		return res, err
	}
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile + ".nodes"); err != nil {
			return res, err
		}
		if err := writeGoroutineProfile(cfg.HeapProfile + ".nodes.goroutines"); err != nil {
			return res, err
		}
	}

	if _, err := cs.CoreV1().Namespaces().Create(fullCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("creating namespace: %w", err)
	}
	if err := ensureDefaultServiceAccount(fullCtx, cs, ns); err != nil {
		return res, err
	}
	tr, stopWatch, err := watchStartup(fullCtx, cs, ns)
	if err != nil {
		return res, err
	}
	defer stopWatch()
	tr.setStages(stages)
	stopCPUProfile, err := cpuProfiling(fullCtx, cfg)
	if err != nil {
		return res, err
	}
	defer stopCPUProfile()
	allCodes := func(string) bool { return true }
	requestsBefore := requestCounts(c.Metrics, allCodes)
	closedBefore := closedWatchers(c.Metrics)
	// Memory is read also once half the pods are Running (upmemory.go).
	sampler := startRuntimeSampler(fullCtx, time.Second, prometheus.DefaultGatherer, c.Metrics)
	defer sampler.stop()
	mid, err := createPodsReadingAtHalf(fullCtx, cfg, cs, ns, tr, prog)
	if err != nil {
		return res, err
	}
	prog.set("wait running", func() int { return int(tr.running.Load()) }, cfg.Pods)
	deadline := time.Now().Add(cfg.Timeout)
	for int(tr.running.Load()) < cfg.Pods || int(tr.ready.Load()) < cfg.Pods {
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-fullCtx.Done():
			return res, context.Cause(fullCtx)
		case <-time.After(20 * time.Millisecond):
		}
	}
	res.Requests = countsSince(requestsBefore, requestCounts(c.Metrics, allCodes))
	res.ClosedWatchers = countsSince(closedBefore, closedWatchers(c.Metrics))
	sampler.stop()
	if cfg.Idle > 0 && int(tr.running.Load()) >= cfg.Pods {
		prog.set("idle", func() int { return 0 }, 0)
		a := readRuntime(prometheus.DefaultGatherer, c.Metrics)
		select {
		case <-fullCtx.Done():
			return res, context.Cause(fullCtx)
		case <-time.After(cfg.Idle):
		}
		b := readRuntime(prometheus.DefaultGatherer, c.Metrics)
		w := runtimeWindow(a, b)
		w.Start, w.End = a.at.Sub(stages.epoch).Seconds(), b.at.Sub(stages.epoch).Seconds() // from the first create below
		res.Idle = &w
	}
	if err := stopCPUProfile(); err != nil {
		return res, err
	}
	stopWatch()
	times := stages.times()
	res.Stages = breakdown(times)
	res.Windows = windows(sampler.snaps, stages.epoch, times, 30*time.Second)
	if first, ok := firstSent(stages.epoch, times); ok && res.Idle != nil {
		shift := first.Sub(stages.epoch).Seconds()
		res.Idle.Start, res.Idle.End = res.Idle.Start-shift, res.Idle.End-shift
	}
	if s := windows(sampler.snaps, stages.epoch, times, time.Second); len(s) > 1 {
		res.Seconds = s[:len(s)-1]
	}
	running, ready, bound := tr.results()
	res.Running, res.Ready = len(running), len(ready)
	res.CreateToRunning, res.CreateToReady, res.CreateToBound = Summarize(running), Summarize(ready), Summarize(bound)
	if timeline := timelinePath(cfg); timeline != "" {
		if err := tr.writeTimeline(timeline); err != nil {
			return res, err
		}
	}
	res.RunningCDF = quantiles(running)
	res.Throttled = throttledRequests(c.Metrics)
	res.CreateErrors = tr.settledCreates()
	if res.Running < cfg.Pods {
		return res, fmt.Errorf("only %d of %d pods Running after %s", res.Running, cfg.Pods, cfg.Timeout)
	}
	prog.set("settle", func() int { return 0 }, 0)
	if full[2], err = settledReading(fullCtx, cfg.MemoryReadings, cfg.Settle); err != nil {
		return res, err
	}
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile); err != nil {
			return res, err
		}
		if err := writeGoroutineProfile(cfg.HeapProfile + ".goroutines"); err != nil {
			return res, err
		}
	}
	res.HeapBefore, res.HeapAfterNodes, res.HeapAfterPods = full[0].Heap, full[1].Heap, full[2].Heap
	res.RSSBefore, res.RSSAfterNodes, res.RSSAfterPods = full[0].RSS, full[1].RSS, full[2].RSS
	res.HeapObjectsAfterNodes, res.HeapObjectsAfterPods = full[1].Objects, full[2].Objects
	res.HeapPerNode = (float64(res.HeapAfterNodes) - float64(res.HeapBefore)) / float64(cfg.Nodes)
	res.HeapPerPod = (float64(res.HeapAfterPods) - float64(res.HeapAfterNodes)) / float64(cfg.Pods)
	res.RSSPerNode = float64(res.RSSAfterNodes-res.RSSBefore) / float64(cfg.Nodes)
	res.RSSPerPod = float64(res.RSSAfterPods-res.RSSAfterNodes) / float64(cfg.Pods)
	if cfg.SkipControl {
		return res, nil
	}

	m := &UpMemory{Nodes: cfg.Nodes, Pods: cfg.Pods, Full: full, FullMid: mid}
	if err := volumeUsage(c, m); err != nil {
		return res, err
	}
	later := ""
	if cfg.Pods > cfg.Nodes {
		later = fmt.Sprintf("startup-%d", cfg.Pods-1) // not its node's first pod
	}
	tmpl, err := readTemplates(fullCtx, cs, ns, "startup-0", later)
	if err != nil {
		return res, err
	}
	if m.FullEvents, err = countEvents(fullCtx, cs, ns); err != nil {
		return res, err
	}
	cancelFull(nil) // the cluster stops now on purpose
	if err := stopCluster(); err != nil {
		return res, fmt.Errorf("stopping the cluster: %w", err)
	}
	if err := measureControl(ctx, cfg, tmpl, filepath.Join(dir, "control"), prog, m); err != nil {
		return res, err
	}
	goruntime.KeepAlive(tr) // the full run's bookkeeping stays through the control's readings, like the control's own
	m.compute()
	res.UpMemory = m
	return res, nil
}

// timelinePath is where the pods' timeline goes: next to the heap
// profile (where it always went), else next to the CPU profile; "" for
// neither.
func timelinePath(cfg StartupConfig) string {
	switch {
	case cfg.HeapProfile != "":
		return cfg.HeapProfile + ".pods.csv"
	case cfg.CPUProfile != "":
		return cfg.CPUProfile + ".pods.csv"
	}
	return ""
}

// podsPerNode is how many BenchPods fit on a node of the given capacity.
func podsPerNode(cpu, mem resource.Quantity, maxPods int64) int {
	req := BenchPod("", "").Spec.Containers[0].Resources.Requests
	return int(min(cpu.MilliValue()/req.Cpu().MilliValue(), mem.Value()/req.Memory().Value(), maxPods))
}

// heapProfileRate is the heap profile's sampling interval while a
// startup workload writes heap profiles: the runtime's default (one
// sample per 512 KiB allocated) leaves each call site's in-use bytes in
// steps of about half a MiB, too coarse to split a few KiB per pod among
// components at 9,000 pods.
const heapProfileRate = 32 << 10

// finerHeapProfile sets the heap profile's sampling interval to
// heapProfileRate, before the cluster allocates what is to be profiled.
func finerHeapProfile() {
	goruntime.MemProfileRate = heapProfileRate
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("writing heap profile: %w", err)
	}
	return f.Close()
}

// liveMemory is the live heap after a forced GC, and the process's VmRSS
// after freed memory was returned to the operating system.
func liveMemory() (heap uint64, rss int64) {
	debug.FreeOSMemory() // forces a GC first
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	rss, _, _ = processRSS(os.Getpid())
	return ms.HeapAlloc, rss
}

func waitNodesReady(ctx context.Context, cs kubernetes.Interface, n int, timeout time.Duration, prog *progressLine) error {
	var ready atomic.Int64
	prog.set("nodes ready", func() int { return int(ready.Load()) }, n)
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			count := 0
			for _, node := range nodes.Items {
				for _, cond := range node.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						count++
					}
				}
			}
			ready.Store(int64(count))
			if count >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes Ready after %s (last error: %v)", ready.Load(), n, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startupTracker records, per pod, when its create was sent and when the
// watch first showed it Running and Ready.
type startupTracker struct {
	mu             sync.Mutex
	sent           map[string]time.Time
	running, ready atomic.Int64
	runningAt      map[string]time.Time
	readyAt        map[string]time.Time
	boundAt        map[string]time.Time
	// stages, if set, also gets each pod's moments (the full run's).
	stages *podStages
	// createErrors counts the creates answered with an error whose
	// outcome had to be settled (createBenchPod), by what settled it.
	createErrors map[string]int
}

func (t *startupTracker) createError(what string) {
	t.mu.Lock()
	if t.createErrors == nil {
		t.createErrors = map[string]int{}
	}
	t.createErrors[what]++
	t.mu.Unlock()
}

// settledCreates returns a copy of the counts createError kept.
func (t *startupTracker) settledCreates() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.createErrors) == 0 {
		return nil
	}
	return maps.Clone(t.createErrors)
}

func (t *startupTracker) setStages(s *podStages) {
	t.mu.Lock()
	t.stages = s
	t.mu.Unlock()
}

func newStartupTracker() *startupTracker {
	return &startupTracker{sent: map[string]time.Time{}, runningAt: map[string]time.Time{}, readyAt: map[string]time.Time{}, boundAt: map[string]time.Time{}}
}

func (t *startupTracker) sentAt(name string, at time.Time) {
	t.mu.Lock()
	t.sent[name] = at
	t.stages.record(name, stageSent, at)
	t.mu.Unlock()
}

// createdAt records the moment pod name's create was answered 201.
func (t *startupTracker) createdAt(name string, at time.Time) {
	t.mu.Lock()
	s := t.stages
	t.mu.Unlock()
	s.record(name, stageCreated, at)
}

func (t *startupTracker) observe(p *corev1.Pod, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.boundAt[p.Name]; !ok && p.Spec.NodeName != "" {
		t.boundAt[p.Name] = at
		t.stages.record(p.Name, stageBoundObserved, at)
	}
	if _, ok := t.runningAt[p.Name]; !ok && p.Status.Phase == corev1.PodRunning {
		t.runningAt[p.Name] = at
		t.running.Add(1)
		t.stages.record(p.Name, stageRunningObserved, at)
	}
	if _, ok := t.readyAt[p.Name]; !ok {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				t.readyAt[p.Name] = at
				t.ready.Add(1)
			}
		}
	}
}

func (t *startupTracker) results() (running, ready, bound []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	since := func(at map[string]time.Time) []time.Duration {
		var ds []time.Duration
		for name, at := range at {
			if s, ok := t.sent[name]; ok {
				ds = append(ds, at.Sub(s))
			}
		}
		return ds
	}
	return since(t.runningAt), since(t.readyAt), since(t.boundAt)
}

// writeTimeline writes one CSV line per pod, in the order the creates were
// sent: the pod, when its create was sent (ms after the first), and its
// create→bound and create→Running latencies (ms; empty if never seen).
func (t *startupTracker) writeTimeline(path string) error {
	t.mu.Lock()
	type row struct {
		name string
		sent time.Time
	}
	rows := make([]row, 0, len(t.sent))
	for name, at := range t.sent {
		rows = append(rows, row{name, at})
	}
	slices.SortFunc(rows, func(a, b row) int { return a.sent.Compare(b.sent) })
	var b strings.Builder
	b.WriteString("pod,sent_ms,bound_ms,running_ms\n")
	latency := func(at map[string]time.Time, r row) string {
		if t, ok := at[r.name]; ok {
			return strconv.FormatFloat(float64(t.Sub(r.sent).Microseconds())/1000, 'f', 1, 64)
		}
		return ""
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%.1f,%s,%s\n", r.name, float64(r.sent.Sub(rows[0].sent).Microseconds())/1000, latency(t.boundAt, r), latency(t.runningAt, r))
	}
	t.mu.Unlock()
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// watchStartup follows the namespace's pods with a plain watch (no
// informer: the benchmark keeps no copy of the pods, so its own memory
// stays out of the per-pod numbers), re-watching from the last
// resourceVersion when the server ends a watch.
func watchStartup(ctx context.Context, cs kubernetes.Interface, ns string) (*startupTracker, func(), error) {
	tr := newStartupTracker()
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	rv := list.ResourceVersion
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					// A Status error ends this watch. If the
					// resourceVersion is too old, start over from a list.
					if st, isStatus := ev.Object.(*metav1.Status); isStatus && st.Code == http.StatusGone {
						if l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
							for i := range l.Items {
								tr.observe(&l.Items[i], time.Now())
							}
							rv = l.ResourceVersion
						}
					}
					continue
				}
				rv = p.ResourceVersion
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					tr.observe(p, time.Now())
				}
			}
			w.Stop()
		}
	}()
	return tr, func() { cancel(); <-done }, nil
}

// createPodsAtRate creates n BenchPods named startup-<first> on, the i-th
// sent at start+i/rate by a pool of senders, so that a slow create does
// not delay the next arrival.
func createPodsAtRate(ctx context.Context, cs kubernetes.Interface, ns string, first, n int, rate float64, tr *startupTracker, prog *progressLine) error {
	var created atomic.Int64
	prog.set("create pods", func() int { return int(created.Load()) }, n)
	work := make(chan int)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("startup-%d", first+i)
				tr.sentAt(name, time.Now())
				if err := createBenchPod(ctx, cs, ns, name, tr); err != nil {
					select {
					case errc <- err:
					default:
					}
					continue
				}
				tr.createdAt(name, time.Now())
				created.Add(1)
			}
		}()
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
loop:
	for i := 0; i < n; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				break loop
			case <-time.After(d):
			}
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	return ctx.Err()
}

// throttledRequests reads the API server's 429 answers from its
// apiserver_request_total counter.
func throttledRequests(reg prometheus.Gatherer) map[string]int {
	return requestCounts(reg, func(code string) bool { return code == "429" })
}

// closedWatchers is apiserver_terminated_watchers_total by
// "resource[.group]".
func closedWatchers(reg prometheus.Gatherer) map[string]int {
	return counterSums(reg, "apiserver_terminated_watchers_total", func(labels map[string]string) (string, bool) {
		key := labels["resource"]
		if labels["group"] != "" {
			key += "." + labels["group"]
		}
		return key, true
	})
}

// requestCounts counts the API server's answers whose code passes keep,
// by "VERB resource[/subresource]" (apiserver_request_total's verb label:
// the HTTP method, but LIST, WATCH, APPLY and CONNECT as kube-apiserver
// reports them), a counted non-resource path (whose subresource label is
// the path, without a resource) by "VERB /path".
func requestCounts(reg prometheus.Gatherer, keep func(code string) bool) map[string]int {
	return counterSums(reg, "apiserver_request_total", func(labels map[string]string) (string, bool) {
		return requestKey(labels), keep(labels["code"])
	})
}

// requestKey is requestCounts' key of one series' labels.
func requestKey(labels map[string]string) string {
	res, sub := labels["resource"], labels["subresource"]
	switch {
	case res == "" && sub != "":
		return labels["verb"] + " /" + strings.TrimPrefix(sub, "/")
	case sub != "":
		return labels["verb"] + " " + res + "/" + sub
	}
	return labels["verb"] + " " + res
}

// counterSums sums the counter family name on reg by the key keyOf makes
// of each series' labels, leaving out the series it says not to keep.
func counterSums(reg prometheus.Gatherer, name string, keyOf func(labels map[string]string) (key string, keep bool)) map[string]int {
	mfs, err := reg.Gather()
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if key, keep := keyOf(labels); keep {
				out[key] += int(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

// countsSince is after's counts less before's (keys whose difference is
// 0 left out).
func countsSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
