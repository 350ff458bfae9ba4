package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestKubeletProperties drives one kubelet through random pod creations
// (some bound elsewhere, some crashing, exiting or failing to start, some
// too big for the node, some with an active deadline),
// syncs, clock steps, graceful and forced deletions, kubelet restarts and
// spells of failing sandbox stops (StopPodSandbox failing with the sandbox
// left ready), and checks the spec's kubelet properties after every step:
// KUBELET-1 (only pods bound here run), KUBELET-2 (at most one live
// sandbox per pod), KUBELET-3 (unique IPs among live sandboxes), KUBELET-5
// (a terminal phase is final) and KUBELET-8 (a pod first seen with a
// terminal phase has no live sandbox: the kubelet writes the phase only
// once the pod's termination completed).
func TestKubeletProperties(t *testing.T) {
	if testing.Short() {
		t.Skip("property test: seconds of random scenarios")
	}
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt, nil)
		stops := &sandboxStopFailure{Runtime: h.rt}
		h.krt = stops
		h.k = h.newKubelet(nil)
		ctx := context.Background()
		var pods []*v1.Pod
		terminal := map[types.UID]v1.PodPhase{}
		seq := 0

		rt.Repeat(map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				seq++
				node := rapid.SampledFrom([]string{"node-7", "node-7", "node-7", "elsewhere"}).Draw(rt, "node")
				fault := rapid.SampledFrom([]map[string]string{
					{}, {sim.AnnotationCrashAfter: "2s"}, {sim.AnnotationExitAfter: "3s"},
					{sim.AnnotationExitCode: "4"}, {sim.AnnotationStartFailure: "no"},
				}).Draw(rt, "fault")
				policy := rapid.SampledFrom([]v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}).Draw(rt, "policy")
				inits := rapid.IntRange(0, 1).Draw(rt, "inits")
				cpu := rapid.SampledFrom([]string{"", "1500m", "3"}).Draw(rt, "cpu")
				deadline := rapid.SampledFrom([]int64{0, 0, 20}).Draw(rt, "activeDeadlineSeconds")
				p := h.pod(fmt.Sprintf("p%d", seq), func(p *v1.Pod) {
					p.Spec.NodeName = node
					p.Spec.RestartPolicy = policy
					for k, v := range fault {
						p.Annotations[k] = v
					}
					if cpu != "" {
						p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
					}
					if deadline > 0 {
						p.Spec.ActiveDeadlineSeconds = ptr.To(deadline)
					}
					if inits == 1 {
						p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1"}}
						p.Annotations[sim.AnnotationExitAfter+".init"] = "1s"
						p.Annotations[sim.AnnotationExitCode+".init"] = "0"
					}
				})
				pods = append(pods, h.create(p))
			},
			"sync": func(rt *rapid.T) {
				if len(pods) == 0 {
					rt.Skip("no pods")
				}
				p := rapid.SampledFrom(pods).Draw(rt, "pod")
				if !stops.fail.Load() {
					h.sync(p)
					return
				}
				// While sandbox stops fail a kill fails (FailedKillPod,
				// retried at the next sync); nothing else may.
				if cur := h.get(p); cur != nil {
					h.k.HandlePod(cur)
				} else {
					h.k.HandlePodDeleted(p)
				}
				if _, err := h.k.syncPod(ctx, p.UID); err != nil && !strings.Contains(err.Error(), errSandboxStop) {
					rt.Fatalf("sync %s: %v", p.Name, err)
				}
			},
			"step": func(rt *rapid.T) {
				h.step(time.Duration(rapid.IntRange(0, 15).Draw(rt, "seconds")) * time.Second)
			},
			"delete gracefully": func(rt *rapid.T) {
				if len(pods) == 0 {
					rt.Skip("no pods")
				}
				p := h.get(rapid.SampledFrom(pods).Draw(rt, "pod"))
				if p == nil || p.DeletionTimestamp != nil {
					rt.Skip("gone or deleting")
				}
				now := metav1.NewTime(h.clock.Now())
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptr.To[int64](30)
				if _, err := h.client.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					rt.Fatal(err)
				}
			},
			"delete forcibly": func(rt *rapid.T) {
				if len(pods) == 0 {
					rt.Skip("no pods")
				}
				p := rapid.SampledFrom(pods).Draw(rt, "pod")
				_ = h.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			},
			"sandbox stops fail or work again": func(rt *rapid.T) {
				stops.fail.Store(!stops.fail.Load())
			},
			"restart kubelet": func(rt *rapid.T) {
				h.k = h.newKubelet(nil)
				if err := h.k.adoptRuntimeState(ctx); err != nil {
					rt.Fatal(err)
				}
			},
			"": func(rt *rapid.T) {
				checkKubeletInvariants(rt, h, pods, terminal)
			},
		})
	})
}

// errSandboxStop is in the error sandboxStopFailure's StopPodSandbox
// returns while it fails.
const errSandboxStop = "failed to destroy network for sandbox"

func checkKubeletInvariants(rt *rapid.T, h *harness, pods []*v1.Pod, terminal map[types.UID]v1.PodPhase) {
	ctx := context.Background()
	sandboxes, err := h.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		rt.Fatal(err)
	}
	byUID := map[types.UID]*v1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
	}
	live := map[types.UID]int{}
	ips := map[string]string{}
	for _, s := range sandboxes {
		uid := types.UID(s.Labels[runtime.LabelPodUID])
		if p := byUID[uid]; p == nil || p.Spec.NodeName != "node-7" {
			rt.Fatalf("KUBELET-1: sandbox %s for a pod not bound to this node (%v)", s.Id, uid)
		}
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		live[uid]++
		if live[uid] > 1 {
			rt.Fatalf("KUBELET-2: pod %s has %d live sandboxes", uid, live[uid])
		}
		st, err := h.rt.PodSandboxStatus(ctx, s.Id)
		if err != nil {
			rt.Fatal(err)
		}
		if other, dup := ips[st.Network.Ip]; dup {
			rt.Fatalf("KUBELET-3: IP %s held by sandboxes %s and %s", st.Network.Ip, other, s.Id)
		}
		ips[st.Network.Ip] = s.Id
	}
	for _, p := range pods {
		cur := h.get(p)
		if cur == nil || cur.UID != p.UID {
			continue
		}
		if was, ok := terminal[p.UID]; ok && cur.Status.Phase != was {
			rt.Fatalf("KUBELET-5: pod %s left %s for %q", p.Name, was, cur.Status.Phase)
		}
		if podsync.IsTerminalPhase(cur.Status.Phase) {
			if _, was := terminal[p.UID]; !was && live[p.UID] > 0 {
				rt.Fatalf("KUBELET-8: pod %s reported %s while its sandbox is live", p.Name, cur.Status.Phase)
			}
			terminal[p.UID] = cur.Status.Phase
		}
	}
}
