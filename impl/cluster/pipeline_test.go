package cluster

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPipelineRunsPods runs the API server, the scheduler and two simulated
// kubelets, and checks that pods end Running on a node, with an IP from that
// node's pod CIDR, and that a graceful delete goes through the kubelet.
func TestPipelineRunsPods(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Scheduler: true, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodeCIDR := map[string]netip.Prefix{}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				running++
			}
		}
		if running == 3 {
			for _, p := range pods.Items {
				cidr, ok := nodeCIDR[p.Spec.NodeName]
				if !ok {
					n, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cidr = netip.MustParsePrefix(n.Spec.PodCIDR)
					nodeCIDR[p.Spec.NodeName] = cidr
				}
				if !cidr.Contains(netip.MustParseAddr(p.Status.PodIP)) {
					t.Errorf("pod %s on %s has IP %s outside the node's %s", p.Name, p.Spec.NodeName, p.Status.PodIP, cidr)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods not running after 60s: %+v", pods.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A graceful delete completes: the kubelet stops the pod and removes it.
	if err := cs.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pod a not removed after its graceful delete")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after stop\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
