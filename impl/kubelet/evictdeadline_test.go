package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// TestEvictionDeadlinePassingDuringKill: a pod evicted 1 s before its
// activeDeadlineSeconds whose eviction's kill (a container ignoring
// SIGTERM, stopped after 2 s) ends past the deadline reports Failed with
// the deadline's reason and message and the eviction's DisruptionTarget,
// as upstream's: SyncTerminatingPod generates the pod's status again once
// it is killed, the reason Evicted preserved from the status manager and
// then overridden by the active deadline handler (generateAPIPodStatus:
// PodSyncHandlers' ShouldEvict after the preserved reason), the
// DisruptionTarget kept.
func TestEvictionDeadlinePassingDuringKill(t *testing.T) {
	h, _, rec := memoryPressureHarness(t)
	p := slowHog(t, h, func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) })
	h.step(4 * time.Second)
	lowOnMemory(t, h)
	h.k.evictionTick(h.ctx)
	h.k.mu.Lock()
	picked := h.k.pods[p.UID].eviction != nil
	h.k.mu.Unlock()
	if !picked {
		t.Fatal("the eviction manager did not pick the pod")
	}
	killEndsAfter(t, h, p, "the eviction's kill", minimumGracePeriod*time.Second)
	drain(rec)
	got := h.get(p)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != podsync.ReasonDeadlineExceeded || got.Status.Message != podsync.MessageDeadlineExceeded {
		t.Fatalf("status %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	c := cond(got, v1.DisruptionTarget)
	if c.Status != v1.ConditionTrue || c.Reason != reasonTerminationByKubelet || !strings.HasPrefix(c.Message, "The node was low on resource: memory.") {
		t.Fatalf("DisruptionTarget = %+v", c)
	}
}

// TestTerminatedForgottenWithPod: the kubelet's set of terminated pods
// (markKilled, read by the eviction manager) holds a pod only while its
// record lives: once the pod is gone from the API and cleaned up, its
// entry goes with its record, so the set does not grow with every pod
// that ever ran on the node.
func TestTerminatedForgottenWithPod(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("short", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) })))
	h.step(6 * time.Second)
	if got := h.sync(p); got.Status.Phase != v1.PodFailed {
		t.Fatalf("phase %s, want Failed past the deadline", got.Status.Phase)
	}
	h.k.mu.Lock()
	_, terminated := h.k.terminated[p.UID]
	h.k.mu.Unlock()
	if !terminated {
		t.Fatal("the pod killed for its deadline is not recorded terminated")
	}
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	h.sync(p)
	h.k.mu.Lock()
	defer h.k.mu.Unlock()
	if _, ok := h.k.pods[p.UID]; ok {
		t.Fatal("the deleted pod's record was not cleaned up")
	}
	if n := len(h.k.terminated); n != 0 {
		t.Fatalf("%d terminated entries left after the pod was cleaned up", n)
	}
}
