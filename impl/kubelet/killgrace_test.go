package kubelet

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
	}
}

// TestKillShortenedByShorterGracePeriod: a pod being killed with its
// grace period (600 s, a container that ignores SIGTERM) whose deletion's
// grace period is then shortened (kubectl delete --grace-period=2 after a
// first delete) has its kill cancelled and run again with the shorter
// grace period, as upstream's pod worker cancels a SyncTerminatingPod in
// flight when the effective grace period shrinks
// (calculateEffectiveGracePeriod, wasGracePeriodShortened). The
// cancelled kill reports no FailedKillPod; the pod is stopped and
// finally deleted 2 s later, not 600.
func TestKillShortenedByShorterGracePeriod(t *testing.T) {
	h, rec := eventHarness(t)
	p := h.sync(h.create(h.pod("slow", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationSlowStop] = "1h"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	drain(rec)
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	sync := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := h.k.syncPod(h.ctx, p.UID)
			done <- err
		}()
		return done
	}
	wait := func(done chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("the sync did not end")
			return nil
		}
	}
	first := sync()
	waitFor(t, "the container's stop waiting out its grace period", h.clock.HasWaiters)

	deletePod(t, h, p, 2)
	h.k.HandlePod(h.get(p))
	if err := wait(first); err == nil {
		t.Fatal("the kill cut short by a shorter grace period reported success")
	}
	for _, e := range drain(rec) {
		if len(e) > 20 && e[:20] == "Warning FailedKillPo" {
			t.Errorf("event for the cancelled kill: %s", e)
		}
	}
	second := sync()
	var early error
	ended := false
	waitFor(t, "the second kill waiting out its grace period", func() bool {
		select {
		case early = <-second:
			ended = true
			return true
		default:
		}
		return h.clock.HasWaiters()
	})
	if ended {
		t.Fatalf("the second sync ended without waiting for the grace period: %v", early)
	}
	h.step(2 * time.Second)
	if err := wait(second); err != nil {
		t.Fatalf("the kill with the shorter grace period: %v", err)
	}
	if got := h.get(p); got != nil {
		t.Fatalf("pod not finally deleted once stopped: %s", got.Status.Phase)
	}
}

// podStateHook is the simulated runtime calling hook (once, when set)
// as a sync reads the pod's runtime state: after the sync took the pod
// from its record, before it decides and kills.
type podStateHook struct {
	*sim.Runtime
	hook func()
}

func (r *podStateHook) PodState(ctx context.Context, uid string) (*podstate.Pod, error) {
	if f := r.hook; f != nil {
		r.hook = nil
		f()
	}
	return r.Runtime.PodState(ctx, uid)
}

// TestKillShortenedBeforeItStarts: the shorter grace period arrives
// (HandlePod) while the sync that kills the pod has read the pod but not
// yet started its kill, so there is no kill in flight to cancel: the kill
// uses the shorter grace period all the same, as upstream's pod worker
// hands SyncTerminatingPod the effective grace period of the latest
// update (calculateEffectiveGracePeriod). Before, it waited out the first
// (600 s), the update's sync queued behind it.
func TestKillShortenedBeforeItStarts(t *testing.T) {
	h := newHarness(t, nil)
	rt := &podStateHook{Runtime: h.rt}
	h.krt = rt
	h.k = h.newKubelet(nil)
	p := h.sync(h.create(h.pod("slow", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationSlowStop] = "1h"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	deletePod(t, h, p, 2)
	shorter := h.get(p)
	rt.hook = func() { h.k.HandlePod(shorter) }
	done := make(chan error, 1)
	go func() {
		_, err := h.k.syncPod(h.ctx, p.UID)
		done <- err
	}()
	waitFor(t, "the container's stop waiting out its grace period", h.clock.HasWaiters)
	h.step(2 * time.Second)
	var err error
	waitFor(t, "the sync to end 2 s after the shorter grace period (not 600 s)", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatalf("the kill with the shorter grace period: %v", err)
	}
	if got := h.get(p); got != nil {
		t.Fatalf("pod not finally deleted once stopped: %s", got.Status.Phase)
	}
}
