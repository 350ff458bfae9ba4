package bench

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
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
