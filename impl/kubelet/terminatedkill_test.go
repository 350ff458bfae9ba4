package kubelet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
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

// TestRestartedKubeletDoesNotKillFinishedPod: a kubelet restarted on a
// runtime that holds a finished pod (its sandbox not ready, its containers
// exited) does not kill it once more, as upstream's pod workers: a pod
// first seen in a terminal phase whose runtime status has no running
// container and no ready sandbox is terminated at once (UpdatePod,
// isPodStatusCacheTerminal; SyncTerminatedPod runs, SyncTerminatingPod
// not), and housekeeping kills only the runtime pods with a running
// container or a ready sandbox, so one gone from the API meanwhile is
// removed, not stopped. A deleted pod still reporting Running is
// terminated by the new kubelet (one kill, as upstream's
// SyncTerminatingPod, whose KillPod stops every sandbox of the pod).
func TestRestartedKubeletDoesNotKillFinishedPod(t *testing.T) {
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
		finish func(t *testing.T, h *harness, p *v1.Pod)
		// gone: the pod is removed from the API while no kubelet runs.
		gone bool
	}{
		{name: "succeeded", mutate: exited("0"), finish: func(t *testing.T, h *harness, p *v1.Pod) {
			h.step(2 * time.Minute)
			h.sync(p)
		}},
		{name: "failed", mutate: exited("1"), finish: func(t *testing.T, h *harness, p *v1.Pod) {
			h.step(2 * time.Minute)
			h.sync(p)
		}},
		{name: "evicted", finish: func(t *testing.T, h *harness, p *v1.Pod) {
			if err := evictNow(h, p); err != nil {
				t.Fatal(err)
			}
			h.sync(p)
		}},
		{name: "succeeded, then gone from the API", mutate: exited("0"), gone: true, finish: func(t *testing.T, h *harness, p *v1.Pod) {
			h.step(2 * time.Minute)
			h.sync(p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			rec := &stopCounter{Runtime: h.rt}
			h.krt = rec
			h.k = h.newKubelet(nil)
			p := h.sync(h.create(h.pod("done", tc.mutate)))
			tc.finish(t, h, p)
			if sb, _ := rec.take(); sb != 1 {
				t.Fatalf("the pod's kill stopped %d sandboxes, want its one", sb)
			}
			before := h.get(p)
			if !podsync.IsTerminalPhase(before.Status.Phase) {
				t.Fatalf("setup: phase %s, want a terminal one", before.Status.Phase)
			}
			if tc.gone {
				if err := h.client.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, p.Namespace, p.Name); err != nil {
					t.Fatal(err)
				}
			}
			// A new kubelet on the same runtime.
			k2 := h.newKubelet(nil)
			if err := k2.adoptRuntimeState(h.ctx); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				h.step(time.Minute)
				h.syncWith(k2, p)
				if sb, c := rec.take(); sb != 0 || c != 0 {
					t.Fatalf("sync %d of the restarted kubelet stopped %d sandboxes and %d containers of the finished pod, want none", i+1, sb, c)
				}
				if tc.gone {
					break
				}
			}
			rs, err := k2.podRuntimeState(h.ctx, p.UID)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.gone && len(rs.Sandboxes)+len(rs.Containers) != 0:
				t.Fatalf("the pod gone from the API left %+v in the runtime", rs)
			case !tc.gone && (len(rs.Sandboxes) != 1 || !rs.Stopped()):
				t.Fatalf("runtime state %+v: want its one sandbox, stopped", rs)
			}
			if tc.gone {
				return
			}
			after := h.get(p)
			if after.Status.Phase != before.Status.Phase || after.Status.Reason != before.Status.Reason || k2.StatusWrites() != 0 {
				t.Fatalf("after the restart: %s %q (%d status writes), want %s %q unchanged", after.Status.Phase, after.Status.Reason, k2.StatusWrites(), before.Status.Phase, before.Status.Reason)
			}
		})
	}
}

// TestRestartedKubeletKillsDeletedPodOnce: a deleted pod the kubelet has
// killed, whose final delete did not remove it and whose phase is not
// terminal in the API (the status write of its end lost), is killed once
// by a restarted kubelet, as upstream's pod worker sees a pod being
// deleted and runs SyncTerminatingPod (KillPod: StopPodSandbox on every
// sandbox, a stopped one too), and then not again.
func TestRestartedKubeletKillsDeletedPodOnce(t *testing.T) {
	h := newHarness(t, nil)
	rec := &stopCounter{Runtime: h.rt}
	h.krt = rec
	h.k = h.newKubelet(nil)
	p := h.sync(h.create(h.pod("deleted", nil)))
	h.client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, p.Name, nil)
	})
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, apierrors.NewInternalError(errors.New("injected status write failure"))
		}
		return false, nil, nil
	})
	deletePod(t, h, p, 30)
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("the refused status write was not reported")
	}
	if sb, _ := rec.take(); sb != 1 {
		t.Fatalf("the pod's kill stopped %d sandboxes, want its one", sb)
	}
	if got := h.get(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("setup: phase %s, want Running (its end not written)", got.Status.Phase)
	}
	k2 := h.newKubelet(nil)
	if err := k2.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.step(time.Minute)
		k2.HandlePod(h.get(p))
		k2.syncPod(h.ctx, p.UID) //nolint:errcheck // its status writes are refused
		want := 0
		if i == 0 {
			want = 1
		}
		if sb, c := rec.take(); sb != want || c != 0 {
			t.Fatalf("sync %d of the restarted kubelet stopped %d sandboxes and %d containers, want %d and none", i+1, sb, c, want)
		}
	}
}
