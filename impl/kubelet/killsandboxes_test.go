package kubelet

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// stopRecorder records the sandboxes the kubelet asks to stop.
type stopRecorder struct {
	*sim.Runtime
	mu      sync.Mutex
	stopped []string
}

func (r *stopRecorder) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	r.stopped = append(r.stopped, id)
	r.mu.Unlock()
	return r.Runtime.StopPodSandbox(ctx, id)
}

func (r *stopRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.stopped
	r.stopped = nil
	return out
}

// TestKillPodStopsEverySandbox: killing a pod asks the runtime to stop
// every sandbox of it, a ready one and one already stopped alike, as
// upstream's killPodWithSyncResult calls StopPodSandbox on every sandbox
// of the running pod (ConvertPodStatusToRunningPod keeps them all). The
// runtime takes the stop of a stopped sandbox as containerd does, as
// done (no error, no FailedKillPod), and the pod is finally deleted.
func TestKillPodStopsEverySandbox(t *testing.T) {
	h := newHarness(t, nil)
	rec := &stopRecorder{Runtime: h.rt}
	h.krt = rec
	h.k = h.newKubelet(nil)
	p := h.create(h.pod("two", nil))
	h.sync(p)
	rs, err := h.k.podRuntimeState(h.ctx, p.UID)
	if err != nil || rs.LatestSandbox() == nil {
		t.Fatalf("runtime state %+v, %v", rs, err)
	}
	first := rs.LatestSandbox().ID
	// The sandbox dies under the pod; the kubelet makes a new one.
	if err := h.rt.StopPodSandbox(h.ctx, first); err != nil {
		t.Fatal(err)
	}
	h.sync(p)
	if rs, err = h.k.podRuntimeState(h.ctx, p.UID); err != nil || len(rs.Sandboxes) != 2 || rs.LatestSandbox().ID == first || !rs.LatestSandbox().Ready {
		t.Fatalf("runtime state after the sandbox died: %+v, %v", rs, err)
	}
	second := rs.LatestSandbox().ID
	rec.take()

	deletePod(t, h, p, 30)
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatalf("sync of the deleted pod: %v", err)
	}
	got := rec.take()
	slices.Sort(got)
	want := []string{first, second}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("sandboxes stopped killing the pod: %q, want both %q (ready %s, stopped %s)", got, want, second, first)
	}
	if h.get(p) != nil {
		t.Errorf("pod not deleted once killed")
	}
}
