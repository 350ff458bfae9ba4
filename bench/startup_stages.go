package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/scheduler"
)

// Where a startup pod's time goes: each pod's moments through the
// pipeline, in nanoseconds since the tracker's epoch, from the benchmark
// (create sent, 201, its own watch) and from the components' pod trace
// hooks (cluster.Config.PodTrace: scheduler.Trace*, kubelet.Trace*).

// podStage is one moment of a pod's start.
type podStage int

const (
	stageSent              podStage = iota // create request sent (the benchmark)
	stageCreated                           // 201 received (the benchmark)
	stageQueued                            // in the scheduler's queue (scheduler.TraceQueued)
	stageAttempt                           // first scheduling attempt starts (scheduler.TraceAttempt)
	stageBindingSent                       // Binding posted (scheduler.TraceBindingSent)
	stageBound                             // Binding accepted (scheduler.TraceBound)
	stageBoundObserved                     // the benchmark's watch shows spec.nodeName
	stageHandedOver                        // its kubelet is handed the bound pod (kubelet.TraceHandedOver)
	stageSyncStart                         // its kubelet's first sync starts (kubelet.TraceSyncStart)
	stageVolumesReady                      // its volumes are set up (kubelet.TraceVolumesReady)
	stageRunningWriteStart                 // the status write that makes it Running starts (kubelet.TraceStatusWriteStart)
	stageRunningWritten                    // status with phase Running written (kubelet.TraceStatusWritten)
	stageRunningObserved                   // the benchmark's watch shows phase Running
	numStages
)

var stageNames = [numStages]string{
	"create sent", "created (201)", "scheduler queued", "scheduling attempt", "binding sent", "binding accepted",
	"bound (bench watch)", "kubelet handed over", "kubelet sync start", "volumes ready", "Running write sent", "Running written", "Running (bench watch)",
}

// stageChain is the causal path the breakdown follows, one step per
// consecutive pair. (The benchmark's own sight of the binding is a side
// branch: the kubelet's informer is not behind it.)
var stageChain = []podStage{stageSent, stageCreated, stageQueued, stageAttempt, stageBindingSent, stageBound,
	stageHandedOver, stageSyncStart, stageVolumesReady, stageRunningWriteStart, stageRunningWritten, stageRunningObserved}

// podStages holds, for pods named startup-<i> (i < n) of one namespace,
// the first moment each reached each stage. It is allocated once, before
// the run's first memory reading, so it adds nothing per node or per pod;
// recording is lock-free (one compare-and-swap).
type podStages struct {
	ns    string
	n     int
	epoch time.Time
	at    []atomic.Int64 // [pod*numStages+stage]: ns since epoch + 1; 0: not reached
}

func newPodStages(ns string, n int) *podStages {
	return &podStages{ns: ns, n: n, epoch: time.Now(), at: make([]atomic.Int64, n*int(numStages))}
}

// podIndex is i of "startup-<i>", or -1.
func (s *podStages) podIndex(name string) int {
	rest, ok := strings.CutPrefix(name, "startup-")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || i >= s.n {
		return -1
	}
	return i
}

// record keeps the first moment pod name reached stage.
func (s *podStages) record(name string, stage podStage, at time.Time) {
	if s == nil {
		return
	}
	i := s.podIndex(name)
	if i < 0 {
		return
	}
	s.at[i*int(numStages)+int(stage)].CompareAndSwap(0, int64(at.Sub(s.epoch))+1)
}

// recordStatusWriteStart keeps the start of pod name's latest status write
// until a write has made it Running: the start of that write. (One
// kubelet worker syncs a pod at a time, so its writes do not overlap.)
func (s *podStages) recordStatusWriteStart(name string, at time.Time) {
	i := s.podIndex(name)
	if i < 0 || s.at[i*int(numStages)+int(stageRunningWritten)].Load() != 0 {
		return
	}
	s.at[i*int(numStages)+int(stageRunningWriteStart)].Store(int64(at.Sub(s.epoch)) + 1)
}

// trace is the cluster's pod trace hook (cluster.Config.PodTrace).
func (s *podStages) trace(stage string, pod *corev1.Pod) {
	if pod.Namespace != s.ns {
		return
	}
	now := time.Now()
	switch stage {
	case scheduler.TraceQueued:
		s.record(pod.Name, stageQueued, now)
	case scheduler.TraceAttempt:
		s.record(pod.Name, stageAttempt, now)
	case scheduler.TraceBindingSent:
		s.record(pod.Name, stageBindingSent, now)
	case scheduler.TraceBound:
		s.record(pod.Name, stageBound, now)
	case kubelet.TraceHandedOver:
		s.record(pod.Name, stageHandedOver, now)
	case kubelet.TraceSyncStart:
		s.record(pod.Name, stageSyncStart, now)
	case kubelet.TraceVolumesReady:
		s.record(pod.Name, stageVolumesReady, now)
	case kubelet.TraceStatusWriteStart:
		s.recordStatusWriteStart(pod.Name, now)
	case kubelet.TraceStatusWritten:
		if pod.Status.Phase == corev1.PodRunning {
			s.record(pod.Name, stageRunningWritten, now)
		}
	}
}

// times returns each pod's stage moments (ns since epoch; -1: not
// reached).
func (s *podStages) times() [][numStages]int64 {
	out := make([][numStages]int64, s.n)
	for i := range out {
		for st := range numStages {
			out[i][st] = s.at[i*int(numStages)+int(st)].Load() - 1
		}
	}
	return out
}

// StageStep is one step of the pods' path (From → To): its duration over
// every pod that passed both stages, and over the slowest 1% by
// create→Running. Durations may be negative where two components learn of
// a change independently (the scheduler's informer may see a pod before
// its creator has the 201).
type StageStep struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	All      Latencies     `json:"all"`
	AllMean  time.Duration `json:"allMean"`
	Slow     Latencies     `json:"slow"`
	SlowMean time.Duration `json:"slowMean"`
	Pods     int           `json:"pods"`
}

// StageBreakdown is where create→Running went, step by step.
type StageBreakdown struct {
	// SlowPods is how many pods are the slowest 1% (at least 1), and
	// SlowFrom the create→Running of the fastest of them.
	SlowPods int           `json:"slowPods"`
	SlowFrom time.Duration `json:"slowFrom"`
	Steps    []StageStep   `json:"steps"`
	// SlowBySecond counts the slowest 1% by the second of their create
	// (after the first create): bursts, or a period, show there.
	SlowBySecond map[int]int `json:"slowBySecond,omitempty"`
}

// breakdown computes the steps of stageChain over times (from
// podStages.times): per step the latencies over all pods that reached
// both ends, and over the slowest 1% of pods by sent → Running observed.
func breakdown(times [][numStages]int64) StageBreakdown {
	var done []int
	for i, t := range times {
		if t[stageSent] >= 0 && t[stageRunningObserved] >= 0 {
			done = append(done, i)
		}
	}
	total := func(i int) int64 { return times[i][stageRunningObserved] - times[i][stageSent] }
	slices.SortStableFunc(done, func(a, b int) int { return cmp.Compare(total(b), total(a)) })
	slow := done[:min(len(done), max(1, (len(done)+99)/100))]
	var out StageBreakdown
	if len(done) == 0 {
		slow = nil
	} else {
		out.SlowPods, out.SlowFrom = len(slow), time.Duration(total(slow[len(slow)-1]))
		first := times[done[0]][stageSent]
		for _, i := range done {
			first = min(first, times[i][stageSent])
		}
		out.SlowBySecond = map[int]int{}
		for _, i := range slow {
			out.SlowBySecond[int(time.Duration(times[i][stageSent]-first)/time.Second)]++
		}
	}
	step := func(pods []int, from, to podStage) ([]time.Duration, time.Duration) {
		var ds []time.Duration
		var sum time.Duration
		for _, i := range pods {
			a, b := times[i][from], times[i][to]
			if a < 0 || b < 0 {
				continue
			}
			ds = append(ds, time.Duration(b-a))
			sum += time.Duration(b - a)
		}
		if len(ds) == 0 {
			return nil, 0
		}
		return ds, sum / time.Duration(len(ds))
	}
	all := make([]int, len(times))
	for i := range all {
		all[i] = i
	}
	for k := 1; k < len(stageChain); k++ {
		from, to := stageChain[k-1], stageChain[k]
		s := StageStep{From: stageNames[from], To: stageNames[to]}
		var ds []time.Duration
		ds, s.AllMean = step(all, from, to)
		s.Pods = len(ds)
		s.All = Summarize(ds)
		ds, s.SlowMean = step(slow, from, to)
		s.Slow = Summarize(ds)
		out.Steps = append(out.Steps, s)
	}
	return out
}

// runtimeSnapshot is one reading of the Go runtime and the process.
type runtimeSnapshot struct {
	at         time.Time
	processCPU time.Duration // user + system
	machineCPU time.Duration // every process's busy time on the machine (/proc/stat)
	stealCPU   time.Duration // of which the hypervisor gave to others (steal)
	gcCPU      float64       // /cpu/classes/gc/total:cpu-seconds
	busyCPU    float64       // /cpu/classes/total less /cpu/classes/idle
	gcCycles   uint64
	heapLive   uint64
	schedLat   rtHistogram // /sched/latencies:seconds: runnable → running
	gcPauses   rtHistogram // /sched/pauses/total/gc:seconds: stop-the-world pauses for GC
	load1      float64
	// From the process's Prometheus registries: etcd's WAL fsyncs
	// (etcd_disk_wal_fsync_duration_seconds), the API server's mutating
	// requests (apiserver_request_duration_seconds of POST, PUT, PATCH,
	// APPLY and DELETE) and its 429 answers.
	fsync, mutating rtHistogram
	throttled       uint64
	closedWatchers  uint64 // apiserver_terminated_watchers_total
}

// promHistogram converts a Prometheus histogram (cumulative buckets) to
// an rtHistogram (counts per bucket, the last one unbounded).
func promHistogram(h *dto.Histogram) rtHistogram {
	out := rtHistogram{Buckets: []float64{math.Inf(-1)}}
	var prev uint64
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.Buckets = append(out.Buckets, b.GetUpperBound())
		out.Counts = append(out.Counts, b.GetCumulativeCount()-prev)
		prev = b.GetCumulativeCount()
	}
	out.Buckets = append(out.Buckets, math.Inf(1))
	out.Counts = append(out.Counts, h.GetSampleCount()-prev)
	return out
}

// add sums two histograms of the same buckets (b may be empty).
func (h rtHistogram) add(b rtHistogram) rtHistogram {
	if len(h.Counts) == 0 {
		return rtHistogram{Counts: slices.Clone(b.Counts), Buckets: b.Buckets}
	}
	if len(b.Counts) == len(h.Counts) {
		for i := range h.Counts {
			h.Counts[i] += b.Counts[i]
		}
	}
	return h
}

// readRegistries fills the snapshot's figures from the Prometheus
// registries (etcd registers on the default one, the API server on its
// own).
func (s *runtimeSnapshot) readRegistries(regs ...prometheus.Gatherer) {
	for _, reg := range regs {
		if reg == nil {
			continue
		}
		mfs, err := reg.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "etcd_disk_wal_fsync_duration_seconds":
				for _, m := range mf.GetMetric() {
					s.fsync = s.fsync.add(promHistogram(m.GetHistogram()))
				}
			case "apiserver_request_duration_seconds":
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "verb" && mutatingVerbs[l.GetValue()] {
							s.mutating = s.mutating.add(promHistogram(m.GetHistogram()))
						}
					}
				}
			case "apiserver_request_total":
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "code" && l.GetValue() == "429" {
							s.throttled += uint64(m.GetCounter().GetValue())
						}
					}
				}
			case "apiserver_terminated_watchers_total":
				for _, m := range mf.GetMetric() {
					s.closedWatchers += uint64(m.GetCounter().GetValue())
				}
			}
		}
	}
}

// APPLY is a server-side apply (a PATCH kube-apiserver reports apart).
var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true}

// rtHistogram is a runtime/metrics Float64Histogram: Counts[i] between
// Buckets[i] and Buckets[i+1].
type rtHistogram struct {
	Counts  []uint64
	Buckets []float64
}

var runtimeSampleNames = []string{
	"/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/total:cpu-seconds", "/cpu/classes/idle:cpu-seconds",
	"/gc/cycles/total:gc-cycles", "/gc/heap/live:bytes", "/sched/latencies:seconds", "/sched/pauses/total/gc:seconds",
}

func readRuntime(regs ...prometheus.Gatherer) runtimeSnapshot {
	samples := make([]metrics.Sample, len(runtimeSampleNames))
	for i, n := range runtimeSampleNames {
		samples[i].Name = n
	}
	metrics.Read(samples)
	hist := func(v metrics.Value) rtHistogram {
		if v.Kind() != metrics.KindFloat64Histogram {
			return rtHistogram{}
		}
		h := v.Float64Histogram()
		return rtHistogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
	}
	f := func(v metrics.Value) float64 {
		if v.Kind() != metrics.KindFloat64 {
			return 0
		}
		return v.Float64()
	}
	u := func(v metrics.Value) uint64 {
		if v.Kind() != metrics.KindUint64 {
			return 0
		}
		return v.Uint64()
	}
	s := runtimeSnapshot{
		at: time.Now(), processCPU: processCPU(),
		gcCPU: f(samples[0].Value), busyCPU: f(samples[1].Value) - f(samples[2].Value),
		gcCycles: u(samples[3].Value), heapLive: u(samples[4].Value),
		schedLat: hist(samples[5].Value), gcPauses: hist(samples[6].Value),
	}
	s.readRegistries(regs...)
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		s.machineCPU, s.stealCPU = machineTimes(data)
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if fields := strings.Fields(string(data)); len(fields) > 0 {
			s.load1, _ = strconv.ParseFloat(fields[0], 64)
		}
	}
	return s
}

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

// machineTimes reads the machine's busy CPU time from /proc/stat's first
// line: user, nice, system, irq, softirq and steal (not idle or iowait);
// and steal alone, the time the hypervisor ran other machines while this
// one had work to run.
func machineTimes(procStat []byte) (busy, steal time.Duration) {
	line, _, _ := strings.Cut(string(procStat), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	var ticks, stealTicks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, 0
		}
		ticks += v
		if i == 8 {
			stealTicks = v
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, time.Duration(stealTicks) * time.Second / userHZ
}

// sub is h less an earlier reading of the same histogram.
func (h rtHistogram) sub(earlier rtHistogram) rtHistogram {
	out := rtHistogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
	if len(earlier.Counts) == len(h.Counts) {
		for i := range out.Counts {
			out.Counts[i] -= earlier.Counts[i]
		}
	}
	return out
}

// quantile is the upper bound of the bucket holding the q-th (0 < q ≤ 1)
// sample by nearest rank (a bucket without upper bound gives its lower
// one); 0 for an empty histogram.
func (h rtHistogram) quantile(q float64) time.Duration {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= rank {
			bound := h.Buckets[i+1]
			if math.IsInf(bound, 1) {
				bound = h.Buckets[i]
			}
			return time.Duration(bound * float64(time.Second))
		}
	}
	return 0
}

// RuntimeWindow is one window of the run: the pods whose create was sent
// in it, and what the process and the Go runtime did meanwhile.
type RuntimeWindow struct {
	// Start and End are seconds since the first create.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Pods sent in the window and their create→Running.
	Pods    int       `json:"pods"`
	Running Latencies `json:"running"`
	// ProcessCores is the process's CPU time (user + system) per second
	// of the window; GCShare the garbage collector's share of the Go
	// runtime's busy CPU time (runtime/metrics' /cpu/classes estimates).
	ProcessCores float64 `json:"processCores"`
	// OthersCores is the CPU every other process of the machine used per
	// second of the window (other engineers' builds and tests): with 2
	// cores, what is left for this one.
	OthersCores float64 `json:"othersCores"`
	// StealCores is the part of OthersCores the hypervisor gave to other
	// machines (/proc/stat's steal): cores this machine had work for and
	// did not get. A window with steal measures the host, not this process.
	StealCores float64 `json:"stealCores"`
	GCShare    float64 `json:"gcShare"`
	GCCycles   uint64  `json:"gcCycles"`
	// GCPauseP99/Max are the stop-the-world pauses for GC; SchedP50/P99/Max
	// the time goroutines waited runnable before running (each the upper
	// bound of its runtime histogram bucket).
	GCPauseP99, GCPauseMax       time.Duration
	SchedP50, SchedP99, SchedMax time.Duration
	// HeapLive is the live heap at the last GC, at the window's end; Load1
	// the machine's 1-minute load average then.
	HeapLive uint64  `json:"heapLive"`
	Load1    float64 `json:"load1"`
	// FsyncP99/Max are etcd's WAL fsyncs, MutatingP99 the API server's
	// mutating requests (Prometheus bucket bounds), Throttled its 429s.
	FsyncP99, FsyncMax time.Duration
	MutatingP99        time.Duration
	Throttled          uint64
	// ClosedWatchers are the watches the watch cache closed because they
	// fell behind its events (each client then watches again, or lists).
	ClosedWatchers uint64 `json:"closedWatchers,omitempty"`
}

// runtimeWindow summarizes the runtime between two snapshots.
func runtimeWindow(a, b runtimeSnapshot) RuntimeWindow {
	w := RuntimeWindow{HeapLive: b.heapLive, Load1: b.load1, GCCycles: b.gcCycles - a.gcCycles}
	if wall := b.at.Sub(a.at); wall > 0 {
		w.ProcessCores = float64(b.processCPU-a.processCPU) / float64(wall)
		if b.machineCPU > 0 && a.machineCPU > 0 {
			w.OthersCores = max(0, float64(b.machineCPU-a.machineCPU-(b.processCPU-a.processCPU))/float64(wall))
			w.StealCores = max(0, float64(b.stealCPU-a.stealCPU)/float64(wall))
		}
	}
	if busy := b.busyCPU - a.busyCPU; busy > 0 {
		w.GCShare = (b.gcCPU - a.gcCPU) / busy
	}
	pauses, lat := b.gcPauses.sub(a.gcPauses), b.schedLat.sub(a.schedLat)
	w.GCPauseP99, w.GCPauseMax = pauses.quantile(0.99), pauses.quantile(1)
	w.SchedP50, w.SchedP99, w.SchedMax = lat.quantile(0.5), lat.quantile(0.99), lat.quantile(1)
	fsync := b.fsync.sub(a.fsync)
	w.FsyncP99, w.FsyncMax = fsync.quantile(0.99), fsync.quantile(1)
	w.MutatingP99 = b.mutating.sub(a.mutating).quantile(0.99)
	w.Throttled = b.throttled - a.throttled
	w.ClosedWatchers = b.closedWatchers - a.closedWatchers
	return w
}

// runtimeSampler reads the runtime every period until stopped.
type runtimeSampler struct {
	mu    sync.Mutex
	snaps []runtimeSnapshot
	stop  func()
}

func startRuntimeSampler(ctx context.Context, period time.Duration, regs ...prometheus.Gatherer) *runtimeSampler {
	s := &runtimeSampler{snaps: []runtimeSnapshot{readRuntime(regs...)}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r := readRuntime(regs...)
			s.mu.Lock()
			s.snaps = append(s.snaps, r)
			s.mu.Unlock()
		}
	}()
	s.stop = sync.OnceFunc(func() {
		cancel()
		<-done
		r := readRuntime(regs...)
		s.mu.Lock()
		s.snaps = append(s.snaps, r)
		s.mu.Unlock()
	})
	return s
}

// firstSent is when the first create was sent (false: none was).
func firstSent(epoch time.Time, times [][numStages]int64) (time.Time, bool) {
	first := int64(-1)
	for _, t := range times {
		if s := t[stageSent]; s >= 0 && (first < 0 || s < first) {
			first = s
		}
	}
	return epoch.Add(time.Duration(first)), first >= 0
}

// windows cuts the run into windows of width from the first create:
// each window's runtime figures come from the snapshots nearest its ends,
// and its pods are those whose create was sent in it (times from
// podStages.times, relative to epoch). The last window is the whole run,
// from the first snapshot to the last.
func windows(snaps []runtimeSnapshot, epoch time.Time, times [][numStages]int64, width time.Duration) []RuntimeWindow {
	if len(snaps) < 2 || width <= 0 {
		return nil
	}
	start, ok := firstSent(epoch, times)
	if !ok {
		return nil
	}
	first := int64(start.Sub(epoch))
	end := snaps[len(snaps)-1].at
	nearest := func(at time.Time) runtimeSnapshot {
		i, _ := slices.BinarySearchFunc(snaps, at, func(s runtimeSnapshot, at time.Time) int { return s.at.Compare(at) })
		if i == len(snaps) {
			i--
		}
		if i > 0 && at.Sub(snaps[i-1].at) < snaps[i].at.Sub(at) {
			i--
		}
		return snaps[i]
	}
	summarize := func(from, to time.Duration) RuntimeWindow {
		w := runtimeWindow(nearest(start.Add(from)), nearest(start.Add(to)))
		w.Start, w.End = from.Seconds(), to.Seconds()
		var ds []time.Duration
		for _, t := range times {
			if t[stageSent] < 0 {
				continue
			}
			if s := time.Duration(t[stageSent] - first); s >= from && s < to {
				w.Pods++
				if t[stageRunningObserved] >= 0 {
					ds = append(ds, time.Duration(t[stageRunningObserved]-t[stageSent]))
				}
			}
		}
		w.Running = Summarize(ds)
		return w
	}
	var out []RuntimeWindow
	for from := time.Duration(0); start.Add(from).Before(end); from += width {
		out = append(out, summarize(from, from+width))
	}
	return append(out, summarize(snaps[0].at.Sub(start), end.Sub(start)))
}

// writeStages prints where create→Running went (StageBreakdown) and the
// run's windows (RuntimeWindow).
func writeStages(w io.Writer, r StartupResult) {
	b := r.Stages
	if len(b.Steps) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere create→Running went, %d nodes / %d pods: each step over every pod, and over the slowest 1%% (%d pods, create→Running ≥ %s). Moments from the benchmark (create sent, 201, its watch) and the components' pod trace hooks (cluster.Config.PodTrace); a negative step is two components learning of a change independently.\n\n", r.Nodes, r.Pods, b.SlowPods, ms(b.SlowFrom))
	fmt.Fprintln(w, "| step | pods | all p50 | p99 | max | mean | slowest 1% p50 | p99 | max | mean |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range b.Steps {
		fmt.Fprintf(w, "| %s → %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.From, s.To, s.Pods,
			ms(s.All.P50), ms(s.All.P99), ms(s.All.Max), ms(s.AllMean), ms(s.Slow.P50), ms(s.Slow.P99), ms(s.Slow.Max), ms(s.SlowMean))
	}
	if len(b.SlowBySecond) > 0 {
		var parts []string
		for _, sec := range slices.Sorted(maps.Keys(b.SlowBySecond)) {
			parts = append(parts, fmt.Sprintf("%d s ×%d", sec, b.SlowBySecond[sec]))
		}
		fmt.Fprintf(w, "\nThe slowest 1%% by second of their create (after the first): %s.\n", strings.Join(parts, ", "))
	}
	if len(r.Windows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nBy 30-s window of arrivals (seconds after the first create; the last row is the whole run): create→Running of the pods sent in the window; the process's CPU (cores) and every other process's on the machine (and of that, the host's steal: cores the hypervisor gave to other machines — a window with steal measures the host, not this process), the garbage collector's share of the Go runtime's busy CPU, GC cycles and stop-the-world pauses, the time goroutines waited runnable (run-queue latency, runtime histogram bucket bounds), the live heap and the machine's 1-min load at the window's end; the watches the watch cache closed for falling behind.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| window | pods | p50 | p99 | max | CPU cores | others' cores | of which steal | GC share | GC cycles | GC pause p99 | max | run-queue p50 | p99 | max | live heap | load | etcd fsync p99 | max | API writes p99 | 429s | watches closed |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, x := range r.Windows {
		name := fmt.Sprintf("%.0f–%.0f s", x.Start, x.End)
		if i == len(r.Windows)-1 {
			name = "whole run"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %.2f | %.2f | %.2f | %.0f%% | %d | %s | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %d | %d |\n", name, x.Pods,
			ms(x.Running.P50), ms(x.Running.P99), ms(x.Running.Max), x.ProcessCores, x.OthersCores, x.StealCores, 100*x.GCShare, x.GCCycles,
			ms(x.GCPauseP99), ms(x.GCPauseMax), ms(x.SchedP50), ms(x.SchedP99), ms(x.SchedMax), mib(float64(x.HeapLive)), x.Load1,
			ms(x.FsyncP99), ms(x.FsyncMax), ms(x.MutatingP99), x.Throttled, x.ClosedWatchers)
	}
	if x := r.Idle; x != nil {
		fmt.Fprintf(w, "\nIdle, every pod Running and none arriving (%.0f–%.0f s after the first create): %.2f cores (others %.2f, steal %.2f), GC share %.0f%%, %d GC cycles, live heap %s, load %.1f.\n",
			x.Start, x.End, x.ProcessCores, x.OthersCores, x.StealCores, 100*x.GCShare, x.GCCycles, mib(float64(x.HeapLive)), x.Load1)
	}
}
