package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeReservations: the simulated nodes of a cluster with
// NodeSystemReserved and NodeKubeReserved (`kubeproof up
// --system-reserved`, `--kube-reserved`) report an allocatable that keeps
// them back, besides the hard eviction thresholds.
func TestNodeReservations(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 1,
		NodeCPU: "4", NodeMemory: "8Gi",
		NodeSystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		NodeKubeReserved:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("924Mi")}})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	for {
		node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err == nil && len(node.Status.Allocatable) > 0 {
			cpu, mem := node.Status.Allocatable[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceMemory]
			if cpu.MilliValue() != 3250 || mem.Cmp(resource.MustParse("6Gi")) != 0 { // 8Gi-1Gi-924Mi-100Mi (memory.available)
				t.Errorf("allocatable cpu %s, memory %s; want 3250m, 6Gi", cpu.String(), mem.String())
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node-1 never registered: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
