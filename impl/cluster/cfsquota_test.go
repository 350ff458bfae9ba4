package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestNodeCPUCFSQuota: the simulated nodes of a cluster with
// NodeCPUCFSQuota false (`kubeproof up --cpu-cfs-quota=false`) give a
// container with a CPU limit no CFS quota nor period; by default it has
// its limit's quota over 100 ms.
func TestNodeCPUCFSQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	for _, quota := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[quota], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 1}
			if !quota {
				cfg.NodeCPUCFSQuota = &quota
			}
			c, cs, stop := startForTest(t, cfg)
			defer func() {
				if err := stop(); err != nil {
					t.Error(err)
				}
			}()
			lim := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
			pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "limited"}, Spec: corev1.PodSpec{
				NodeName:   "node-1",
				Containers: []corev1.Container{{Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: lim, Limits: lim}}}}},
				metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for {
				ps, err := c.Kubelet("node-1").Runtime().(kruntime.PodStateReader).PodState(ctx, string(pod.UID))
				if err != nil {
					t.Fatal(err)
				}
				if ctr := ps.Latest("app", false); ctr != nil && ctr.State == podstate.ContainerRunning {
					r := ctr.Resources
					wantQuota, wantPeriod := int64(0), int64(0)
					if quota {
						wantQuota, wantPeriod = 25000, 100000
					}
					if r.GetCpuQuota() != wantQuota || r.GetCpuPeriod() != wantPeriod || r.GetCpuShares() != 256 {
						t.Fatalf("container resources %v; want quota %d period %d", r, wantQuota, wantPeriod)
					}
					return
				}
				select {
				case <-ctx.Done():
					t.Fatal("the container never ran")
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
}
