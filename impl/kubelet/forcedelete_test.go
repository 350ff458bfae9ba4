package kubelet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// stopTimeouts is the simulated runtime recording the timeout of every
// StopContainer.
type stopTimeouts struct {
	*sim.Runtime
	mu  sync.Mutex
	got []int64
}

func (r *stopTimeouts) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.got = append(r.got, timeout)
	r.mu.Unlock()
	return r.Runtime.StopContainer(ctx, id, timeout)
}

// TestForceDeleteGracePeriodAtLeastOne: a pod deleted with a grace
// period of 0 (a force delete), still in the API (a finalizer) or
// removed from it, is killed with upstream's effective grace period,
// never less than 1 s (pod_workers.go calculateEffectiveGracePeriod: "we
// always supply a grace period of 1"), handed to the kill as its
// override: its container's preStop hook runs (kuberuntime's
// killContainer runs it when the grace period is above 0) and the
// container is stopped with the 2 s minimum (minimumGracePeriodInSeconds).
// Before, the kill took 0 and skipped the preStop hook.
func TestForceDeleteGracePeriodAtLeastOne(t *testing.T) {
	for _, removed := range []bool{false, true} {
		name := "deleting"
		if removed {
			name = "removed"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			rt := &stopTimeouts{Runtime: h.rt}
			h.krt = rt
			h.k = h.newKubelet(nil)
			p := h.create(h.pod("forced", func(p *v1.Pod) {
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/tmp/stopping"}}}}
			}))
			got := h.sync(p)
			if got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", got.Status.Phase)
			}
			id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
			if removed {
				gone := h.get(p)
				now := metav1.NewTime(h.clock.Now())
				gone.DeletionTimestamp, gone.DeletionGracePeriodSeconds = &now, ptr.To[int64](0)
				if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				h.k.HandlePodDeleted(gone)
				if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
					t.Fatalf("clean-up: %v", err)
				}
			} else {
				deletePod(t, h, got, 0)
				h.sync(p)
			}
			ran := false
			for _, e := range h.rt.Execs() {
				if e.ContainerID == id && strings.Join(e.Cmd, " ") == "touch /tmp/stopping" {
					ran = true
				}
			}
			if !ran {
				t.Errorf("preStop hook not run for a grace period of 0 (upstream's effective one is 1 s)")
			}
			rt.mu.Lock()
			defer rt.mu.Unlock()
			if len(rt.got) != 1 || rt.got[0] != minimumGracePeriod {
				t.Errorf("StopContainer timeouts %v, want [%d]", rt.got, minimumGracePeriod)
			}
		})
	}
}

// TestForceDeleteKillNotRestarted: the kill of a pod deleted with a
// grace period of 0 (given 1 s) is not cancelled by a later update of the
// pod with the same 0: upstream's effective grace period stays 1, not
// shortened (calculateEffectiveGracePeriod), so the SyncTerminatingPod
// in flight goes on. Before, 0 read as shorter than the kill's and the
// kill was cancelled and begun again.
func TestForceDeleteKillNotRestarted(t *testing.T) {
	h := newHarness(t, nil)
	p := h.sync(h.create(h.pod("forced", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationSlowStop] = "1h"
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	deletePod(t, h, p, 0)
	h.k.HandlePod(h.get(p))
	done := syncInBackground(h, p)
	waitFor(t, "the kill waiting out the 2 s minimum", h.clock.HasWaiters)
	h.k.HandlePod(h.get(p)) // the same deletion again
	h.step(minimumGracePeriod * time.Second)
	if err := syncEnded(t, "the kill", done); err != nil {
		t.Fatalf("the kill: %v", err)
	}
}

// TestRemovalKeepsEvictionGracePeriod: an eviction's kill (30 s) that
// failed, the pod then gone from the API without the kubelet seeing a
// shorter deletion (the last pod it had: its spec's 600 s), is killed by
// the clean-up with the eviction's 30 s, not 600: a terminating pod's
// grace period only shrinks (upstream's podSyncStatus.gracePeriod,
// calculateEffectiveGracePeriod).
func TestRemovalKeepsEvictionGracePeriod(t *testing.T) {
	h, p := failedEvictionKill(t)
	gone := h.get(p)
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.k.HandlePodDeleted(gone)
	killEndsAfter(t, h, p, "the clean-up's kill", 30*time.Second)
}
