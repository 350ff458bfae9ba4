package kubelet

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
)

func TestSyncRetryDelay(t *testing.T) {
	const backOff, syncFrequency = 10 * time.Second, 20 * time.Second
	failed := errors.New("writing status of pod default/web: the server is busy")
	for _, tc := range []struct {
		name    string
		hint    time.Duration
		err     error
		backOff time.Duration
		r       float64
		want    time.Duration
	}{
		{name: "success without a wake-up of its own", want: 0},
		{name: "success keeps its hint (probe, CrashLoopBackOff, grace period)", hint: 3 * time.Second, want: 3 * time.Second},
		{name: "failure backs off", err: failed, want: backOff},
		{name: "failure, jitter at its largest", err: failed, r: 0.999999, want: backOff + backOff/2 - 5*time.Microsecond},
		{name: "failure, jitter in between", err: failed, r: 0.5, want: 12500 * time.Millisecond},
		{name: "failure with an earlier hint wakes at the hint", hint: 2 * time.Second, err: failed, want: 2 * time.Second},
		{name: "failure with a later hint backs off", hint: 40 * time.Second, err: failed, want: backOff},
		{name: "a back-off longer than the full resync is cut to it", err: failed, backOff: time.Minute, want: syncFrequency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.backOff
			if b == 0 {
				b = backOff
			}
			if got := syncRetryDelay(tc.hint, tc.err, b, syncFrequency, tc.r); got != tc.want {
				t.Errorf("syncRetryDelay(%v, %v, %v, r=%v) = %v, want %v", tc.hint, tc.err, b, tc.r, got, tc.want)
			}
		})
	}
}

// recordingQueue is a pod work queue whose delayed adds are recorded
// instead of scheduled: the test fires them itself.
type recordingQueue struct {
	workqueue.TypedInterface[types.UID]
	delayed []time.Duration
}

func (q *recordingQueue) AddAfter(_ types.UID, d time.Duration) { q.delayed = append(q.delayed, d) }

// lastDelay is the delay of the last delayed add since the previous call
// (0: none).
func (q *recordingQueue) lastDelay() time.Duration {
	if len(q.delayed) == 0 {
		return 0
	}
	d := q.delayed[len(q.delayed)-1]
	q.delayed = nil
	return d
}

// TestFailedSyncBacksOff drives the pod worker over a pod whose status
// write the API server turns away: the failed sync is retried after the
// back-off, the full resync meanwhile does not sync it, a pod update does
// at once, and once the write goes through the pod no longer backs off.
func TestFailedSyncBacksOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SyncErrorBackOff = 10 * time.Second })
	q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
	defer q.ShutDown()
	h.k.queue = q
	busy := true
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() == "status" && busy {
			return true, nil, apierrors.NewTooManyRequests("busy", 1)
		}
		return false, nil, nil
	})
	work := func() {
		t.Helper()
		if q.Len() != 1 {
			t.Fatalf("%d pods queued, want 1", q.Len())
		}
		h.k.processNext(h.ctx)
	}

	p := h.create(h.pod("web", nil)) // handed over: synced at once
	work()
	if w := h.k.StatusWrites(); w != 1 {
		t.Fatalf("%d status writes, want 1", w)
	}
	retry := q.lastDelay()
	if retry < 10*time.Second || retry > 15*time.Second {
		t.Fatalf("failed sync requeued after %v, want 10-15 s", retry)
	}

	// The full resync comes before the retry: the pod waits for it.
	h.step(retry / 2)
	h.k.resyncAll()
	work()
	if w := h.k.StatusWrites(); w != 1 {
		t.Errorf("the full resync synced a pod backing off (%d status writes, want 1)", w)
	}
	if d := q.lastDelay(); d != retry-retry/2 {
		t.Errorf("after the resync the pod waits %v more, want %v", d, retry-retry/2)
	}

	// Its retry comes: synced again, and backing off again.
	h.step(retry - retry/2)
	q.Add(p.UID)
	work()
	if w := h.k.StatusWrites(); w != 2 {
		t.Errorf("the retry did not sync (%d status writes, want 2)", w)
	}
	if d := q.lastDelay(); d < 10*time.Second {
		t.Errorf("second failure requeued after %v, want the back-off", d)
	}

	// A pod update syncs at once, back-off or not; the write now succeeds.
	busy = false
	h.step(time.Second)
	cur := h.get(p)
	cur.Labels = map[string]string{"updated": "yes"}
	h.k.HandlePod(cur)
	work()
	if w := h.k.StatusWrites(); w != 3 {
		t.Errorf("the update did not sync at once (%d status writes, want 3)", w)
	}
	if got := h.get(p); got.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s after the write went through, want Running", got.Status.Phase)
	}
	if d := q.lastDelay(); d != 0 {
		t.Errorf("a successful sync of a Running pod requeued after %v", d)
	}

	// No longer backing off: the full resync syncs it (nothing to write).
	h.k.mu.Lock()
	retryAt := h.k.pods[p.UID].retryAt
	h.k.mu.Unlock()
	h.k.resyncAll()
	work()
	if retryAt != 0 || q.lastDelay() != 0 || q.Len() != 0 {
		t.Errorf("after a successful sync the pod still backs off (retryAt %d)", retryAt)
	}
}
