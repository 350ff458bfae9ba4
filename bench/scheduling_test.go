package bench

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestBuiltInWorkloadsParse(t *testing.T) {
	all, err := SchedulingWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"SchedulingBasic/500Nodes_1000Pods", "SchedulingBasic/5000Nodes_10000Pods", "MixedChurn/5000Nodes"} {
		if _, err := SchedulingWorkloadByName(name); err != nil {
			t.Error(err)
		}
	}
	w, _ := SchedulingWorkloadByName("SchedulingBasic/5000Nodes_10000Pods")
	if len(w.Ops) != 3 || w.Ops[0].Count != 5000 || w.Ops[1].Count != 10000 || w.Ops[2].Opcode != OpBarrier {
		t.Errorf("SchedulingBasic/5000Nodes_10000Pods resolved to %+v", w.Ops)
	}
	if w.PodTemplate.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 {
		t.Errorf("pod template requests %v", w.PodTemplate.Spec.Containers[0].Resources.Requests)
	}
	if len(all) < 7 {
		t.Errorf("only %d workloads", len(all))
	}
}

func TestParseSchedulingWorkloadsRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown opcode": "- name: X\n  nodeTemplate: {}\n  podTemplate: {}\n  workloadTemplate: [{opcode: fly}]\n  workloads: [{name: a}]\n",
		"missing param":  "- name: X\n  nodeTemplate: {}\n  podTemplate: {}\n  workloadTemplate: [{opcode: createNodes, countParam: $n}]\n  workloads: [{name: a}]\n",
		"bad count":      "- name: X\n  nodeTemplate: {}\n  podTemplate: {}\n  workloadTemplate: [{opcode: createNodes, countParam: $n}]\n  workloads: [{name: a, params: {n: 1.5}}]\n",
		"unknown field":  "- name: X\n  nodeTemplate: {}\n  podTemplate: {}\n  workloadTemplate: [{opcode: barrier, colour: red}]\n  workloads: [{name: a}]\n",
		"no templates":   "- name: X\n  workloadTemplate: [{opcode: barrier}]\n  workloads: [{name: a}]\n",
	} {
		if _, err := ParseSchedulingWorkloads([]byte(doc)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := histogram{bounds: []float64{0.001, 0.002, 0.004}, counts: []float64{50, 90, 100}, total: 100}
	if got := h.quantile(0.5); got != time.Millisecond {
		t.Errorf("p50 = %v, want 1ms", got)
	}
	if got := h.quantile(0.99); got != 3800*time.Microsecond {
		t.Errorf("p99 = %v, want 3.8ms", got)
	}
	if got := (histogram{}).quantile(0.5); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
}

func TestSummarizeThroughput(t *testing.T) {
	got := summarizeThroughput([]float64{100, 300, 200, 400})
	if got.Average != 250 || got.Perc50 != 200 || got.Perc90 != 400 || got.Perc99 != 400 {
		t.Errorf("got %+v", got)
	}
}

// TestSchedulingSmoke runs a small SchedulingBasic and MixedChurn against an
// in-process control plane and scheduler: every pod gets bound, and the
// reported metrics are consistent with that.
func TestSchedulingSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	for _, name := range []string{"SchedulingBasic/50Nodes_100Pods", "MixedChurn/50Nodes"} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			w, err := SchedulingWorkloadByName(name)
			if err != nil {
				t.Fatal(err)
			}
			before := runtime.NumGoroutine()
			var progress int
			res, err := RunScheduling(context.Background(), SchedulingConfig{
				Workload: w, UnsafeNoFsync: true, BarrierTimeout: time.Minute,
				Progress: func(Progress) { progress++ },
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Nodes != 50 || res.Pods != 100 || res.Scheduled != 100 {
				t.Errorf("nodes %d, pods %d, scheduled %d; want 50, 100, 100", res.Nodes, res.Pods, res.Scheduled)
			}
			tp := res.SchedulingThroughput
			if len(tp.Windows) == 0 || tp.Average <= 0 || tp.Perc50 <= 0 || tp.Perc99 < tp.Perc50 {
				t.Errorf("throughput %+v", tp)
			}
			var sum float64
			for _, w := range tp.Windows {
				sum += w
			}
			if sum > 100+1e-9 && len(tp.Windows) > 1 {
				t.Errorf("windows add up to %v bindings, more than the 100 pods", sum)
			}
			if res.AttemptLatencyP50 <= 0 || res.AttemptLatencyP99 < res.AttemptLatencyP50 {
				t.Errorf("attempt latency p50 %v p99 %v", res.AttemptLatencyP50, res.AttemptLatencyP99)
			}
			if res.CPUTime <= 0 || res.RSSBytes <= 0 || res.Scheduler != SchedulerInProcess {
				t.Errorf("cpu %v rss %d scheduler %s", res.CPUTime, res.RSSBytes, res.Scheduler)
			}
			if res.Elapsed > time.Second && progress == 0 {
				t.Error("no progress reported")
			}
			t.Logf("%+v", res)
			checkNoGoroutineLeak(t, before)
		})
	}
}

// BenchmarkSchedulingBasic500Nodes1000Pods runs SchedulingBasic/
// 500Nodes_1000Pods with the scheduler in-process (CPU and RSS are then
// the whole process's; `kubeproof bench scheduling-basic-500` runs the
// scheduler as its own process for per-component numbers).
func BenchmarkSchedulingBasic500Nodes1000Pods(b *testing.B) {
	w, err := SchedulingWorkloadByName("SchedulingBasic/500Nodes_1000Pods")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		res, err := RunScheduling(context.Background(), SchedulingConfig{Workload: w})
		if err != nil {
			b.Fatal(err)
		}
		if res.Scheduled != 1000 {
			b.Fatalf("scheduled %d of 1000", res.Scheduled)
		}
		b.ReportMetric(res.SchedulingThroughput.Average, "pods/s")
		b.ReportMetric(res.SchedulingThroughput.Perc50, "p50-pods/s")
		b.ReportMetric(float64(res.AttemptLatencyP99)/1e6, "attempt-p99-ms")
	}
}

// checkNoGoroutineLeak polls until the goroutine count is back to before
// (with slack for runtime and HTTP keep-alive goroutines winding down).
func checkNoGoroutineLeak(t *testing.T, before int) {
	t.Helper()
	const slack = 5
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+slack {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after the run, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPreemptionSmoke runs Preemption/10Nodes: low-priority pods fill
// every node's CPU, then each measured high-priority pod gets bound by
// preempting a low-priority one.
func TestPreemptionSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	w, err := SchedulingWorkloadByName("Preemption/10Nodes")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.PriorityClasses) != 2 || w.Ops[3].PodTemplate.Spec.PriorityClassName != "bench-high-priority" || w.Ops[1].PodTemplate.Spec.PriorityClassName != "bench-low-priority" {
		t.Fatalf("workload resolved to %+v", w)
	}
	before := runtime.NumGoroutine()
	res, err := RunScheduling(context.Background(), SchedulingConfig{Workload: w, UnsafeNoFsync: true, BarrierTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes != 10 || res.Pods != 10 || res.Scheduled != 10 {
		t.Errorf("nodes %d, pods %d, scheduled %d; want 10, 10, 10 (the high-priority pods only)", res.Nodes, res.Pods, res.Scheduled)
	}
	if res.SchedulingThroughput.Average <= 0 || res.AttemptLatencyP99 <= 0 {
		t.Errorf("throughput %+v, attempt p99 %v", res.SchedulingThroughput, res.AttemptLatencyP99)
	}
	checkNoGoroutineLeak(t, before)
}

// TestThroughputSamplerBurstBeforeFirstPoll: bindings the sampler's poll
// never saw (it had not run before stop) still give a rate, over the time
// since the sampler was created; no bindings give no windows.
func TestThroughputSamplerBurstBeforeFirstPoll(t *testing.T) {
	stopped := func(count int64) *throughputSampler {
		done := make(chan struct{})
		close(done)
		return &throughputSampler{created: time.Now().Add(-time.Second), cancel: func() {}, done: done, count: func() int64 { return count }}
	}
	windows, elapsed := stopped(10).stop()
	if len(windows) != 1 || windows[0] <= 0 || windows[0] > 10 || elapsed < time.Second {
		t.Errorf("10 unseen bindings: windows %v, elapsed %v; want one rate in (0, 10] over at least 1s", windows, elapsed)
	}
	if windows, elapsed := stopped(0).stop(); windows != nil || elapsed != 0 {
		t.Errorf("no bindings: windows %v, elapsed %v; want none", windows, elapsed)
	}
}
