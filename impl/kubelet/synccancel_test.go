package kubelet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// blockingRuntime is the simulated runtime whose image pulls and execs
// (a postStart hook's) block until their context is done, as a pull of a
// large image or a hook that does not return: started says one began,
// ended that its context ended.
type blockingRuntime struct {
	*sim.Runtime
	started, ended atomic.Bool
}

func (r *blockingRuntime) block(ctx context.Context) error {
	r.started.Store(true)
	<-ctx.Done()
	r.ended.Store(true)
	return ctx.Err()
}

func (r *blockingRuntime) PullImageWithAuth(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig) (string, error) {
	return "", r.block(ctx)
}

func (r *blockingRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	return nil, nil, 0, r.block(ctx)
}

// TestTerminationCancelsSyncUnderWay: a pod whose sync is under way,
// blocked in an image pull or in its container's postStart hook, is
// deleted (or evicted): the sync is cut short, the pull's or the hook's
// context ending, and the next sync kills the pod at once, as upstream's
// pod worker cancels the running SyncPod's context when an update makes
// the pod terminating (UpdatePod: becameTerminating), SyncTerminatingPod
// then running. Before, the kill waited for the pull or the hook to
// return (here: never).
func TestTerminationCancelsSyncUnderWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		evict bool
		pod   func(*v1.Pod)
	}{
		{"pull", false, func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.example/big:1" }},
		{"postStart", false, func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 3600"}}}}
		}},
		{"pull evicted", true, func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.example/big:1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			rt := &blockingRuntime{Runtime: h.rt}
			h.krt = rt
			h.k = h.newKubelet(nil)
			p := h.create(h.pod("web", tc.pod))
			first := syncInBackground(h, p)
			waitFor(t, "the sync to block in the pull or the hook", rt.started.Load)
			if tc.evict {
				h.k.requestEviction(&eviction.Eviction{
					Pod: p, Message: "The node was low on resource: memory. ",
					Threshold: eviction.Threshold{Signal: eviction.SignalMemoryAvailable},
				})
			} else {
				deletePod(t, h, p, 30)
				h.k.HandlePod(h.get(p))
			}
			// Cut short, no failure (the kill follows).
			if err := syncEnded(t, "the sync under way to be cut short", first); err != nil {
				t.Errorf("the sync cut short: %v", err)
			}
			if !rt.ended.Load() {
				t.Error("the pull's or the hook's context did not end")
			}
			// The next sync kills the pod.
			if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
				t.Fatalf("the sync killing the pod: %v", err)
			}
			rs, err := h.k.podRuntimeState(h.ctx, p.UID)
			if err != nil {
				t.Fatal(err)
			}
			if rs.ReadySandboxes() != 0 || len(rs.Running()) != 0 {
				t.Fatalf("pod not killed: %d ready sandboxes, %d containers running", rs.ReadySandboxes(), len(rs.Running()))
			}
			got := h.get(p)
			switch {
			case tc.evict && (got == nil || got.Status.Phase != v1.PodFailed || got.Status.Reason != eviction.ReasonEvicted):
				t.Fatalf("evicted pod: %v, want Failed Evicted", got)
			case !tc.evict && got != nil:
				t.Fatalf("deleted pod not finally deleted once killed: %s", got.Status.Phase)
			}
		})
	}
}
