package bench

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestStartupSmoke starts 20 pods on 5 simulated nodes: every pod gets
// Running and Ready, latencies are ordered and positive, and memory was
// read at each step.
func TestStartupSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	before := runtime.NumGoroutine()
	res, err := RunStartup(context.Background(), StartupConfig{
		Nodes: 5, Pods: 20, Rate: 100, UnsafeNoFsync: true, Timeout: time.Minute, Settle: time.Second,
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
	if res.HeapBefore == 0 || res.HeapAfterNodes == 0 || res.HeapAfterPods == 0 || res.RSSAfterPods == 0 {
		t.Errorf("memory not read: %+v", res)
	}
	checkNoGoroutineLeak(t, before)
}

// BenchmarkPodStartup starts 200 pods at 100 pods/s on 20 simulated nodes
// and reports creation-to-Running latency.
func BenchmarkPodStartup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		res, err := RunStartup(context.Background(), StartupConfig{Nodes: 20, Pods: 200, Rate: 100})
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
