package request

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestExcludedLatency: mutating webhook calls are summed, the validating
// calls (parallel) and the queue wait count their longest, as
// kube-apiserver's latency trackers; the tracker lives in the request's
// context node, shared by the contexts derived from it, and is nil (and
// harmless) without one.
func TestExcludedLatency(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods", nil)
	ctx := NewContext(context.Background(), r)
	derived, cancel := context.WithCancel(SetUser(ctx, &User{Name: "u"}))
	defer cancel()
	e := ExcludedLatencyFrom(derived)
	if e == nil || e != ExcludedLatencyFrom(ctx) {
		t.Fatalf("tracker %p, of the request node %p", e, ExcludedLatencyFrom(ctx))
	}
	e.AddMutatingWebhook(100 * time.Millisecond)
	e.AddMutatingWebhook(200 * time.Millisecond)
	var wg sync.WaitGroup
	for _, d := range []time.Duration{30, 50, 10} {
		wg.Go(func() { e.AddValidatingWebhook(d * time.Millisecond) })
	}
	wg.Wait()
	e.AddQueueWait(7 * time.Millisecond)
	e.AddQueueWait(3 * time.Millisecond)
	if got, want := e.Total(), 357*time.Millisecond; got != want {
		t.Errorf("total %v, want %v", got, want)
	}
	var none *ExcludedLatency = ExcludedLatencyFrom(context.Background())
	if none != nil {
		t.Fatalf("a context without a request has a tracker")
	}
	none.AddMutatingWebhook(time.Second)
	none.AddValidatingWebhook(time.Second)
	none.AddQueueWait(time.Second)
	if none.Total() != 0 {
		t.Errorf("nil tracker total %v", none.Total())
	}
}
