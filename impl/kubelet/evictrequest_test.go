package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// markedEvicted reports whether the kubelet has marked the pod evicted
// (its content to be removed, as upstream's ShouldPodContentBeRemoved).
func markedEvicted(k *Kubelet, uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.pods[uid]
	return r != nil && r.evicted
}

// TestEvictionPickedAgainTakesLatestStatus: a pod whose eviction's kill
// failed, picked again by a later eviction (another message) before the
// retry, ends with the later eviction's status, as upstream's pod
// workers: UpdatePod appends each kill's PodStatusFunc to the
// terminating pod's, and every SyncTerminatingPod attempt applies the
// last one (acknowledgeTerminating). Before, the pod kept its first
// eviction's message.
func TestEvictionPickedAgainTakesLatestStatus(t *testing.T) {
	h, p := failedEvictionKill(t)
	const later = "The node was low on resource: ephemeral-storage. Threshold quantity: 1Gi, available: 512Mi. "
	h.k.requestEviction(&eviction.Eviction{
		Pod: p, Message: later, GracePeriodSeconds: 30,
		Threshold: eviction.Threshold{Signal: eviction.SignalNodeFsAvailable},
	})
	killEndsAfter(t, h, p, "the retried kill", 30*time.Second)
	got := h.get(p)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != eviction.ReasonEvicted || got.Status.Message != later {
		t.Fatalf("status %s %q %q, want Failed, Evicted, the later eviction's message", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if dt := condition(got, v1.DisruptionTarget); dt == nil || dt.Message != later {
		t.Fatalf("DisruptionTarget %+v, want the later eviction's message", dt)
	}
}

// TestEvictionMarksPodAtRequest: a running pod is marked evicted when the
// eviction manager asks for its eviction, as upstream's UpdatePod marks
// the pod worker's status evicted in the manager's call (a kill with
// Evict set that begins the pod's termination), not when the worker gets
// to it: a pod deleted in between stays marked. Before, the worker
// decided when it took the eviction, and a pod deleted by then was not
// marked.
func TestEvictionMarksPodAtRequest(t *testing.T) {
	h, _, _ := memoryPressureHarness(t)
	hog := h.sync(h.create(h.pod("hog", withMemory("64Mi", "512Mi"))))
	lowOnMemory(t, h)
	h.k.evictionTick(h.ctx)
	if !picked(h.k, hog.UID) {
		t.Fatal("hog not picked")
	}
	if !markedEvicted(h.k, hog.UID) {
		t.Fatal("hog not marked evicted at the eviction manager's request")
	}
	deletePod(t, h, hog, 30)
	h.k.HandlePod(h.get(hog))
	if _, err := h.k.syncPod(h.ctx, hog.UID); err != nil {
		t.Fatal(err)
	}
	if !markedEvicted(h.k, hog.UID) {
		t.Fatal("hog deleted after its eviction was requested: not marked evicted")
	}
}
