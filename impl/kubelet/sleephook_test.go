package kubelet

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestSleepPreStopHookCutByShorterGracePeriod: a preStop sleep hook whose
// kill is cancelled by a shorter grace period (a second delete) fails as
// upstream's runSleepHandler fails when its context, the pod's sync's, is
// done ("container terminated before sleep hook finished"): Warning
// FailedPreStopHook "PreStopHook failed". Before, the cut hook reported
// no error and no event.
func TestSleepPreStopHookCutByShorterGracePeriod(t *testing.T) {
	h, rec := eventHarness(t)
	p := h.sync(h.create(h.pod("sleepy", func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 500}}}
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	drain(rec)
	first := syncInBackground(h, p)
	waitFor(t, "the preStop hook sleeping", h.clock.HasWaiters)
	deletePod(t, h, p, 2)
	h.k.HandlePod(h.get(p))
	syncEnded(t, "the sync", first)
	if got := drain(rec); !slices.Contains(got, "Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("events %q, want Warning FailedPreStopHook PreStopHook failed", got)
	}
}

// TestSleepPostStartHookCutByDeletion: a pod deleted while its postStart
// sleep hook runs has the hook cut (its sync's context cancelled, as
// upstream's pod worker cancels the sync when the pod becomes
// terminating), and the hook fails as upstream's: Warning
// FailedPostStartHook "PostStartHook failed", then the container's kill,
// Normal Killing "FailedPostStartHook". Before, the cut hook succeeded
// and neither was recorded.
func TestSleepPostStartHookCutByDeletion(t *testing.T) {
	h, rec := eventHarness(t)
	p := h.create(h.pod("sleepy", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 100}}}
	}))
	first := syncInBackground(h, p)
	waitFor(t, "the postStart hook sleeping", h.clock.HasWaiters)
	deletePod(t, h, h.get(p), 30)
	h.k.HandlePod(h.get(p))
	syncEnded(t, "the sync", first)
	got := drain(rec)
	for _, want := range []string{"Warning FailedPostStartHook PostStartHook failed", "Normal Killing FailedPostStartHook"} {
		if !slices.Contains(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	}
}

// TestSleepPreStopHookCutByGracePeriodIsSilent: a preStop sleep hook
// longer than the kill's grace period is cut by it without a failure, as
// upstream's executePreStopHook only stops waiting for the hook then (the
// hook's context, the pod's sync's, goes on, and the sleep ends without
// error): the container is killed, no FailedPreStopHook is recorded.
// (The grace period is one real second: the kill's deadline is the wall
// clock's, the hook's sleep the harness's, which never reaches 500 s.)
func TestSleepPreStopHookCutByGracePeriodIsSilent(t *testing.T) {
	h, rec := eventHarness(t)
	p := h.sync(h.create(h.pod("sleepy", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 500}}}
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	deletePod(t, h, p, 1)
	h.k.HandlePod(h.get(p))
	drain(rec)
	syncEnded(t, "the kill", syncInBackground(h, p))
	got := drain(rec)
	if !slices.Contains(got, "Normal Killing Stopping container app") || slices.Contains(got, "Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("events %q, want the kill without FailedPreStopHook", got)
	}
}
