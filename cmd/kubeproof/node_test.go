package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

type fakeNode struct {
	name     string
	paused   atomic.Bool
	pauses   atomic.Int32
	pressure atomic.Pointer[kubelet.Pressure]
	memory   atomic.Pointer[resource.Quantity] // memory.available set
}

func (f *fakeNode) SetAvailable(s eviction.Signal, q *resource.Quantity) error {
	if s != eviction.SignalMemoryAvailable {
		return fmt.Errorf("fake node: only memory.available")
	}
	f.memory.Store(q)
	return nil
}

func (f *fakeNode) Pressure() kubelet.Pressure {
	if p := f.pressure.Load(); p != nil {
		return *p
	}
	return kubelet.Pressure{}
}
func (f *fakeNode) SetPressure(p kubelet.Pressure) { f.pressure.Store(&p) }

func (f *fakeNode) NodeName() string { return f.name }
func (f *fakeNode) Pause()           { f.paused.Store(true); f.pauses.Add(1) }
func (f *fakeNode) Resume()          { f.paused.Store(false) }
func (f *fakeNode) Paused() bool     { return f.paused.Load() }

// runNode runs `kubeproof node ARGS... --data-dir dir` and returns its output.
func runNode(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := newNodeCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--data-dir", dir))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// waitGoroutines fails t if more goroutines than before remain after a
// short poll.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("goroutines: %d before, %d after shutdown", before, runtime.NumGoroutine())
}

func TestNodeCommandFailRecoverList(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	nodes := []*fakeNode{{name: "node-1"}, {name: "node-10"}, {name: "node-2"}}
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := serveNodeAdmin(ctx, dir, []simulatedNode{nodes[0], nodes[1], nodes[2]}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, nodeAdminSocket)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, mode %v; want 0600", err, st.Mode())
	}

	out, err := runNode(t, dir, "fail", "node-2")
	if err != nil || out != "node/node-2 failed\n" {
		t.Fatalf("fail node-2: %q, %v", out, err)
	}
	if !nodes[2].Paused() || nodes[0].Paused() || nodes[1].Paused() {
		t.Fatalf("only node-2 should be paused")
	}
	// Failing again is idempotent: no second Pause.
	if _, err := runNode(t, dir, "fail", "node-2"); err != nil || nodes[2].pauses.Load() != 1 {
		t.Fatalf("second fail: %v, pauses %d", err, nodes[2].pauses.Load())
	}
	out, err = runNode(t, dir, "list")
	if err != nil {
		t.Fatal(err)
	}
	want := "NAME      STATE     PRESSURE\nnode-1    running   none\nnode-2    failed    none\nnode-10   running   none\n"
	if out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	if out, err := runNode(t, dir, "fail", "node-7"); err == nil || !strings.Contains(err.Error(), `no simulated node "node-7"`) {
		t.Fatalf("unknown node: %q, %v", out, err)
	}
	out, err = runNode(t, dir, "recover", "node-2", "node-1")
	if err != nil || out != "node/node-2 running\nnode/node-1 running\n" {
		t.Fatalf("recover: %q, %v", out, err)
	}
	if nodes[2].Paused() {
		t.Fatal("node-2 still paused after recover")
	}

	out, err = runNode(t, dir, "pressure", "node-10", "MemoryPressure,DiskPressure")
	if err != nil || out != "node/node-10 pressure MemoryPressure,DiskPressure\n" {
		t.Fatalf("pressure: %q, %v", out, err)
	}
	if p := nodes[1].Pressure(); !p.Memory || !p.Disk || p.PID {
		t.Fatalf("node-10 pressure %+v", p)
	}
	if out, _ := runNode(t, dir, "list"); !strings.Contains(out, "node-10   running   MemoryPressure,DiskPressure") {
		t.Fatalf("list after pressure:\n%s", out)
	}
	if _, err := runNode(t, dir, "pressure", "node-10", "Hunger"); err == nil || !strings.Contains(err.Error(), `unknown pressure condition "Hunger"`) {
		t.Fatalf("bad condition: %v", err)
	}
	if out, err := runNode(t, dir, "pressure", "node-10", "memory.available=50Mi"); err != nil || !strings.HasPrefix(out, "node/node-10 pressure") {
		t.Fatalf("pressure memory.available=50Mi: %q, %v", out, err)
	}
	if q := nodes[1].memory.Load(); q == nil || q.String() != "50Mi" {
		t.Fatalf("node-10 memory.available set to %v", q)
	}
	if _, err := runNode(t, dir, "pressure", "node-10", "cpu.available=1"); err == nil || !strings.Contains(err.Error(), "unsupported eviction signal cpu.available") {
		t.Fatalf("bad signal: %v", err)
	}
	if _, err := runNode(t, dir, "pressure", "node-10", "pid.available=10"); err == nil || !strings.Contains(err.Error(), "only memory.available") {
		t.Fatalf("node refusing a signal: %v", err)
	}
	if out, err := runNode(t, dir, "pressure", "node-10", "none"); err != nil || out != "node/node-10 pressure none\n" || nodes[1].Pressure() != (kubelet.Pressure{}) {
		t.Fatalf("pressure none: %q, %v", out, err)
	}

	// A second up on the same data directory is refused while the first runs.
	if _, err := serveNodeAdmin(ctx, dir, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second admin endpoint on the same socket: %v", err)
	}
	cancel()
	wait()
	if _, err := os.Stat(filepath.Join(dir, nodeAdminSocket)); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if _, err := runNode(t, dir, "list"); err == nil || !strings.Contains(err.Error(), "is it running") {
		t.Fatalf("list with no up running: %v", err)
	}
	waitGoroutines(t, before)
}

func TestNodeAdminReplacesStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, nodeAdminSocket)
	// A socket file nobody listens on, as a killed up leaves behind.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket not in place: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := serveNodeAdmin(ctx, dir, []simulatedNode{&fakeNode{name: "node-1"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	if out, err := runNode(t, dir, "list"); err != nil || !strings.Contains(out, "node-1") {
		t.Fatalf("list: %q, %v", out, err)
	}
	cancel()
	wait()
}

// TestUpNodeFailMovesPods is the acceptance scenario on the real
// pipeline: a Deployment runs on two simulated nodes; `kubeproof node
// fail` on one of them stops its heartbeats, the node lifecycle controller
// marks it unreachable and evicts its pods, and the ReplicaSet's
// replacements run on the other node. `kubeproof node recover` lets the
// kubelet finish the evicted pods.
func TestUpNodeFailMovesPods(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a node monitor grace period (~20 s)")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{
		DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true, CompactionInterval: -1, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 2,
		// Above the kubelets' 10 s lease renewal, so healthy nodes stay Ready.
		NodeMonitorGracePeriod: 20 * time.Second,
		PodEvictionTimeout:     time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	}()
	wait, err := serveUpNodeAdmin(ctx, c, dir, 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer wait()
	defer cancel()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(4)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					Containers: []v1.Container{{Name: "web", Image: "nginx"}},
					// The API server's DefaultTolerationSeconds admission
					// would add 300 s; a short one keeps the test short.
					Tolerations: []v1.Toleration{
						{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(1))},
						{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(1))},
					},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var victim string
	waitFor(t, 60*time.Second, "4 running pods", func() bool {
		running := runningPods(t, cs)
		if len(running) != 4 {
			return false
		}
		victim = running[0].Spec.NodeName
		return true
	})
	other := "node-1"
	if victim == "node-1" {
		other = "node-2"
	}

	if out, err := runNode(t, dir, "fail", victim); err != nil {
		t.Fatalf("node fail: %q, %v", out, err)
	}
	waitFor(t, 90*time.Second, "node "+victim+" Ready=Unknown and every replica running on "+other, func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
		if err != nil {
			return false
		}
		unknown := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady && cond.Status == v1.ConditionUnknown {
				unknown = true
			}
		}
		running := runningPods(t, cs)
		if !unknown || len(running) != 4 {
			t.Logf("node %s conditions %v taints %v; running %d", victim, n.Status.Conditions, n.Spec.Taints, len(running))
			return false
		}
		for _, p := range running {
			if p.Spec.NodeName != other {
				t.Logf("pod %s on %s", p.Name, p.Spec.NodeName)
				return false
			}
		}
		return true
	})

	if out, err := runNode(t, dir, "recover", victim); err != nil {
		t.Fatalf("node recover: %q, %v", out, err)
	}
	waitFor(t, 60*time.Second, "evicted pods gone and node "+victim+" Ready again", func() bool {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == victim {
				t.Logf("pod %s still on %s: deletion %v phase %s", p.Name, victim, p.DeletionTimestamp, p.Status.Phase)
				return false
			}
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				t.Logf("node %s Ready=%s", victim, cond.Status)
				return cond.Status == v1.ConditionTrue
			}
		}
		return false
	})
}

// runningPods lists the Running, not terminating pods of default.
func runningPods(t *testing.T, cs kubernetes.Interface) []v1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []v1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == v1.PodRunning {
			out = append(out, p)
		}
	}
	return out
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(2 * time.Second)
	}
}
