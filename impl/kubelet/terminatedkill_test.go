package kubelet

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// stopCounter counts the runtime stops the kubelet asks for.
type stopCounter struct {
	*sim.Runtime
	mu                    sync.Mutex
	sandboxes, containers int
}

func (r *stopCounter) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	r.sandboxes++
	r.mu.Unlock()
	return r.Runtime.StopPodSandbox(ctx, id)
}

func (r *stopCounter) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.containers++
	r.mu.Unlock()
	return r.Runtime.StopContainer(ctx, id, timeout)
}

// take returns the stops counted since the last take.
func (r *stopCounter) take() (sandboxes, containers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sandboxes, containers = r.sandboxes, r.containers
	r.sandboxes, r.containers = 0, 0
	return sandboxes, containers
}

// TestFinishedPodNotKilledAgain: once a pod is terminated (its kill
// succeeded and nothing of it runs) the kubelet's resyncs stop nothing of
// it again, as upstream's pod worker runs SyncTerminatingPod until the
// kill succeeds, SyncTerminatedPod once, and then ignores the pod's
// updates until it is removed (pod_workers.go); its housekeeping kills
// only runtime pods still running. Before, every resync of a Succeeded,
// Failed, evicted or deleted pod called StopPodSandbox on each of its
// sandboxes, and the removal of the pod once more.
func TestFinishedPodNotKilledAgain(t *testing.T) {
	exited := func(code string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Annotations[sim.AnnotationExitAfter] = "1m"
			p.Annotations[sim.AnnotationExitCode] = code
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		// finish makes the running pod finish (its first kill happens in
		// it) and returns the phase the pod is to end in.
		finish func(t *testing.T, h *harness, p *v1.Pod) v1.PodPhase
	}{
		{"succeeded", exited("0"), func(t *testing.T, h *harness, p *v1.Pod) v1.PodPhase {
			h.step(2 * time.Minute)
			h.sync(p)
			return v1.PodSucceeded
		}},
		{"failed", exited("1"), func(t *testing.T, h *harness, p *v1.Pod) v1.PodPhase {
			h.step(2 * time.Minute)
			h.sync(p)
			return v1.PodFailed
		}},
		{"evicted", nil, func(t *testing.T, h *harness, p *v1.Pod) v1.PodPhase {
			if err := evictNow(h, p); err != nil {
				t.Fatal(err)
			}
			h.sync(p)
			return v1.PodFailed
		}},
		{"deleted awaiting its final delete", nil, func(t *testing.T, h *harness, p *v1.Pod) v1.PodPhase {
			// The final delete does not remove the pod (a finalizer, or
			// the pod replaced meanwhile: the kubelet takes a conflict as
			// done); the pod stays in the API, deleted.
			h.client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, p.Name, nil)
			})
			deletePod(t, h, p, 30)
			h.sync(p)
			return v1.PodRunning // killed, its last status still Running
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			rec := &stopCounter{Runtime: h.rt}
			h.krt = rec
			h.k = h.newKubelet(nil)
			p := h.sync(h.create(h.pod("done", tc.mutate)))
			if p.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s, want Running", p.Status.Phase)
			}
			phase := tc.finish(t, h, p)
			if sb, _ := rec.take(); sb != 1 {
				t.Fatalf("the pod's kill stopped %d sandboxes, want its one", sb)
			}
			got := h.get(p)
			if got == nil || got.Status.Phase != phase && phase != v1.PodRunning {
				t.Fatalf("after the kill: %+v, want phase %s", got, phase)
			}
			for i := range 3 {
				h.step(time.Minute)
				h.sync(p)
				if sb, c := rec.take(); sb != 0 || c != 0 {
					t.Fatalf("resync %d of the terminated pod stopped %d sandboxes and %d containers, want none", i+1, sb, c)
				}
			}
			rs, err := h.k.podRuntimeState(h.ctx, p.UID)
			if err != nil || len(rs.Sandboxes) != 1 || !rs.Stopped() {
				t.Fatalf("runtime state %+v, %v: want its one sandbox, stopped", rs, err)
			}
			// Gone from the API: its sandbox is removed, not stopped again.
			if err := h.client.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, p.Namespace, p.Name); err != nil {
				t.Fatal(err)
			}
			h.sync(p)
			if sb, c := rec.take(); sb != 0 || c != 0 {
				t.Fatalf("the removal of the terminated pod stopped %d sandboxes and %d containers, want none", sb, c)
			}
			if rs, err := h.k.podRuntimeState(h.ctx, p.UID); err != nil || len(rs.Sandboxes) != 0 {
				t.Fatalf("after the removal: runtime state %+v, %v, want nothing", rs, err)
			}
		})
	}
}
