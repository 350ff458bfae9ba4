package kubelet

import (
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// uidRecordingQueue is a kubelet work queue that notes which pods are asked
// for a sync at once (Add) and which later (AddAfter), passing both on.
type uidRecordingQueue struct {
	workqueue.TypedDelayingInterface[types.UID]
	mu             sync.Mutex
	added, delayed []types.UID
}

func (q *uidRecordingQueue) Add(uid types.UID) {
	q.mu.Lock()
	q.added = append(q.added, uid)
	q.mu.Unlock()
	q.TypedDelayingInterface.Add(uid)
}

func (q *uidRecordingQueue) AddAfter(uid types.UID, d time.Duration) {
	q.mu.Lock()
	q.delayed = append(q.delayed, uid)
	q.mu.Unlock()
	q.TypedDelayingInterface.AddAfter(uid, d)
}

// take returns what was asked for since the last take, and forgets it.
func (q *uidRecordingQueue) take() (added, delayed []types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	added, delayed = q.added, q.delayed
	q.added, q.delayed = nil, nil
	return added, delayed
}

// recordUIDQueue gives h's kubelet a recording work queue (on the harness's
// fake clock, so nothing delayed comes due unless the test steps it).
func recordUIDQueue(h *harness) *uidRecordingQueue {
	inner := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.UID]{Clock: h.clock})
	if t, ok := h.t.(*testing.T); ok {
		t.Cleanup(inner.ShutDown)
	}
	q := &uidRecordingQueue{TypedDelayingInterface: inner}
	h.k.mu.Lock()
	h.k.queue = q
	h.k.mu.Unlock()
	return q
}

// TestPendingResizeWokenByAdmission: restarted as in
// TestPendingResizeWaitsForSourceSynced with its source synced, the
// kubelet syncs a before b went through admission; a's resize waits, and
// nothing asks for a's sync again (no periodic retry: an idle kubelet
// does no work for it) until the last pod not yet admitted is decided:
// admitted or rejected (b's first sync), gone from the API, or handed
// over being deleted or finished before its admission. Then a is asked
// for at once, and its resize is Deferred again (b admitted) or applied
// (b holding nothing). Before, the waiting resize was retried every
// 100 ms, and a was not asked for when b was admitted.
func TestPendingResizeWokenByAdmission(t *testing.T) {
	for _, tc := range []struct {
		name string
		// decide settles b's admission; it reports whether b is still
		// there to defer a's resize.
		decide func(h *harness, b *v1.Pod) bool
	}{
		{"admitted", func(h *harness, b *v1.Pod) bool {
			h.sync(b)
			return true
		}},
		{"deleted before admission", func(h *harness, b *v1.Pod) bool {
			h.k.HandlePodDeleted(b)
			return false
		}},
		// b refused at its first sync (a sysctl the node does not
		// allow): admit's decision wakes a as an admission does.
		{"rejected", func(h *harness, b *v1.Pod) bool {
			cur := h.get(b)
			cur.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "vm.swappiness", Value: "1"}}}
			h.k.HandlePod(cur)
			if _, err := h.k.syncPod(h.ctx, b.UID); err != nil {
				h.t.Fatal(err)
			}
			return false
		}},
		// b handed over again being deleted, or finished, before its
		// first sync: HandlePod wakes a, no admission being left.
		{"being deleted before admission", func(h *harness, b *v1.Pod) bool {
			cur := h.get(b)
			now := metav1.NewTime(h.clock.Now())
			cur.DeletionTimestamp, cur.DeletionGracePeriodSeconds = &now, ptr.To[int64](30)
			h.k.HandlePod(cur)
			return false
		}},
		{"finished before admission", func(h *harness, b *v1.Pod) bool {
			cur := h.get(b)
			cur.Status.Phase = v1.PodSucceeded
			h.k.HandlePod(cur)
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a, b, _ := restartedWithDeferredResize(t)
			k := h.k
			k.HandlePod(h.get(a))
			k.HandlePod(h.get(b))
			k.MarkSourceSynced()
			q := recordUIDQueue(h)
			h.sync(a)
			if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
				t.Fatalf("before b's admission a's resize was applied: the runtime reports %v", r)
			}
			if _, delayed := q.take(); slices.Contains(delayed, a.UID) {
				t.Errorf("a's waiting resize asked for a later sync of a (a poll): %v", delayed)
			}
			present := tc.decide(h, b)
			added, _ := q.take()
			if !slices.Contains(added, a.UID) {
				t.Fatalf("once b's admission was decided a was not asked for at once (asked for: %v)", added)
			}
			got := h.sync(a)
			c := condOf(got, v1.PodResizePending)
			r := h.runtimeResources(a, "app")
			switch {
			case present && (c == nil || c.Reason != v1.PodReasonDeferred || r.CpuShares != 409):
				t.Errorf("b admitted: a's PodResizePending %+v, runtime %v; want Deferred, 409 shares", c, r)
			case !present && (c != nil || r.CpuShares == 409):
				t.Errorf("b gone: a's PodResizePending %+v, runtime %v; want the resize applied", c, r)
			}
		})
	}
}
