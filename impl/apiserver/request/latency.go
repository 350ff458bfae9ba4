package request

import (
	"context"
	"sync/atomic"
	"time"
)

// ExcludedLatency accumulates the parts of one request's latency that
// kube-apiserver leaves out of apiserver_request_sli_duration_seconds,
// because they depend on the cluster's configuration and load rather than
// on the server: the calls to mutating admission webhooks (summed, as they
// run one after another), the calls to validating admission webhooks (the
// longest call, as they run in parallel) and the wait in a priority and
// fairness queue (the longest wait). The methods are safe for concurrent
// use and do nothing on a nil receiver, so that code outside the request
// chain (a test, the loopback client's own callers) need not check.
type ExcludedLatency struct {
	mutating, validating, queueWait atomic.Int64 // nanoseconds
}

// AddMutatingWebhook adds a mutating webhook call of d.
func (e *ExcludedLatency) AddMutatingWebhook(d time.Duration) {
	if e != nil {
		e.mutating.Add(int64(d))
	}
}

// AddValidatingWebhook records a validating webhook call of d.
func (e *ExcludedLatency) AddValidatingWebhook(d time.Duration) {
	if e != nil {
		storeMax(&e.validating, int64(d))
	}
}

// AddQueueWait records a wait of d for the request's seats.
func (e *ExcludedLatency) AddQueueWait(d time.Duration) {
	if e != nil {
		storeMax(&e.queueWait, int64(d))
	}
}

// Total is the latency to leave out: the mutating calls' sum, the longest
// validating call and the longest queue wait. Zero on a nil receiver.
func (e *ExcludedLatency) Total() time.Duration {
	if e == nil {
		return 0
	}
	return time.Duration(e.mutating.Load() + e.validating.Load() + e.queueWait.Load())
}

// storeMax sets v to n when n is larger.
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// ExcludedLatencyFrom is the excluded latency of the request of ctx, kept
// in the node NewContext or WithInfo added (no allocation of its own), or
// nil when ctx carries no request.
func ExcludedLatencyFrom(ctx context.Context) *ExcludedLatency {
	if s, ok := ctx.Value(stateKey).(*stateCtx); ok {
		return &s.excluded
	}
	return nil
}
