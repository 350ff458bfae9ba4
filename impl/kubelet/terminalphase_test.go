package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestNoTerminalPhaseWhileKillFails: a pod past its activeDeadlineSeconds
// whose container will not stop is not reported Failed (DeadlineExceeded)
// while the container runs: upstream's status manager holds a terminal
// phase back while the pod could have running containers
// (mergePodStatus, couldHaveRunningContainers), so the API never shows a
// finished pod whose containers still hold the node's resources. Once the
// container is gone the retried kill succeeds and the pod is Failed.
func TestNoTerminalPhaseWhileKillFails(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("late", func(p *v1.Pod) {
		p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
		p.Annotations[sim.AnnotationStopFailure] = "ttrpc: closed"
		p.Annotations[sim.AnnotationExitAfter] = "1h"
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	h.step(2 * time.Minute)
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("the sync of a pod whose container would not stop succeeded")
	}
	if got := h.get(p); got.Status.Phase != v1.PodRunning || got.Status.Reason != "" {
		t.Fatalf("API status %s %q while the container runs", got.Status.Phase, got.Status.Reason)
	}
	h.step(time.Hour)
	if got := h.sync(p); got.Status.Phase != v1.PodFailed || got.Status.Reason != "DeadlineExceeded" {
		t.Fatalf("after the container exited: %s %q", got.Status.Phase, got.Status.Reason)
	}
}

// TestEvictedPodNotRestartedAfterFailedStatusWrite: the eviction's own
// status write fails, so the API still has the pod Running; the next
// sync writes Failed/Evicted and starts nothing of the pod again (the
// kubelet decided it terminal). Before, that sync saw a Running pod
// without a ready sandbox and made a new sandbox and started its
// containers.
func TestEvictedPodNotRestartedAfterFailedStatusWrite(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("hog", nil)))
	h.failNextStatusWrite()
	if err := evictNow(h, p); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	wantEvicted(t, "after the retry", h.sync(p))
	rs, err := h.k.podRuntimeState(h.ctx, p.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Sandboxes) != 1 || rs.ReadySandboxes() != 0 || len(rs.Running()) != 0 {
		t.Fatalf("the evicted pod runs again: %d sandboxes (%d ready), %d containers running", len(rs.Sandboxes), rs.ReadySandboxes(), len(rs.Running()))
	}
}
