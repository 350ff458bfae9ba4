package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// syncInBackground runs one sync of uid on its own goroutine; the
// channel gets its error.
func syncInBackground(h *harness, p *v1.Pod) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.k.syncPod(h.ctx, p.UID)
		done <- err
	}()
	return done
}

// syncEnded polls done until the sync ends (generous deadline) and
// returns its error.
func syncEnded(t *testing.T, what string, done chan error) error {
	t.Helper()
	var err error
	waitFor(t, what, func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	return err
}

// failedEvictionKill is a running pod whose spec asks for 600 s of grace,
// evicted with 30 s, whose eviction kill failed (a container that would
// not stop): the pod is terminating with the eviction's grace period and
// the runtime stops containers again.
func failedEvictionKill(t *testing.T) (*harness, *v1.Pod) {
	t.Helper()
	h := newHarness(t, nil)
	rt := &containerStopFailure{Runtime: h.rt}
	h.krt = rt
	h.k = h.newKubelet(nil)
	p := h.sync(h.create(h.pod("hog", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationSlowStop] = "1h"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	h.k.requestEviction(&eviction.Eviction{
		Pod: p, Message: "The node was low on resource: memory. ", GracePeriodSeconds: 30,
		Threshold: eviction.Threshold{Signal: eviction.SignalMemoryAvailable},
	})
	rt.fail.Store(true)
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("the eviction's kill of a container that will not stop succeeded")
	}
	rt.fail.Store(false)
	return h, p
}

// killEndsAfter runs a sync of p in the background that is to kill it
// (what names it), waits until the kill waits out a grace period on the
// fake clock, steps the clock by grace and requires the sync to end
// without error: a kill with a longer grace period would still wait.
func killEndsAfter(t *testing.T, h *harness, p *v1.Pod, what string, grace time.Duration) {
	t.Helper()
	done := syncInBackground(h, p)
	waitFor(t, what+" waiting out its grace period", func() bool {
		select {
		case err := <-done:
			t.Fatalf("%s ended without waiting for its grace period: %v", what, err)
		default:
		}
		return h.clock.HasWaiters()
	})
	h.step(grace)
	if err := syncEnded(t, fmt.Sprintf("%s with a grace period of %s", what, grace), done); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestEvictionKillShortenedByDeletion: an eviction's kill (a soft
// threshold's grace period, 300 s, a container that ignores SIGTERM) is
// cancelled when the pod's deletion then asks for a shorter one (2 s),
// and the pod killed again with it, as upstream's pod worker: the
// effective grace period of a terminating pod only shrinks, whichever
// asked for it (calculateEffectiveGracePeriod: the eviction's override,
// the pod's deletionGracePeriodSeconds), and UpdatePod cancels the
// SyncTerminatingPod in flight when it shrinks (wasGracePeriodShortened).
// The cancelled kill reports no FailedKillPod. Before, the eviction's
// kill waited out its 300 s. The kill also never lengthens: a deletion
// asking for more than the eviction leaves the kill running, and the
// kill that follows the cancelled one (the eviction's, carried on for the
// pod being deleted) takes the shortest grace period asked for.
func TestEvictionKillShortenedByDeletion(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, nil)
	rt := &stopContexts{Runtime: h.rt}
	h.krt = rt
	h.k = h.newKubelet(func(c *Config) { c.Recorder = rec })
	p := h.sync(h.create(h.pod("hog", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationSlowStop] = "1h"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	drain(rec)
	h.k.requestEviction(&eviction.Eviction{
		Pod: p, Message: "The node was low on resource: memory. ", GracePeriodSeconds: 300,
		Threshold: eviction.Threshold{Signal: eviction.SignalMemoryAvailable},
	})
	first := syncInBackground(h, p)
	waitFor(t, "the eviction's kill waiting out its grace period", h.clock.HasWaiters)

	// A deletion asking for more (600 s) does not cut the kill short.
	// (HandlePod cancels a kill before it returns: the stop's context
	// tells at once.)
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	if err := rt.last().Err(); err != nil {
		t.Fatalf("the eviction's kill cancelled by a longer deletion grace period: %v", err)
	}
	deletePod(t, h, p, 2)
	h.k.HandlePod(h.get(p))
	if err := syncEnded(t, "the eviction's kill to be cancelled by the shorter grace period", first); err == nil {
		t.Fatal("the eviction's kill cut short by a shorter grace period reported success")
	}
	for _, e := range drain(rec) {
		if strings.HasPrefix(e, "Warning FailedKillPod") {
			t.Errorf("event for the cancelled kill: %s", e)
		}
	}
	second := syncInBackground(h, p)
	waitFor(t, "the second kill waiting out its grace period", h.clock.HasWaiters)
	h.step(2 * time.Second)
	if err := syncEnded(t, "the kill with the shorter grace period (2 s, not 300)", second); err != nil {
		t.Fatalf("the kill with the shorter grace period: %v", err)
	}
	if got := h.get(p); got != nil {
		t.Fatalf("pod not finally deleted once stopped: %s", got.Status.Phase)
	}
}

// TestDeletionKillKeepsEvictionGracePeriod: an eviction's kill (30 s)
// that failed, the pod then deleted with a longer grace period (600 s),
// is retried with the eviction's 30 s, not the deletion's: a terminating
// pod's grace period only shrinks (upstream's podSyncStatus.gracePeriod).
// Before, the eviction was dropped for the deletion, whose kill waited
// out 600 s.
func TestDeletionKillKeepsEvictionGracePeriod(t *testing.T) {
	h, p := failedEvictionKill(t)
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	killEndsAfter(t, h, p, "the kill", 30*time.Second)
	if got := h.get(p); got != nil {
		t.Fatalf("pod not finally deleted once stopped: %s %q", got.Status.Phase, got.Status.Reason)
	}
}

// stopContexts is the simulated runtime keeping the context of every
// StopContainer.
type stopContexts struct {
	*sim.Runtime
	mu   sync.Mutex
	ctxs []context.Context
}

func (r *stopContexts) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.ctxs = append(r.ctxs, ctx)
	r.mu.Unlock()
	return r.Runtime.StopContainer(ctx, id, timeout)
}

// last is the context of the latest StopContainer.
func (r *stopContexts) last() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctxs[len(r.ctxs)-1]
}

// containerStopFailure is a runtime whose StopContainer and
// StopPodSandbox fail at once while fail is set, the container and its
// sandbox left running.
type containerStopFailure struct {
	*sim.Runtime
	fail atomic.Bool
}

func (r *containerStopFailure) StopContainer(ctx context.Context, id string, timeout int64) error {
	if r.fail.Load() {
		return errors.New("failed to stop container: ttrpc: closed")
	}
	return r.Runtime.StopContainer(ctx, id, timeout)
}

func (r *containerStopFailure) StopPodSandbox(ctx context.Context, id string) error {
	if r.fail.Load() {
		return errors.New("failed to stop container: failed to kill container: ttrpc: closed")
	}
	return r.Runtime.StopPodSandbox(ctx, id)
}

// TestRemovalShortensKill: a pod being killed with its deletion's grace
// period (600 s, a container that ignores SIGTERM) that is then removed
// from the API with a shorter one (force-deleted: 0) has its kill cut
// short and is killed again by the clean-up with the shorter one (at
// least 2 s), as upstream's update for the removed pod
// (HandlePodRemoves, deletePod: UpdatePod with the removed pod,
// calculateEffectiveGracePeriod over its deletionGracePeriodSeconds)
// cancels the SyncTerminatingPod in flight. Before, the kill waited out
// its 600 s.
func TestRemovalShortensKill(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("slow", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationSlowStop] = "1h"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	first := syncInBackground(h, p)
	waitFor(t, "the container's stop waiting out its grace period", h.clock.HasWaiters)

	removed := h.get(p)
	removed.DeletionGracePeriodSeconds = ptr.To[int64](0)
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.k.HandlePodDeleted(removed)
	if err := syncEnded(t, "the kill to be cut short by the removal", first); err == nil {
		t.Fatal("the kill cut short reported success")
	}
	second := syncInBackground(h, p)
	waitFor(t, "the clean-up's kill waiting out its grace period", func() bool {
		select {
		case err := <-second:
			t.Fatalf("the clean-up ended without waiting for the grace period: %v", err)
		default:
		}
		return h.clock.HasWaiters()
	})
	h.step(minimumGracePeriod * time.Second)
	if err := syncEnded(t, "the clean-up's kill with the shorter grace period (2 s, not 600)", second); err != nil {
		t.Fatalf("the clean-up: %v", err)
	}
	rs, err := h.k.podRuntimeState(h.ctx, p.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Sandboxes) != 0 || len(rs.Containers) != 0 {
		t.Fatalf("pod not cleaned up: %d sandboxes, %d containers", len(rs.Sandboxes), len(rs.Containers))
	}
}
