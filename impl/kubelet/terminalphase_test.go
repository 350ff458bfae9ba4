package kubelet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestNoTerminalPhaseWhileKillFails: a pod past its activeDeadlineSeconds
// whose container will not stop is not reported Failed (DeadlineExceeded)
// while the container runs: upstream's status manager holds a terminal
// phase back while the pod could have running containers
// (mergePodStatus, couldHaveRunningContainers), so the API never shows a
// finished pod whose containers still hold the node's resources; its
// Ready and ContainersReady are False (PodFailed) meanwhile, as upstream
// computes them for the phase decided. Once the container is gone the
// retried kill succeeds and the pod is Failed.
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
	// The conditions are those of the phase decided (upstream's
	// generateAPIPodStatus computes them with the deadline's Failed, its
	// status manager then holds only the phase back): not ready.
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		if c := cond(h.get(p), ct); c.Status != v1.ConditionFalse || c.Reason != "PodFailed" {
			t.Errorf("%s while the kill fails: %s %q, want False PodFailed", ct, c.Status, c.Reason)
		}
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

// sandboxStopFailure is a runtime whose StopPodSandbox fails while fail is
// set, the sandbox left ready (a CNI teardown that fails, a pause
// container that will not die) or, with stopAnyway, stopped all the same
// (the runtime's state says the sandbox is stopped, its call failed); its
// containers stop as usual.
type sandboxStopFailure struct {
	*sim.Runtime
	fail       atomic.Bool
	stopAnyway bool
}

func (r *sandboxStopFailure) StopPodSandbox(ctx context.Context, id string) error {
	if !r.fail.Load() {
		return r.Runtime.StopPodSandbox(ctx, id)
	}
	if r.stopAnyway {
		if err := r.Runtime.StopPodSandbox(ctx, id); err != nil {
			return err
		}
	}
	return errors.New("failed to destroy network for sandbox: plugin timed out")
}

// TestNoTerminalPhaseWhileSandboxStopFails: a pod whose termination has
// not completed (its sandbox would not stop) is not reported Succeeded or
// Failed, as upstream's status manager holds a terminal phase back while
// the pod worker says the pod could have running containers
// (mergePodStatus with CouldHaveRunningContainers, true until
// SyncTerminatingPod's kill succeeded): the phase, reason and message
// stay the ones last written, the containers' statuses are reported as
// they are. Once the sandbox stops the terminal phase is written (a
// deleted pod finally deleted). Both a restartPolicy Never pod whose
// container exited and one being deleted; and a kill that failed though
// the runtime then reports the sandbox stopped: the termination has not
// succeeded (upstream's SyncTerminatingPod returned the kill's error), so
// the phase is held back all the same and a deleted pod is not finally
// deleted, until a kill succeeds.
func TestNoTerminalPhaseWhileSandboxStopFails(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deleted    bool
		stopAnyway bool
	}{
		{"completed", false, false},
		{"deleted", true, false},
		{"completed, stopped anyway", false, true},
		{"deleted, stopped anyway", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			rt := &sandboxStopFailure{Runtime: h.rt, stopAnyway: tc.stopAnyway}
			h.krt = rt
			h.k = h.newKubelet(nil)
			p := h.sync(h.create(h.pod("job", func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				if !tc.deleted {
					p.Annotations[sim.AnnotationExitAfter] = "1s"
				}
			})))
			if p.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", p.Status.Phase)
			}
			rt.fail.Store(true)
			if tc.deleted {
				deletePod(t, h, p, 30)
			} else {
				h.step(2 * time.Second)
			}
			for try := range 2 {
				h.k.HandlePod(h.get(p))
				if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
					t.Fatalf("try %d: the sync of a pod whose sandbox would not stop succeeded", try)
				}
				got := h.get(p)
				if got == nil {
					t.Fatalf("try %d: pod deleted while its kill fails", try)
				}
				if got.Status.Phase != v1.PodRunning || got.Status.Reason != "" || got.Status.Message != "" {
					t.Fatalf("try %d: API status %s %q %q while its kill fails", try, got.Status.Phase, got.Status.Reason, got.Status.Message)
				}
				if s := cstatus(got, "app"); s.State.Terminated == nil {
					t.Fatalf("try %d: the exited container is reported %+v", try, s.State)
				}
			}
			rt.fail.Store(false)
			got := h.sync(p)
			if tc.deleted {
				if got != nil {
					t.Fatalf("deleted pod not finally deleted once stopped: %s", got.Status.Phase)
				}
				return
			}
			if got.Status.Phase != v1.PodSucceeded {
				t.Fatalf("once the sandbox stopped: phase %s", got.Status.Phase)
			}
		})
	}
}

// TestDeletedPendingPodFailedBeforeDelete: a pod deleted before it got
// past its init containers is reported Failed before its final delete,
// as upstream's TerminatePod (the end of SyncTerminatedPod, which alone
// lets the status manager delete it) makes every terminated pod's phase
// terminal: its init container, killed, terminated; its app container,
// never started in a pod not initialized, still waiting. Before, the
// last status written was Pending.
func TestDeletedPendingPodFailedBeforeDelete(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("init", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox"}}
		p.Annotations[sim.AnnotationExitAfter+".setup"] = "1h"
	})))
	if p.Status.Phase != v1.PodPending {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	deletePod(t, h, p, 30)
	h.client.ClearActions()
	if got := h.sync(p); got != nil {
		t.Fatalf("not finally deleted: %s", got.Status.Phase)
	}
	var last *v1.Pod
	for _, a := range h.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			last = u.GetObject().(*v1.Pod)
		}
	}
	if last == nil {
		t.Fatal("no status written before the final delete")
	}
	if last.Status.Phase != v1.PodFailed {
		t.Errorf("last status before the final delete: %s, want Failed", last.Status.Phase)
	}
	if s := cstatus(last, "setup"); s.State.Terminated == nil {
		t.Errorf("setup: %+v", s.State)
	}
	if s := cstatus(last, "app"); s.State.Waiting == nil {
		t.Errorf("app, never started in a pod not initialized: %+v", s.State)
	}
}
