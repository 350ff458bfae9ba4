package kubelet

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestFailedPreStopHookEvent: a preStop hook that fails is reported as
// upstream's killContainer reports it (executePreStopHook): Warning
// FailedPreStopHook "PreStopHook failed", without the hook's error,
// which upstream keeps out of the event lest a secret reach it (the
// kubelet's log has it). Before, the event carried the error.
func TestFailedPreStopHookEvent(t *testing.T) {
	h, rec := eventHarness(t)
	p := h.create(h.pod("badstop", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("badstop: %s", got.Status.Phase)
	}
	drain(rec)
	deletePod(t, h, p, 30)
	h.sync(p)
	var got []string
	for _, e := range drain(rec) {
		if strings.Contains(e, " "+EventFailedPreStop+" ") {
			got = append(got, e)
		}
	}
	if want := []string{"Warning FailedPreStopHook PreStopHook failed"}; !slices.Equal(got, want) {
		t.Errorf("FailedPreStopHook events %q, want %q", got, want)
	}
}

// TestFailedPostStartHookEvents: a postStart hook that fails is reported
// as upstream's startContainer reports it: Warning FailedPostStartHook
// "PostStartHook failed", without the hook's error (the container's
// waiting message keeps it), then the kill of the container records
// Normal Killing with upstream's kill message "FailedPostStartHook"
// (killContainer's message). Before, the warning carried the error and
// no Killing event was recorded.
func TestFailedPostStartHookEvents(t *testing.T) {
	h, rec := eventHarness(t)
	p := h.create(h.pod("badstart", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	}))
	got := h.sync(p)
	if cs := cstatus(got, "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "PostStartHookError" || !strings.Contains(cs.State.Waiting.Message, "false") {
		t.Fatalf("status after failed postStart: %+v", cs)
	}
	events := drain(rec)
	wantEvents(t, events, "Normal Started Started container app", "Warning FailedPostStartHook PostStartHook failed", "Normal Killing FailedPostStartHook")
	for _, e := range events {
		if strings.Contains(e, "exited") {
			t.Errorf("an event carries the hook's error: %q", e)
		}
	}
}
