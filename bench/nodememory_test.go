package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestNodeAgentSmoke drives the node-memory workload's agent over its
// line protocol against an in-process API server: memory readings, two
// kubelets whose nodes get Ready, a pod that gets Running, a heap profile,
// refusals, and a clean stop when its input ends.
func TestNodeAgentSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", UnsafeNoFsync: true, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	profile := filepath.Join(t.TempDir(), "agent.heap")
	done := make(chan error, 1)
	go func() { done <- RunNodeAgent(ctx, c.AdminConfig, profile, inR, outW); outW.Close() }()
	replies := bufio.NewScanner(outR)
	ask := func(cmd string) agentMemory {
		t.Helper()
		fmt.Fprintln(inW, cmd)
		if !replies.Scan() {
			t.Fatalf("%s: no reply", cmd)
		}
		var m agentMemory
		if err := json.Unmarshal(replies.Bytes(), &m); err != nil {
			t.Fatalf("%s: %q: %v", cmd, replies.Text(), err)
		}
		return m
	}
	if m := ask("mem"); m.Heap == 0 || m.RSS == 0 || m.Err != "" {
		t.Errorf("mem: %+v", m)
	} else {
		// The runtime's memory classes come with each reading: every one
		// named, the live objects at least the live heap, RSS's parts.
		for _, c := range memoryClasses {
			if _, ok := m.Classes[c.name]; !ok {
				t.Errorf("mem: no %s class", c.name)
			}
		}
		if m.Classes["heap/objects"] < m.Heap || m.Classes["goroutines"] == 0 || m.Classes["rss/anon"] == 0 || m.Classes["rss/file"] == 0 {
			t.Errorf("mem classes: %v (heap %d)", m.Classes, m.Heap)
		}
	}
	if m := ask("cpu"); m.CPU <= 0 || m.Err != "" {
		t.Errorf("cpu: %+v", m)
	}
	if m := ask("nodes 2"); m.Err != "" {
		t.Fatalf("nodes 2: %s", m.Err)
	}
	if m := ask("nodes 2"); m.Err == "" {
		t.Errorf("a second nodes command was accepted")
	}
	if m := ask("frobnicate"); m.Err == "" {
		t.Errorf("an unknown command was accepted")
	}
	if err := waitNodesReady(ctx, cs, 2, time.Minute, &progressLine{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureDefaultServiceAccount(ctx, cs, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, BenchPod("default", "p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not Running: %v %+v", err, p.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := ask("profile"); m.Err != "" {
		t.Errorf("profile: %s", m.Err)
	}
	if m := ask("cpuprofile"); m.Err == "" {
		t.Errorf("stopping a CPU profile that never started was accepted")
	}
	if m := ask("cpuprofile " + profile + ".cpu"); m.Err != "" {
		t.Errorf("cpuprofile start: %s", m.Err)
	}
	if m := ask("cpuprofile"); m.Err != "" {
		t.Errorf("cpuprofile stop: %s", m.Err)
	}
	if m := ask("profile .nodes"); m.Err != "" {
		t.Errorf("profile .nodes: %s", m.Err)
	}
	for _, p := range []string{profile, profile + ".nodes", profile + ".cpu"} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("heap profile %s: %v", p, err)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("agent: %v", err)
	}
	cancel()
	if err := c.Stop(); err != nil {
		t.Errorf("stopping the cluster: %v", err)
	}
	checkNoGoroutineLeak(t, before)
}

func TestSettledMemoryTakesTheHeapsFloor(t *testing.T) {
	old := settleEvery
	settleEvery = time.Millisecond
	defer func() { settleEvery = old }()
	for _, tc := range []struct {
		name         string
		heaps        []uint64
		want         uint64
		wantReadings int
	}{
		// Falling, then a resync raises it now and then: the lowest
		// reading, once six in a row brought no new low below 1%.
		{"falls then oscillates", []uint64{1000, 900, 800, 790, 820, 795, 830, 800, 810, 805}, 790, 10},
		// A backlog drains slowly (under 2% per reading), then at once:
		// the floor after it, not the first slow step.
		{"slow drain then drop", []uint64{1000, 990, 985, 980, 700, 710, 705, 702, 701, 703, 704}, 700, 11},
		// Never quiet: at most settleReads+1 readings, the lowest.
		{"keeps falling", func() []uint64 {
			var h []uint64
			for i := 0; i <= settleReads+5; i++ {
				h = append(h, uint64(100000-1000*i))
			}
			return h
		}(), uint64(100000 - 1000*settleReads), settleReads + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			ask := func(string) (agentMemory, error) {
				h := tc.heaps[min(calls, len(tc.heaps)-1)]
				calls++
				return agentMemory{Heap: h, RSS: int64(h) * 2}, nil
			}
			m, err := settledMemory(context.Background(), ask)
			if err != nil {
				t.Fatal(err)
			}
			if m.Heap != tc.want || m.RSS != int64(tc.want)*2 || calls != tc.wantReadings {
				t.Errorf("settled at %d (RSS %d) after %d readings, want %d after %d", m.Heap, m.RSS, calls, tc.want, tc.wantReadings)
			}
		})
	}
}

// TestNodeMemoryTableShowsClasses: the printed table carries the agent's
// memory classes per node and per pod next to RSS, and the share of RSS
// outside the Go runtime's accounting.
func TestNodeMemoryTableShowsClasses(t *testing.T) {
	r := NodeMemoryResult{Nodes: 10, Pods: 100, AgentRSS: [3]int64{100 << 20, 110 << 20, 120 << 20}}
	for i := range r.AgentClasses {
		r.AgentClasses[i] = map[string]uint64{"heap/unused": uint64(i) << 20, "total": uint64(80+10*i) << 20, "heap/released": 0, "gc/gogc": 25, "goroutines": uint64(100 * (i + 1)),
			"gc/heap/objects": uint64(1000 * (i + 1))}
	}
	r.AgentClassesPerNode = classDiffs(r.AgentClasses[0], r.AgentClasses[1], 10)
	r.AgentClassesPerPod = classDiffs(r.AgentClasses[1], r.AgentClasses[2], 100)
	r.AgentRSSPerNode, r.AgentRSSPerPod = float64(10<<20)/10, float64(10<<20)/100
	var b strings.Builder
	WriteNodeMemoryTable(&b, []NodeMemoryResult{r})
	for _, want := range []string{
		"| heap/unused | 102.4 KiB | 10.2 KiB | 2.0 MiB |",
		"| goroutines | 10.00 | 1.000 | 300 |",
		"| gc/gogc | | | 25 |",
		// Heap objects are a count, not bytes.
		"| gc/heap/objects | 100.00 | 10.000 | 3000 |",
		// RSS grew by as much as total: nothing outside the runtime.
		"| RSS − (total − released) | 0.0 KiB | 0.0 KiB | 20.0 MiB |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
