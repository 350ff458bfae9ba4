package bench

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/scheduler"
)

// TestStartupSmoke starts 20 pods on 3 simulated nodes of a `kubeproof up`
// cluster: every pod gets Running and Ready, latencies are ordered and
// positive, memory was read at each step, and the control run created the
// same nodes and pods with their events.
func TestStartupSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	before := runtime.NumGoroutine()
	res, err := RunStartup(context.Background(), StartupConfig{
		Nodes: 3, Pods: 20, Rate: 100, UnsafeNoFsync: true, Timeout: time.Minute, Settle: 100 * time.Millisecond, MemoryReadings: 1,
		Idle: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Running != 20 || res.Ready != 20 {
		t.Errorf("running %d, ready %d; want 20, 20", res.Running, res.Ready)
	}
	r := res.CreateToRunning
	if r.P50 <= 0 || r.P50 > r.P99 || r.P99 > r.Max {
		t.Errorf("create-to-running latencies %+v", r)
	}
	if res.CreateToReady.P50 < r.P50 {
		t.Errorf("ready p50 %v before running p50 %v", res.CreateToReady.P50, r.P50)
	}
	// Every pod passed every stage of the chain, told by the components'
	// trace hooks and the benchmark's own watch.
	for _, s := range res.Stages.Steps {
		if s.Pods != 20 {
			t.Errorf("step %s → %s seen for %d pods, want 20", s.From, s.To, s.Pods)
		}
	}
	if len(res.Windows) < 2 || res.Windows[len(res.Windows)-1].Pods != 20 || res.Windows[len(res.Windows)-1].ProcessCores <= 0 {
		t.Errorf("windows %+v: want at least one and the whole run's 20 pods", res.Windows)
	}
	// The idle reading comes after the last pod ran, and took the time asked.
	if x := res.Idle; x == nil || x.Pods != 0 || x.End-x.Start < 0.2 || x.Start < res.Windows[len(res.Windows)-1].End-1 {
		t.Errorf("idle %+v after windows ending at %v s", x, res.Windows[len(res.Windows)-1].End)
	}
	// The pods phase's API calls: each pod created and bound once, and its
	// kubelet's status writes and token requests counted.
	for _, k := range []string{"POST pods", "POST pods/binding", "PUT pods/status", "POST serviceaccounts/token"} {
		if res.Requests[k] < 20 {
			t.Errorf("requests %v: %q %d, want at least 20", res.Requests, k, res.Requests[k])
		}
	}
	if res.HeapBefore == 0 || res.HeapAfterNodes == 0 || res.HeapAfterPods == 0 || res.RSSAfterPods == 0 {
		t.Errorf("memory not read: %+v", res)
	}
	m := res.UpMemory
	if m == nil {
		t.Fatal("no control run")
	}
	for i, r := range m.Control {
		if r.Heap == 0 || r.RSS == 0 {
			t.Errorf("control reading %d not taken: %+v", i, r)
		}
	}
	if m.ControlObjects["nodes"] != 3 || m.ControlObjects["leases"] != 3 || m.ControlObjects["pods"] != 20 {
		t.Errorf("control objects %v, want 3 nodes and leases, 20 pods", m.ControlObjects)
	}
	// The kubelet records Pulled, Created and Started (the scheduler
	// Scheduled) for each pod.
	if m.ControlObjects["events"] < 3*20 {
		t.Errorf("control events %d, want at least 3 per pod", m.ControlObjects["events"])
	}
	// As many events as the full run's pods had: the first pod on each
	// node pulled the image, the others did not.
	if m.ControlObjects["events"] != m.FullEvents {
		t.Errorf("control events %d, full run's %d", m.ControlObjects["events"], m.FullEvents)
	}
	// Every pod has its service account token volume on disk.
	if m.VolumeDir == "" || m.VolumeFiles < 20 || m.VolumeBytes <= 0 {
		t.Errorf("kubelets' volumes: %s, %d files, %d bytes", m.VolumeDir, m.VolumeFiles, m.VolumeBytes)
	}
	var b bytes.Buffer
	WriteStartupTable(&b, Machine{}, []StartupResult{res})
	if !strings.Contains(b.String(), "RSS beyond the API server") {
		t.Errorf("table without the memory beyond the API server:\n%s", b.String())
	}
	checkNoGoroutineLeak(t, before)
}

// TestUpMemoryArithmetic: beyond = the full run's growth less the
// control's, per node from start to nodes Ready, per pod from nodes Ready
// to pods Running; the table prints each figure.
func TestUpMemoryArithmetic(t *testing.T) {
	const k = 1024
	m := UpMemory{Nodes: 10, Pods: 100,
		// full: +3000 KiB with the nodes, +2000 KiB with the pods;
		// control: +1000 KiB, +500 KiB.
		Full: [3]MemoryReading{{RSS: 10000 * k, Heap: 4000 * k, Classes: map[string]uint64{"heap/stacks": 100 * k}},
			{RSS: 13000 * k, Heap: 5000 * k, Classes: map[string]uint64{"heap/stacks": 300 * k}},
			{RSS: 15000 * k, Heap: 6000 * k, Classes: map[string]uint64{"heap/stacks": 500 * k}}},
		Control:   [3]MemoryReading{{RSS: 9000 * k, Heap: 3000 * k}, {RSS: 10000 * k, Heap: 3500 * k}, {RSS: 10500 * k, Heap: 3600 * k}},
		VolumeDir: "/dev/shm/x", VolumeTmpfs: true, VolumeBytes: 800 * k, VolumeFiles: 500,
		ControlObjects: map[string]int{"nodes": 10, "pods": 100},
	}
	m.compute()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"RSS per node", m.RSSPerNode, (3000 - 1000) * k / 10},
		{"RSS per pod", m.RSSPerPod, (2000 - 500) * k / 100},
		{"heap per node", m.HeapPerNode, (1000 - 500) * k / 10},
		{"heap per pod", m.HeapPerPod, (1000 - 100) * k / 100},
		{"control RSS per node", m.ControlRSSPerNode, 1000 * k / 10},
		{"control RSS per pod", m.ControlRSSPerPod, 500 * k / 100},
		{"control heap per pod", m.ControlHeapPerPod, 100 * k / 100},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var b bytes.Buffer
	WriteUpMemoryTable(&b, m)
	out := b.String()
	for _, want := range []string{
		"| **RSS beyond the API server** | | | | **200.0 KiB** | **15.0 KiB** |",
		"| **live heap beyond the API server** | | | | **50.0 KiB** | **9.0 KiB** |",
		"| RSS, `up` (full run) | 9.8 MiB | 12.7 MiB | 14.6 MiB | 300.0 KiB | 20.0 KiB |",
		"| pod directories and volumes (tmpfs, the machine's memory outside the RSS; 500 files) | | | 0.8 MiB | | 8.0 KiB |",
		"The control created 10 nodes, 100 pods",
		// stacks: +200 KiB with the nodes, +200 with the pods; none in the
		// control.
		"goroutine stacks 20.0 KiB / 2.0 KiB;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	WriteStartupTable(&b, Machine{}, []StartupResult{{Nodes: 10, Pods: 100, Throttled: map[string]int{"update leases": 1, "patch pods": 3}}})
	if want := "Throttled by the API server (429, retried after 1 s): patch pods 3, update leases 1."; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	WriteStartupTable(&b, Machine{}, []StartupResult{{Nodes: 10, Pods: 100, ClosedWatchers: map[string]int{"pods": 2, "leases.coordination.k8s.io": 1}}})
	if want := "Watches the watch cache closed for falling behind its events: leases.coordination.k8s.io 1, pods 2."; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	WriteStartupTable(&b, Machine{}, []StartupResult{{Nodes: 10, Pods: 100, CreateErrors: map[string]int{"InternalError, stored": 2}}})
	if want := "settled by reading the pod back: InternalError, stored: 2."; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// BenchmarkPodStartup starts 200 pods at 100 pods/s on 20 simulated nodes
// and reports creation-to-Running latency.
func BenchmarkPodStartup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		res, err := RunStartup(context.Background(), StartupConfig{Nodes: 20, Pods: 200, Rate: 100, SkipControl: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.CreateToRunning.P50)/1e6, "p50-ms")
		b.ReportMetric(float64(res.CreateToRunning.P99)/1e6, "p99-ms")
		b.ReportMetric(res.HeapPerNode, "heap-B/node")
		b.ReportMetric(res.HeapPerPod, "heap-B/pod")
	}
}

func TestStartupRejectsPodsThatCannotFit(t *testing.T) {
	// 4 cpu / 100m = 40 pods per node.
	_, err := RunStartup(context.Background(), StartupConfig{Nodes: 2, Pods: 81})
	if err == nil {
		t.Fatal("81 pods on 2 nodes accepted")
	}
}

// TestStageBreakdown: each step of the chain over every pod and over the
// slowest 1% by create→Running, pods that missed a stage left out of the
// steps touching it.
func TestStageBreakdown(t *testing.T) {
	const n = 200
	ms := int64(time.Millisecond)
	times := make([][numStages]int64, n)
	for i := range times {
		// Each stage 1 ms after the previous one along the chain; the
		// bench's watch sees the binding 1 ms after it was accepted.
		for k, st := range stageChain {
			times[i][st] = int64(k) * ms
		}
		times[i][stageBoundObserved] = times[i][stageBound] + ms
	}
	// Two slow pods (the slowest 1% of 200): pod 7 waits 500 ms for its
	// scheduling attempt, pod 9 900 ms in the write of its Running status.
	for st := stageAttempt; st < numStages; st++ {
		times[7][st] += 500 * ms
	}
	times[9][stageRunningWritten] += 900 * ms
	times[9][stageRunningObserved] += 900 * ms
	// Pod 7 was sent 2.5 s after the others.
	for st := range numStages {
		times[7][st] += 2500 * ms
	}
	// Pod 3 was never handed over (the hook missed it): left out of the
	// two steps around that stage only. Pod 4 never got Running.
	times[3][stageHandedOver] = -1
	times[4][stageRunningObserved] = -1

	b := breakdown(times)
	if b.SlowPods != 2 || b.SlowFrom != 511*time.Millisecond {
		t.Fatalf("slow pods %d from %v, want 2 from 511ms", b.SlowPods, b.SlowFrom)
	}
	if len(b.SlowBySecond) != 2 || b.SlowBySecond[0] != 1 || b.SlowBySecond[2] != 1 {
		t.Errorf("slow pods by second %v, want one in second 0, one in second 2", b.SlowBySecond)
	}
	if len(b.Steps) != len(stageChain)-1 {
		t.Fatalf("%d steps, want %d", len(b.Steps), len(stageChain)-1)
	}
	step := func(from, to podStage) StageStep {
		for _, s := range b.Steps {
			if s.From == stageNames[from] && s.To == stageNames[to] {
				return s
			}
		}
		t.Fatalf("no step %s → %s", stageNames[from], stageNames[to])
		return StageStep{}
	}
	queued := step(stageQueued, stageAttempt)
	if queued.Pods != n || queued.All.P50 != time.Millisecond || queued.All.Max != 501*time.Millisecond {
		t.Errorf("queued → attempt over all: %+v", queued)
	}
	if queued.Slow.P50 != time.Millisecond || queued.Slow.Max != 501*time.Millisecond || queued.SlowMean != 251*time.Millisecond {
		t.Errorf("queued → attempt over the slowest: %+v", queued)
	}
	if want := (n*time.Millisecond + 500*time.Millisecond) / n; queued.AllMean != want {
		t.Errorf("queued → attempt mean %v, want %v", queued.AllMean, want)
	}
	written := step(stageRunningWriteStart, stageRunningWritten)
	if written.Slow.Max != 901*time.Millisecond || written.SlowMean != 451*time.Millisecond {
		t.Errorf("write sent → written over the slowest: %+v", written)
	}
	if h := step(stageBound, stageHandedOver); h.Pods != n-1 {
		t.Errorf("bound → handed over counts %d pods, want %d (one missed it)", h.Pods, n-1)
	}
	if o := step(stageRunningWritten, stageRunningObserved); o.Pods != n-1 {
		t.Errorf("written → observed counts %d pods, want %d (one never Running)", o.Pods, n-1)
	}
	if got := breakdown(nil); got.SlowPods != 0 || len(got.Steps) != len(stageChain)-1 || got.Steps[0].Pods != 0 {
		t.Errorf("no pods: %+v", got)
	}
}

// TestPodStagesTrace: the trace hook keeps each stage's first moment for
// the benchmark's pods only, and counts a status write only once Running.
func TestPodStagesTrace(t *testing.T) {
	s := newPodStages("ns", 3)
	pod := func(ns, name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	s.trace(scheduler.TraceQueued, pod("ns", "startup-1", ""))
	first := s.times()[1][stageQueued]
	time.Sleep(time.Millisecond)
	s.trace(scheduler.TraceQueued, pod("ns", "startup-1", ""))
	s.trace(kubelet.TraceStatusWritten, pod("ns", "startup-1", corev1.PodPending))
	s.trace(kubelet.TraceSyncStart, pod("other", "startup-2", ""))
	s.trace(kubelet.TraceSyncStart, pod("ns", "startup-3", "")) // out of range
	s.trace(kubelet.TraceSyncStart, pod("ns", "web-0", ""))
	got := s.times()
	if first < 0 || got[1][stageQueued] != first {
		t.Errorf("queued at %d then %d: the first moment must stay", first, got[1][stageQueued])
	}
	if got[1][stageRunningWritten] != -1 {
		t.Error("a Pending status write counted as Running written")
	}
	// Status writes: the start kept is that of the write that made the
	// pod Running (the latest before it), not a later one's.
	s.trace(kubelet.TraceStatusWriteStart, pod("ns", "startup-1", ""))
	pendingWrite := s.times()[1][stageRunningWriteStart]
	time.Sleep(time.Millisecond)
	s.trace(kubelet.TraceStatusWriteStart, pod("ns", "startup-1", corev1.PodPending))
	runningWrite := s.times()[1][stageRunningWriteStart]
	s.trace(kubelet.TraceStatusWritten, pod("ns", "startup-1", corev1.PodRunning))
	time.Sleep(time.Millisecond)
	s.trace(kubelet.TraceStatusWriteStart, pod("ns", "startup-1", corev1.PodRunning))
	if runningWrite <= pendingWrite || s.times()[1][stageRunningWriteStart] != runningWrite {
		t.Errorf("write starts %d, %d, kept %d: want the second", pendingWrite, runningWrite, s.times()[1][stageRunningWriteStart])
	}
	if s.times()[1][stageRunningWritten] < runningWrite {
		t.Error("Running status write not recorded")
	}
	for i := range got {
		if got[i][stageSyncStart] != -1 {
			t.Errorf("pod %d: sync start recorded from another namespace or name", i)
		}
	}
	var nilStages *podStages
	nilStages.record("startup-0", stageSent, time.Now()) // the control's tracker has none
}

// TestRuntimeHistogramQuantile: nearest rank over bucket counts, the
// bucket's upper bound (its lower one for the last, unbounded bucket),
// and differences of two readings.
func TestRuntimeHistogramQuantile(t *testing.T) {
	buckets := []float64{0, 0.001, 0.01, 0.1, math.Inf(1)}
	h := rtHistogram{Counts: []uint64{90, 8, 1, 1}, Buckets: buckets}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, time.Millisecond}, {0.9, time.Millisecond}, {0.91, 10 * time.Millisecond}, {0.99, 100 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		if got := h.quantile(c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	later := rtHistogram{Counts: []uint64{90, 8, 11, 1}, Buckets: buckets}
	if got := later.sub(h).quantile(0.5); got != 100*time.Millisecond {
		t.Errorf("difference's median %v, want 100ms (ten samples in 0.01–0.1)", got)
	}
	if got := (rtHistogram{}).quantile(0.99); got != 0 {
		t.Errorf("empty histogram's p99 %v", got)
	}
}

// TestMachineBusy: /proc/stat's first line, busy = user + nice + system +
// irq + softirq + steal (idle and iowait left out), steal alone, in 1/100 s.
func TestMachineBusy(t *testing.T) {
	stat := []byte("cpu  1000 50 300 90000 700 20 30 5 0 0\ncpu0 500 25 150 45000 350 10 15 2 0 0\n")
	busy, steal := machineTimes(stat)
	if want := 1405 * time.Second / 100; busy != want {
		t.Errorf("busy %v, want %v", busy, want)
	}
	if want := 5 * time.Second / 100; steal != want {
		t.Errorf("steal %v, want %v", steal, want)
	}
	if busy, steal := machineTimes([]byte("intr 1 2 3\n")); busy != 0 || steal != 0 {
		t.Errorf("busy, steal of a file without the cpu line: %v, %v", busy, steal)
	}
	// Others' cores: the machine's busy time less this process's, per
	// second of the window; steal: the host's share of that.
	at := time.Now()
	w := runtimeWindow(runtimeSnapshot{at: at, processCPU: time.Second, machineCPU: 10 * time.Second, stealCPU: time.Second},
		runtimeSnapshot{at: at.Add(10 * time.Second), processCPU: 11 * time.Second, machineCPU: 25 * time.Second, stealCPU: 3 * time.Second})
	if w.ProcessCores != 1 || w.OthersCores != 0.5 || w.StealCores != 0.2 {
		t.Errorf("process %v cores, others %v, steal %v; want 1, 0.5 and 0.2", w.ProcessCores, w.OthersCores, w.StealCores)
	}
}

// TestRegistryHistograms: Prometheus histograms (cumulative buckets) read
// from a registry as counts per bucket, summed over the mutating verbs'
// series; 429s counted.
func TestRegistryHistograms(t *testing.T) {
	reg := prometheus.NewRegistry()
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_request_duration_seconds", Buckets: []float64{0.005, 0.1, 1}}, []string{"verb", "resource"})
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_request_total"}, []string{"verb", "code"})
	reg.MustRegister(lat, total)
	for i := 0; i < 97; i++ {
		lat.WithLabelValues("POST", "pods").Observe(0.002)
	}
	lat.WithLabelValues("PUT", "pods").Observe(0.05)
	lat.WithLabelValues("PATCH", "pods").Observe(0.5)
	lat.WithLabelValues("DELETE", "pods").Observe(3) // beyond the last bound
	lat.WithLabelValues("GET", "pods").Observe(5)    // not a write
	total.WithLabelValues("POST", "429").Add(3)
	total.WithLabelValues("PUT", "429").Add(2)
	total.WithLabelValues("POST", "201").Add(97)
	var s runtimeSnapshot
	s.readRegistries(reg, nil)
	if s.throttled != 5 {
		t.Errorf("429s %d, want 5", s.throttled)
	}
	if want := []uint64{97, 1, 1, 1}; !slices.Equal(s.mutating.Counts, want) {
		t.Errorf("mutating counts %v, want %v", s.mutating.Counts, want)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.98, 100 * time.Millisecond}, {0.99, time.Second}, {1, time.Second}} {
		if got := s.mutating.quantile(c.q); got != c.want {
			t.Errorf("mutating quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if len(s.fsync.Counts) != 0 {
		t.Errorf("fsync histogram %v from a registry without etcd", s.fsync)
	}
}

// TestRuntimeWindows: windows of arrivals from the first create, each with
// its pods' create→Running and the runtime's figures between the
// snapshots nearest its ends; the last is the whole run.
func TestRuntimeWindows(t *testing.T) {
	epoch := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	buckets := []float64{0, 0.001, 0.1, math.Inf(1)}
	snap := func(sec int, cpu time.Duration, gc, busy float64, fast, slow uint64) runtimeSnapshot {
		return runtimeSnapshot{at: epoch.Add(time.Duration(sec) * time.Second), processCPU: cpu, gcCPU: gc, busyCPU: busy,
			schedLat: rtHistogram{Counts: []uint64{fast, slow, 0}, Buckets: buckets}, gcPauses: rtHistogram{Counts: []uint64{0, 0, 0}, Buckets: buckets}}
	}
	// Creates start 10 s after the epoch; snapshots every 10 s from 0 to 70.
	snaps := []runtimeSnapshot{
		snap(0, 0, 0, 0, 0, 0), snap(10, 10*time.Second, 1, 10, 100, 0), snap(20, 25*time.Second, 4, 25, 200, 0),
		snap(30, 40*time.Second, 7, 40, 300, 0), snap(40, 58*time.Second, 12, 58, 300, 10),
		snap(50, 76*time.Second, 17, 76, 300, 20), snap(60, 90*time.Second, 20, 90, 400, 20), snap(70, 100*time.Second, 21, 100, 500, 20),
	}
	times := make([][numStages]int64, 4)
	for i, c := range []struct{ sent, running time.Duration }{
		{10 * time.Second, 10*time.Second + 5*time.Millisecond},
		{25 * time.Second, 25*time.Second + 7*time.Millisecond},
		{41 * time.Second, 42 * time.Second}, // slow, in the second window
		{50 * time.Second, -1},               // never Running
	} {
		for st := range numStages {
			times[i][st] = -1
		}
		times[i][stageSent] = int64(c.sent)
		if c.running >= 0 {
			times[i][stageRunningObserved] = int64(c.running)
		}
	}
	ws := windows(snaps, epoch, times, 30*time.Second)
	if len(ws) != 3 {
		t.Fatalf("%d windows, want 2 and the whole run: %+v", len(ws), ws)
	}
	first, second, whole := ws[0], ws[1], ws[2]
	if first.Start != 0 || first.End != 30 || first.Pods != 2 || first.Running.Max != 7*time.Millisecond {
		t.Errorf("first window %+v", first)
	}
	// 10 → 40 s: 48 s of CPU in 30 s, GC 11 of 48 busy seconds; 200
	// fast and 10 slow run-queue waits.
	if first.ProcessCores != 1.6 || math.Abs(first.GCShare-11.0/48) > 1e-9 || first.SchedP50 != time.Millisecond || first.SchedMax != 100*time.Millisecond {
		t.Errorf("first window's runtime %+v", first)
	}
	if second.Pods != 2 || second.Running.P50 != time.Second || second.Running.Max != time.Second {
		t.Errorf("second window %+v (one pod Running after 1 s, one never)", second)
	}
	if whole.Pods != 4 || whole.Running.Max != time.Second || whole.ProcessCores != 100.0/70 {
		t.Errorf("whole run %+v", whole)
	}
	if windows(snaps[:1], epoch, times, 30*time.Second) != nil {
		t.Error("windows from one snapshot")
	}
}

// closedWatchers reads apiserver_terminated_watchers_total by resource,
// the group after a dot as kubectl names resources.
func TestClosedWatchersByResource(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_terminated_watchers_total"}, []string{"group", "resource"})
	reg.MustRegister(c)
	c.WithLabelValues("", "pods").Add(2)
	c.WithLabelValues("coordination.k8s.io", "leases").Inc()
	got := closedWatchers(reg)
	if len(got) != 2 || got["pods"] != 2 || got["leases.coordination.k8s.io"] != 1 {
		t.Errorf("closedWatchers = %v, want pods 2, leases.coordination.k8s.io 1", got)
	}
}
