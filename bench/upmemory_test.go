package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// TestUpMemorySlope: per pod as a slope is the growth from the half-way
// reading to the last, beyond the control's, over the pods in between;
// the table prints it by class too.
func TestUpMemorySlope(t *testing.T) {
	const k = 1024
	m := UpMemory{Nodes: 10, Pods: 100, MidPods: 50,
		Full: [3]MemoryReading{{RSS: 10000 * k, Heap: 4000 * k}, {RSS: 13000 * k, Heap: 5000 * k},
			{RSS: 15000 * k, Heap: 6000 * k, Classes: map[string]uint64{"heap/stacks": 500 * k, "gc/heap/objects": 30000, "gc/scan/heap": 4096 * k, "gc/scan/stack": 512 * k}}},
		// The full run grew 1400 KiB RSS in its first 50 pods, 600 in the
		// last 50: per-node state filled with the first ones.
		FullMid:    MemoryReading{RSS: 14400 * k, Heap: 5600 * k, Classes: map[string]uint64{"heap/stacks": 450 * k}},
		Control:    [3]MemoryReading{{RSS: 9000 * k, Heap: 3000 * k}, {RSS: 10000 * k, Heap: 3500 * k}, {RSS: 10500 * k, Heap: 3600 * k, Classes: map[string]uint64{"heap/stacks": 100 * k, "gc/heap/objects": 12000, "gc/scan/heap": 2048 * k, "gc/scan/stack": 128 * k}}},
		ControlMid: MemoryReading{RSS: 10300 * k, Heap: 3550 * k, Classes: map[string]uint64{"heap/stacks": 100 * k}},
	}
	m.compute()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"RSS per pod (nodes Ready to pods Running)", m.RSSPerPod, (5000 - 3000 - 500) * k / 100},
		{"RSS per pod, slope", m.RSSPerPodSlope, ((15000 - 14400) - (10500 - 10300)) * k / 50},
		{"heap per pod, slope", m.HeapPerPodSlope, ((6000 - 5600) - (3600 - 3550)) * k / 50},
		{"control RSS per pod, slope", m.ControlRSSPerPodSlope, (10500 - 10300) * k / 50},
		{"control heap per pod, slope", m.ControlHeapPerPodSlope, (3600 - 3550) * k / 50},
		// Beyond, start → pods Running: (5000 − 1500) KiB RSS, of which
		// 100 pods × 8 KiB by the slope: the rest over 10 nodes.
		{"RSS per node with the pods phase's fill", m.RSSPerNodeFilled, (5000 - 1500 - 100*8) * k / 10},
		{"heap per node with the pods phase's fill", m.HeapPerNodeFilled, (2000 - 600 - 100*7) * k / 10},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var b bytes.Buffer
	WriteUpMemoryTable(&b, m)
	for _, want := range []string{
		"| **RSS beyond the API server, slope** | | | | | **8.0 KiB** |",
		"| **live heap beyond the API server, slope** | | | | | **7.0 KiB** |",
		"| RSS, control, slope | | 10.1 MiB at 50 pods | 10.3 MiB | | 4.0 KiB |",
		"goroutine stacks 1.0 KiB;",
		"full run / control: heap objects 30000 / 12000 (per pod 300.0 / 120.0); scannable heap 4.0 MiB / 2.0 MiB; scannable stacks 0.5 MiB / 0.1 MiB |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Without a half-way reading there is no slope.
	m.MidPods = 0
	m.RSSPerPodSlope = 0
	m.compute()
	b.Reset()
	WriteUpMemoryTable(&b, m)
	if m.RSSPerPodSlope != 0 || strings.Contains(b.String(), "slope") {
		t.Errorf("a slope without a half-way reading: %v\n%s", m.RSSPerPodSlope, b.String())
	}
}

// The control stores as many events as the full run's namespace held:
// the share of the template events that is, spread evenly over the pods.
func TestControlEventShare(t *testing.T) {
	tmpl := &upTemplates{events: make([]corev1.Event, 5), laterEvents: make([]corev1.Event, 4)}
	// 10 nodes' first pods with 5 events, 90 later pods with 4: 410.
	for _, c := range []struct {
		full int
		want float64
	}{{205, 0.5}, {410, 1}, {500, 1}, {0, 1}} {
		if got := eventShare(tmpl, 10, 100, c.full); got != c.want {
			t.Errorf("full run with %d events: share %v, want %v", c.full, got, c.want)
		}
	}
	for _, share := range []float64{1, 0.5, 0.3, 0.73} {
		th := &eventThinner{share: share}
		taken := 0
		for n := 1; n <= 410; n++ {
			if th.take() {
				taken++
			}
			if d := float64(taken) - float64(n)*share; d > 1 || d < -1 {
				t.Fatalf("share %v: %d taken of the first %d", share, taken, n)
			}
		}
		if want := int(410*share + 0.5); taken != want {
			t.Errorf("share %v: %d of 410 taken, want %d", share, taken, want)
		}
	}
}

// lowestHeap: the startup workloads' rule takes exactly n readings and
// keeps the lowest; the node agent's stops once readings stop falling by
// more than 1%.
func TestLowestHeapRules(t *testing.T) {
	run := func(rule settleRule, heaps []uint64) (low uint64, reads int) {
		got, err := lowestHeap(context.Background(), rule, func(h uint64) uint64 { return h }, func() (uint64, error) {
			h := heaps[min(reads, len(heaps)-1)]
			reads++
			return h, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, reads
	}
	if low, reads := run(settleRule{waitFirst: true, reads: 4}, []uint64{500, 300, 400, 600, 100}); low != 300 || reads != 4 {
		t.Errorf("4 readings: lowest %d after %d, want 300 after 4", low, reads)
	}
	// 1000, then 995 and 996 (within 1% of the low): quiet twice, stop.
	if low, reads := run(settleRule{reads: 10, quiet: 2}, []uint64{1000, 995, 996, 500}); low != 995 || reads != 3 {
		t.Errorf("quiet rule: lowest %d after %d, want 995 after 3", low, reads)
	}
	// A drop of more than 1% restarts the quiet count.
	if low, reads := run(settleRule{reads: 10, quiet: 2}, []uint64{1000, 999, 900, 899, 898, 100}); low != 898 || reads != 5 {
		t.Errorf("quiet rule after a drop: lowest %d after %d, want 898 after 5", low, reads)
	}
}

// TestGCSettingRow: the table names both processes' GC percent and their
// partly used spans per byte of heap objects, and says when the control
// ran at another setting than the full run (its share would not compare).
func TestGCSettingRow(t *testing.T) {
	reading := func(gogc, objects, unused uint64) MemoryReading {
		return MemoryReading{Classes: map[string]uint64{"gc/gogc": gogc, "heap/objects": objects, "heap/unused": unused}}
	}
	for _, c := range []struct {
		name          string
		full, control MemoryReading
		want          []string
		notWant       string
	}{
		{"same", reading(50, 400, 180), reading(50, 200, 88), []string{"GC percent, full run / control: 50 / 50;", "0.45 / 0.44"}, "not the same setting"},
		{"different", reading(50, 400, 180), reading(100, 200, 150), []string{"50 / 100 — **not the same setting", "0.45 / 0.75"}, ""},
		{"not read", MemoryReading{}, MemoryReading{}, nil, "GC percent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			writeGCSetting(&b, UpMemory{Full: [3]MemoryReading{2: c.full}, Control: [3]MemoryReading{2: c.control}})
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("row %q lacks %q", b.String(), w)
				}
			}
			if c.notWant != "" && strings.Contains(b.String(), c.notWant) {
				t.Errorf("row %q has %q", b.String(), c.notWant)
			}
		})
	}
}

// TestControlTakesTheFullRunsGCPercent: the control process's request
// carries the full run's GC percent, and RunUpControl sets it before
// anything else (here: a request with no templates, refused after that).
func TestControlTakesTheFullRunsGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	file := filepath.Join(t.TempDir(), "request.json")
	b, err := json.Marshal(newControlRequest(StartupConfig{Nodes: 1, gcPercent: 37}, &upTemplates{}, 0, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RunUpControl(context.Background(), file, io.Discard); err == nil {
		t.Fatal("a request without templates ran")
	}
	if got := currentGCPercent(); got != 37 {
		t.Errorf("GC percent %d after the control's request, want the full run's 37", got)
	}
}

// The templates follow which pods of the full run pulled the image, not
// their names: under load a node's later pod may pull while its first
// finds the image present, and two pods of a node may both pull. The
// control then writes as many events as the full run held.
func TestTemplatePodsFollowPulls(t *testing.T) {
	ev := func(pod, node, reason string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod}, Reason: reason,
			Source: corev1.EventSource{Component: kubelet.EventComponent, Host: node}}
	}
	pod := func(name, node string, pulled bool) []corev1.Event {
		evs := []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: name}, Reason: "Scheduled"}}
		if pulled {
			evs = append(evs, ev(name, node, kubelet.EventPulling))
		}
		return append(evs, ev(name, node, "Pulled"), ev(name, node, "Created"), ev(name, node, "Started"))
	}
	// startup-0 on node-1 found the image startup-3 pulled; node-2's two
	// pods both pulled; node-3's first pulled.
	var all []corev1.Event
	for _, p := range []struct {
		name, node string
		pulled     bool
	}{{"startup-0", "node-1", false}, {"startup-1", "node-2", true}, {"startup-2", "node-3", true},
		{"startup-3", "node-1", true}, {"startup-4", "node-2", true}, {"startup-5", "node-3", false}} {
		all = append(all, pod(p.name, p.node, p.pulled)...)
	}
	first, later, pullers := templatePods(all, "startup-0", "startup-5")
	if first != "startup-1" || later != "startup-5" {
		t.Errorf("templates %q, %q; want startup-1 (first by name that pulled), startup-5", first, later)
	}
	if want := map[string]int{"node-1": 1, "node-2": 2, "node-3": 1}; !maps.Equal(pullers, want) {
		t.Errorf("pullers %v, want %v", pullers, want)
	}
	// 4 pulling pods with 5 events, 2 others with 4: 28, all written.
	tmpl := &upTemplates{events: make([]corev1.Event, 5), laterEvents: make([]corev1.Event, 4), pullers: pullers}
	if got := eventShare(tmpl, 3, 6, len(all)); len(all) != 28 || got != 1 {
		t.Errorf("share %v of %d events, want 1 of 28", got, len(all))
	}
	// Preferred pods are kept when they are what they stand for.
	if first, later, _ := templatePods(all, "startup-3", "startup-0"); first != "startup-3" || later != "startup-0" {
		t.Errorf("preferred templates %q, %q; want startup-3, startup-0", first, later)
	}
	// No later pod asked for: none.
	if _, later, _ := templatePods(all, "startup-0", ""); later != "" {
		t.Errorf("later %q, want none", later)
	}
}
