package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestNodeSeccompDefault: the simulated nodes of a cluster with
// NodeSeccompDefault (`kubeproof up --seccomp-default`) create a container
// whose pod sets no seccompProfile under RuntimeDefault, and one whose pod
// says Unconfined unconfined; by default (upstream's seccompDefault false)
// the first is Unconfined too.
func TestNodeSeccompDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{false: "off", true: "on"}[on], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 1, NodeSeccompDefault: on})
			defer func() {
				if err := stop(); err != nil {
					t.Error(err)
				}
			}()
			want := map[string]runtimeapi.SecurityProfile_ProfileType{"plain": runtimeapi.SecurityProfile_Unconfined, "unconfined": runtimeapi.SecurityProfile_Unconfined}
			if on {
				want["plain"] = runtimeapi.SecurityProfile_RuntimeDefault
			}
			uids := map[string]string{}
			for name := range want {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
					NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
				if name == "unconfined" {
					pod.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
				}
				created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				uids[name] = string(created.UID)
			}
			rt := c.Kubelet("node-1").Runtime()
			for name, uid := range uids {
				for {
					ps, err := rt.(kruntime.PodStateReader).PodState(ctx, uid)
					if err != nil {
						t.Fatal(err)
					}
					if ctr := ps.Latest("app", false); ctr != nil && ctr.State == podstate.ContainerRunning {
						sc, err := rt.(*sim.Runtime).ContainerSecurity(ctr.ID)
						if err != nil {
							t.Fatal(err)
						}
						if got := sc.GetSeccomp().GetProfileType(); got != want[name] {
							t.Errorf("pod %s: seccomp profile %v, want %v", name, got, want[name])
						}
						break
					}
					select {
					case <-ctx.Done():
						t.Fatalf("pod %s: the container never ran", name)
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
		})
	}
}
