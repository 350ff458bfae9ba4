package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// Where the scheduler under test runs.
const (
	// SchedulerInProcess: scheduler.New in this process. CPU time and RSS
	// are then the whole process's (API server and etcd included).
	SchedulerInProcess = "in-process"
	// SchedulerSubprocess: `kubeproof scheduler` as its own process; CPU
	// time and RSS are that process's alone.
	SchedulerSubprocess = "subprocess"
	// SchedulerExternal: a scheduler already running against the API
	// server of --kubeconfig; only binding throughput is measured.
	SchedulerExternal = "external"
)

// Scheduler client rate limits during the benchmark (scheduler_perf raises
// them the same way).
const (
	benchSchedulerQPS   = 5000
	benchSchedulerBurst = 10000
)

// SchedulingConfig configures one RunScheduling.
type SchedulingConfig struct {
	Workload SchedulingWorkload
	// API, if set, is the API server to run against, with its own
	// scheduler already running (SchedulerExternal). Otherwise an
	// in-process control plane (API server on embedded etcd, no
	// controllers, no kubelets) is started.
	API *rest.Config
	// SchedulerBinary, if set (and API is nil), is a kubeproof binary run as
	// `SchedulerBinary scheduler --kubeconfig ...`; otherwise the scheduler
	// runs in-process.
	SchedulerBinary string
	// UnsafeNoFsync turns fsync off in the in-process etcd (tests).
	UnsafeNoFsync bool
	// BarrierTimeout bounds each barrier (default 10 min).
	BarrierTimeout time.Duration
	// Progress, if set, is called about once a second.
	Progress func(Progress)
	Logger   *slog.Logger
}

// Throughput is scheduler_perf's SchedulingThroughput: pods bound per
// 1 s window.
type Throughput struct {
	Average float64   `json:"Average"`
	Perc50  float64   `json:"Perc50"`
	Perc90  float64   `json:"Perc90"`
	Perc99  float64   `json:"Perc99"`
	Windows []float64 `json:"windows"`
}

// SchedulingResult is one scheduling workload's measurement.
type SchedulingResult struct {
	Workload  string `json:"workload"`
	Scheduler string `json:"scheduler"`
	Nodes     int    `json:"nodes"`
	// Pods is the number of pods that had to be bound in the measured
	// span; Scheduled how many were observed bound.
	Pods      int `json:"pods"`
	Scheduled int `json:"scheduled"`
	// Elapsed is from the first binding to the measured barrier's
	// completion.
	Elapsed              time.Duration `json:"elapsed"`
	SchedulingThroughput Throughput    `json:"SchedulingThroughput"`
	// AttemptLatency is estimated from the scheduler's
	// scheduler_scheduling_attempt_duration_seconds{result="scheduled"}
	// histogram (interpolated within buckets, as histogram_quantile does);
	// zero when the scheduler's metrics are not reachable (external).
	AttemptLatencyP50 time.Duration `json:"attemptLatencyP50"`
	AttemptLatencyP99 time.Duration `json:"attemptLatencyP99"`
	// CPUTime is user+system CPU over the measured span; CPUScope says
	// whose ("scheduler process" or "whole benchmark process").
	CPUTime  time.Duration `json:"cpuTime"`
	CPUScope string        `json:"cpuScope"`
	// RSSBytes and PeakRSSBytes are VmRSS and VmHWM at the end, of the
	// process named by CPUScope.
	RSSBytes     int64 `json:"rssBytes"`
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// RunScheduling runs a scheduling workload the scheduler_perf way: nodes
// and pods are created through the API first with no scheduler running,
// the scheduler starts at the first barrier, and bindings are counted from
// a pod watch in 1 s windows until that barrier completes. Later ops
// (churn, deletes, further barriers) run with the scheduler up but are not
// part of the throughput.
func RunScheduling(ctx context.Context, cfg SchedulingConfig) (SchedulingResult, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BarrierTimeout == 0 {
		cfg.BarrierTimeout = 10 * time.Minute
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := SchedulingResult{Workload: cfg.Workload.Name, Scheduler: SchedulerExternal}
	api, kubeconfigPath := cfg.API, ""
	if api == nil {
		dir, err := os.MkdirTemp("", "kubeproof-bench-sched-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		c, err := cluster.Start(ctx, cluster.Config{
			DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true, CompactionInterval: -1,
			UnsafeNoFsync: cfg.UnsafeNoFsync, Logger: cfg.Logger,
		})
		if err != nil {
			return res, err
		}
		defer c.Stop()
		api, kubeconfigPath = c.AdminConfig, c.AdminKubeconfig
		res.Scheduler = SchedulerInProcess
		if cfg.SchedulerBinary != "" {
			res.Scheduler = SchedulerSubprocess
		}
	}
	cs, err := kubernetes.NewForConfig(APIClientConfig(api, runtime.ContentTypeProtobuf))
	if err != nil {
		return res, fmt.Errorf("building client: %w", err)
	}
	r := &schedulingRun{cfg: cfg, cs: cs, api: api, kubeconfig: kubeconfigPath, res: &res,
		ns: fmt.Sprintf("bench-sched-%d", time.Now().UnixNano())}
	r.progress = &progressLine{workload: cfg.Workload.Name}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("creating namespace %s: %w", r.ns, err)
	}
	if err := ensureDefaultServiceAccount(ctx, cs, r.ns); err != nil {
		return res, err
	}
	if res.Scheduler == SchedulerExternal {
		defer r.cleanup(context.WithoutCancel(ctx))
	}
	stopWatch, err := r.watchPods(ctx)
	if err != nil {
		return res, err
	}
	defer stopWatch()
	if cfg.Progress != nil {
		done := r.progress.report(ctx, cfg.Progress)
		defer done()
	}
	defer r.stopScheduler()
	for _, pc := range cfg.Workload.PriorityClasses {
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return res, fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
		}
	}
	for _, op := range cfg.Workload.Ops {
		if err := r.do(ctx, op); err != nil {
			return res, fmt.Errorf("%s: %s: %w", cfg.Workload.Name, op.Opcode, err)
		}
	}
	return res, nil
}

// schedulingRun is the state of one RunScheduling.
type schedulingRun struct {
	cfg        SchedulingConfig
	cs         kubernetes.Interface
	api        *rest.Config
	kubeconfig string
	ns         string
	res        *SchedulingResult

	// Pod names created and not yet deleted by the runner, oldest first.
	mu        sync.Mutex
	live      []string
	churnLive []string
	nodeSeq   int
	podSeq    int
	lister    cache.Indexer
	bound     atomic.Int64 // pods observed bound, ever
	unbound   atomic.Int64 // pods in the watch without a node
	inWatch   atomic.Int64 // pods in the watch
	seenEver  atomic.Int64 // pods ever seen in the watch
	// collectPending: a createPods with collectMetrics ran before the
	// scheduler started, so the barrier that starts it measures.
	collectPending bool
	terminating    sync.WaitGroup
	sched          *runningScheduler
	measuring      bool
	measured       bool
	boundAtMes     int64
	sampler        *throughputSampler
	progress       *progressLine
}

// watchPods runs an informer on the benchmark namespace's pods counting
// bindings (a pod first seen with spec.nodeName set).
func (r *schedulingRun) watchPods(ctx context.Context) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(r.cs, 0, informers.WithNamespace(r.ns))
	inf := factory.Core().V1().Pods().Informer()
	boundSeen := map[string]bool{}
	terminating := map[string]bool{}
	var seenMu sync.Mutex
	observe := func(obj any, deleted bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		seenMu.Lock()
		defer seenMu.Unlock()
		if deleted {
			r.inWatch.Add(-1)
			if !boundSeen[p.Name] {
				r.unbound.Add(-1)
			}
			delete(boundSeen, p.Name)
			delete(terminating, p.Name)
			return
		}
		was, known := boundSeen[p.Name]
		if !known {
			r.inWatch.Add(1)
			r.seenEver.Add(1)
			boundSeen[p.Name] = false
			r.unbound.Add(1)
		}
		if p.Spec.NodeName != "" && !was {
			boundSeen[p.Name] = true
			r.unbound.Add(-1)
			r.bound.Add(1)
		}
		if p.DeletionTimestamp != nil && p.Spec.NodeName != "" && !terminating[p.Name] {
			// No kubelet runs: finish a graceful deletion (a preemption
			// victim's) as a node would, as KWOK's pod-delete stage does.
			terminating[p.Name] = true
			r.finishDeletion(ctx, p)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	}); err != nil {
		cancel()
		return nil, err
	}
	r.lister = inf.GetIndexer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		factory.Shutdown()
		return nil, errors.New("pod watch did not sync")
	}
	return func() { cancel(); factory.Shutdown(); r.terminating.Wait() }, nil
}

// finishDeletion deletes a terminating pod with grace period 0.
func (r *schedulingRun) finishDeletion(ctx context.Context, p *corev1.Pod) {
	uid := p.UID
	r.terminating.Add(1)
	go func() {
		defer r.terminating.Done()
		err := r.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && ctx.Err() == nil {
			r.cfg.Logger.Debug("finishing a pod's deletion", "pod", p.Name, "err", err)
		}
	}()
}

func (r *schedulingRun) do(ctx context.Context, op ResolvedOp) error {
	switch op.Opcode {
	case OpCreateNodes:
		return r.createNodes(ctx, op.Count)
	case OpCreatePods:
		if op.CollectMetrics && !r.measured && !r.measuring {
			if r.res.Scheduler == SchedulerExternal || r.sched != nil {
				// The scheduler is already running: measure from here.
				r.startMeasuring()
				r.res.Pods += op.Count
			} else {
				r.collectPending = true
			}
		}
		names, err := r.createPods(ctx, op.PodTemplate, op.Count, "create pods")
		r.mu.Lock()
		r.live = append(r.live, names...)
		r.mu.Unlock()
		return err
	case OpBarrier:
		if r.sched == nil && r.res.Scheduler != SchedulerExternal {
			if err := r.startScheduler(ctx); err != nil {
				return err
			}
			if r.collectPending {
				r.startMeasuring()
			}
		}
		if err := r.barrier(ctx); err != nil {
			return err
		}
		if r.measuring {
			return r.stopMeasuring(ctx)
		}
		return nil
	case OpDeletePods:
		return r.deletePods(ctx, op.Count)
	case OpChurn:
		return r.churn(ctx, op)
	}
	return fmt.Errorf("unknown opcode %q", op.Opcode)
}

// parallel runs fn(i) for i in [0,n) from 64 goroutines, counting done.
func parallel(ctx context.Context, n int, done *atomic.Int64, fn func(ctx context.Context, i int) error) error {
	const workers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					errc <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

func (r *schedulingRun) createNodes(ctx context.Context, n int) error {
	first := r.nodeSeq
	r.nodeSeq += n
	r.res.Nodes += n
	var done atomic.Int64
	r.progress.setFunc("create nodes", func() int { return int(done.Load()) }, func() int { return n })
	return parallel(ctx, n, &done, func(ctx context.Context, i int) error {
		node := r.cfg.Workload.NodeTemplate.DeepCopy()
		node.Name = fmt.Sprintf("%s%s-%d", node.GenerateName, r.ns, first+i)
		node.GenerateName = ""
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[corev1.LabelHostname] = node.Name
		node.Labels["bench.kubeproof.io/run"] = r.ns
		created, err := r.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
		// An API server that drops status on create (as it may for other
		// kinds) gets it through the status subresource.
		if len(created.Status.Allocatable) == 0 && len(node.Status.Allocatable) > 0 {
			created.Status = node.Status
			if _, err := r.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("setting status of node %s: %w", node.Name, err)
			}
		}
		return nil
	})
}

func (r *schedulingRun) createPods(ctx context.Context, template *corev1.Pod, n int, phase string) ([]string, error) {
	r.mu.Lock()
	first := r.podSeq
	r.podSeq += n
	r.mu.Unlock()
	names := make([]string, n)
	var done atomic.Int64
	if phase != "" {
		r.progress.setFunc(phase, func() int { return int(done.Load()) }, func() int { return n })
	}
	err := parallel(ctx, n, &done, func(ctx context.Context, i int) error {
		if template == nil {
			template = r.cfg.Workload.PodTemplate
		}
		pod := template.DeepCopy()
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, first+i)
		pod.GenerateName, pod.Namespace = "", r.ns
		if _, err := r.cs.CoreV1().Pods(r.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		names[i] = pod.Name
		return nil
	})
	return names, err
}

// barrier waits until every pod the runner created has been seen in the
// watch and every pod still there is bound (pods deleted meanwhile, by
// the runner or by preemption, are not waited for).
func (r *schedulingRun) barrier(ctx context.Context) error {
	r.mu.Lock()
	want := int64(r.podSeq)
	r.mu.Unlock()
	startBound := r.bound.Load()
	r.progress.setFunc("scheduling", func() int { return int(r.bound.Load() - startBound) }, func() int { return int(r.unbound.Load() + r.bound.Load() - startBound) })
	ctx, cancel := context.WithTimeout(ctx, r.cfg.BarrierTimeout)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if r.seenEver.Load() >= want && r.unbound.Load() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("barrier: %d of %d pods still unbound after %s: %w", r.unbound.Load(), r.inWatch.Load(), r.cfg.BarrierTimeout, ctx.Err())
		case <-t.C:
		}
	}
}

func (r *schedulingRun) deletePods(ctx context.Context, n int) error {
	r.mu.Lock()
	n = min(n, len(r.live))
	victims := append([]string(nil), r.live[:n]...)
	r.live = r.live[n:]
	r.mu.Unlock()
	var done atomic.Int64
	r.progress.setFunc("delete pods", func() int { return int(done.Load()) }, func() int { return n })
	return parallel(ctx, n, &done, func(ctx context.Context, i int) error {
		// A pod preempted meanwhile is gone already.
		if err := r.cs.CoreV1().Pods(r.ns).Delete(ctx, victims[i], metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", victims[i], err)
		}
		return nil
	})
}

// churn creates pods at op.Rate per second for op.Duration; once more than
// op.Count churn pods exist, the oldest is deleted for each new one.
func (r *schedulingRun) churn(ctx context.Context, op ResolvedOp) error {
	var created atomic.Int64
	total := int(op.Duration.Seconds() * float64(op.Rate))
	r.progress.setFunc("churn", func() int { return int(created.Load()) }, func() int { return total })
	t := time.NewTicker(time.Second / time.Duration(op.Rate))
	defer t.Stop()
	end := time.After(op.Duration)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end:
			return nil
		case <-t.C:
		}
		names, err := r.createPods(ctx, op.PodTemplate, 1, "")
		if err != nil {
			return err
		}
		created.Add(1)
		r.mu.Lock()
		r.churnLive = append(r.churnLive, names...)
		var victim string
		if len(r.churnLive) > op.Count {
			victim, r.churnLive = r.churnLive[0], r.churnLive[1:]
		}
		r.mu.Unlock()
		if victim != "" {
			if err := r.cs.CoreV1().Pods(r.ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				return fmt.Errorf("deleting churn pod %s: %w", victim, err)
			}
		}
	}
}

func (r *schedulingRun) startMeasuring() {
	r.measuring = true
	r.boundAtMes = r.bound.Load()
	// Pods the runner created that are not bound yet (none, unless an
	// external scheduler is at work).
	r.mu.Lock()
	r.res.Pods = len(r.live) + len(r.churnLive) - int(r.inWatch.Load()-r.unbound.Load())
	r.mu.Unlock()
	r.sampler = startThroughputSampler(func() int64 { return r.bound.Load() })
	if r.sched != nil {
		r.sched.startCPU = r.sched.cpuTime()
	}
}

func (r *schedulingRun) stopMeasuring(ctx context.Context) error {
	r.measuring, r.measured = false, true
	windows, elapsed := r.sampler.stop()
	r.res.Elapsed = elapsed
	r.res.Scheduled = int(r.bound.Load() - r.boundAtMes)
	if r.res.Pods == 0 {
		r.res.Pods = r.res.Scheduled
	}
	r.res.SchedulingThroughput = summarizeThroughput(windows)
	if r.sched == nil {
		return nil
	}
	r.res.CPUTime = r.sched.cpuTime() - r.sched.startCPU
	r.res.CPUScope = r.sched.cpuScope
	var err error
	if r.res.RSSBytes, r.res.PeakRSSBytes, err = processRSS(r.sched.pid); err != nil {
		return err
	}
	h, err := r.sched.attemptHistogram(ctx)
	if err != nil {
		return fmt.Errorf("reading scheduler metrics: %w", err)
	}
	r.res.AttemptLatencyP50 = h.quantile(0.50)
	r.res.AttemptLatencyP99 = h.quantile(0.99)
	return nil
}

func (r *schedulingRun) stopScheduler() {
	if r.sched != nil {
		r.sched.stop()
	}
}

// cleanup removes what the run created on an external API server.
func (r *schedulingRun) cleanup(ctx context.Context) {
	_ = r.cs.CoreV1().Pods(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
	_ = r.cs.CoreV1().Namespaces().Delete(ctx, r.ns, metav1.DeleteOptions{})
	_ = r.cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "bench.kubeproof.io/run=" + r.ns})
}

// kubeconfigFor returns the kubeconfig file of the in-process cluster.
func (r *schedulingRun) kubeconfigFor() (string, error) {
	if r.kubeconfig == "" {
		return "", errors.New("no kubeconfig for a subprocess scheduler")
	}
	return filepath.Abs(r.kubeconfig)
}

// processCPUTime is user+system CPU time of pid from /proc/<pid>/stat.
func processCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesized command name; utime and stime are
	// fields 14 and 15 of the whole line.
	s := string(data)
	i := len(s) - 1
	for i >= 0 && s[i] != ')' {
		i--
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// ensureDefaultServiceAccount creates the namespace's "default" service
// account, which the ServiceAccount admission plugin requires of every
// pod. A cluster's service account controller creates it too, soon after
// the namespace; the benchmark does not wait for (or need) one.
func ensureDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service account %s/default: %w", ns, err)
	}
	return nil
}
