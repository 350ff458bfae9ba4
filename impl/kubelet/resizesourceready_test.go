package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPendingResizeWaitsForSourceSynced: a kubelet restarted from its
// saved allocations while pod a's resize (to 700m of a 1-CPU node) is
// deferred by pod b (400m) does not admit that resize before its pod
// source has delivered every pod, as upstream's allocation manager skips
// pending resizes until its sources are ready, nor before every pod
// delivered went through admission, as upstream admits a batch of pods
// before retrying resizes: synced first, a keeps its allocation (400m)
// instead of taking the 700m b's absence leaves free, and b is admitted;
// then a's resize is Deferred again. Before, a's resize was admitted at
// a's first sync and b was rejected OutOfcpu.
func TestPendingResizeWaitsForSourceSynced(t *testing.T) {
	h, a, b, _ := restartedWithDeferredResize(t)
	k := h.k
	// Its source not yet synced: a comes first.
	k.HandlePod(h.get(a))
	k.HandlePod(h.get(b))
	h.sync(a)
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("before the source synced a's resize was applied: the runtime reports %v", r)
	}
	// Synced, but b not yet admitted (its first sync still to come).
	k.MarkSourceSynced()
	h.sync(a)
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("before b's admission a's resize was applied: the runtime reports %v", r)
	}
	if got := h.sync(b); got.Status.Phase != v1.PodRunning {
		t.Fatalf("b after the restart: %s %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if c := condOf(h.sync(a), v1.PodResizePending); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Errorf("once every pod is admitted: PodResizePending %+v, want Deferred", c)
	}
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("once every pod is admitted the runtime reports %v for a: its deferred resize was applied", r)
	}
}

// TestPendingResizeWaitsForEveryPodDelivered: restarted as in
// TestPendingResizeWaitsForSourceSynced, the kubelet is handed a alone
// (b not yet delivered): a's resize to 700m is not admitted, though
// nothing else is admitted beside a, because the source has not synced
// (upstream's allocation manager skips pending resizes until its sources
// are ready); meanwhile a keeps reporting the PodResizePending Deferred
// condition its status had, from the same time, as upstream's
// HandlePodAdditions backfills the resize conditions of the pods it is
// given. Once b is delivered, the source synced and b admitted, a's
// resize is Deferred again, the condition unchanged.
func TestPendingResizeWaitsForEveryPodDelivered(t *testing.T) {
	h, a, b, deferred := restartedWithDeferredResize(t)
	k := h.k
	k.HandlePod(h.get(a))
	got := h.sync(a)
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("before the source synced (b not delivered) a's resize was applied: the runtime reports %v", r)
	}
	if c := condOf(got, v1.PodResizePending); c == nil || *c != *deferred {
		t.Errorf("while the resize waits for the source: PodResizePending %+v, want the one before the restart %+v", c, deferred)
	}
	k.HandlePod(h.get(b))
	k.MarkSourceSynced()
	if got := h.sync(b); got.Status.Phase != v1.PodRunning {
		t.Fatalf("b after the restart: %s %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if c := condOf(h.sync(a), v1.PodResizePending); c == nil || *c != *deferred {
		t.Errorf("once every pod is admitted: PodResizePending %+v, want %+v", c, deferred)
	}
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("once every pod is admitted the runtime reports %v for a: its deferred resize was applied", r)
	}
}

// restartedWithDeferredResize: on a 1-CPU node whose kubelet keeps its
// allocations on disk, pods a and b (400m each) run and a's resize to
// 700m is Deferred (the condition returned); a minute later the kubelet
// restarts (h.k, handed no pod yet).
func restartedWithDeferredResize(t *testing.T) (h *harness, a, b *v1.Pod, deferred *v1.PodCondition) {
	t.Helper()
	root := t.TempDir()
	onDisk := func(c *Config) { c.RootDir = root; c.CPU = resource.MustParse("1") }
	h = newHarness(t, onDisk)
	a = h.create(h.pod("a", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	b = h.create(h.pod("b", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	h.sync(a)
	h.sync(b)
	h.resize(a, "app", resources("700m", "", "", ""))
	if deferred = condOf(h.sync(a), v1.PodResizePending); deferred == nil || deferred.Reason != v1.PodReasonDeferred {
		t.Fatalf("PodResizePending %+v", deferred)
	}
	h.step(time.Minute)
	cfg := Config{NodeName: "node-7", NodeIP: "192.168.0.7", Clock: h.clock}
	onDisk(&cfg)
	k, err := New(h.ctx, h.client, cfg, h.rt)
	if err != nil {
		t.Fatal(err)
	}
	h.k = k
	return h, a, b, deferred
}
