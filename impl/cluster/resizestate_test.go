package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSimulatedNodeKeepsResizeAllocationsAcrossRestart: on a simulated
// node of 2 CPUs, pod "big" (1 CPU) and pod "small" (500m) run; big's
// resize to 1800m is Deferred (500m are taken). After the cluster stops
// and starts again on the same data directory, the node's new kubelet
// admits big by its allocation kept in the data directory (1 CPU, as
// upstream's allocation checkpoint keeps it), not by its spec (1800m),
// so both pods run again and the resize is still pending (not admitted
// before the node has every pod: TestPendingResizeWaitsForSourceSynced).
// Kept in memory only, one of them was Failed with OutOfcpu after the
// restart.
func TestSimulatedNodeKeepsResizeAllocationsAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 1, NodeCPU: "2"}
	res := func(cpu string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}}
	}
	cpuOf := func(l corev1.ResourceList) string {
		q, ok := l[corev1.ResourceCPU]
		if !ok {
			return ""
		}
		return q.String()
	}
	condition := func(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == typ {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	firstContainers := map[string]string{} // pod name: its container ID before the restart
	for round := 0; round < 2; round++ {
		c, err := Start(ctx, cfg)
		if err != nil {
			t.Fatalf("start %d: %v", round+1, err)
		}
		cs, err := c.Client()
		if err != nil {
			t.Fatal(err)
		}
		pods := cs.CoreV1().Pods("default")
		// waitFor polls until ok holds of pod name; a Failed pod ends the
		// test.
		waitFor := func(name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
			t.Helper()
			deadline := time.Now().Add(time.Minute)
			for {
				p, err := pods.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ok(p) {
					return p
				}
				if p.Status.Phase == corev1.PodFailed || time.Now().After(deadline) {
					t.Fatalf("start %d: pod %s %s: not reached: %s %s %s", round+1, name, what, p.Status.Phase, p.Status.Reason, p.Status.Message)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		// running is ok once the pod runs a container of this run's
		// (simulated, so new) runtime that reports its resources.
		running := func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Resources != nil &&
				p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[0].ContainerID != firstContainers[p.Name]
		}
		if round == 0 {
			for name, cpu := range map[string]string{"big": "1", "small": "500m"} {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: res(cpu)}}}}
				if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range []string{"big", "small"} {
				firstContainers[name] = waitFor(name, "running", running).Status.ContainerStatuses[0].ContainerID
			}
			p, err := pods.Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Spec.Containers[0].Resources = res("1800m")
			if _, err := pods.UpdateResize(ctx, "big", p, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("UpdateResize: %v", err)
			}
			waitFor("big", "resize Deferred", func(p *corev1.Pod) bool {
				c := condition(p, corev1.PodResizePending)
				return c != nil && c.Reason == corev1.PodReasonDeferred
			})
		} else {
			for _, name := range []string{"small", "big"} {
				waitFor(name, "running again", running)
			}
			p := waitFor("big", "resize still Deferred", func(p *corev1.Pod) bool {
				c := condition(p, corev1.PodResizePending)
				return c != nil && c.Reason == corev1.PodReasonDeferred && running(p)
			})
			if got := cpuOf(p.Status.ContainerStatuses[0].AllocatedResources); got != "1" {
				t.Errorf("after the restart big's allocated cpu is %q, want the allocation kept before it, 1", got)
			}
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			// The allocation is kept under the data directory, in the
			// node's own directory.
			b, err := os.ReadFile(filepath.Join(cfg.DataDir, "nodes", "node-1", "allocated_pods_state"))
			if err != nil || !strings.Contains(string(b), `"cpu":"1"`) {
				t.Fatalf("node-1's allocations after the stop: %s (%v)", b, err)
			}
		}
	}
}
