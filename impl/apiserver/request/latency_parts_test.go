package request

import (
	"testing"
	"time"
)

// TestExcludedLatencyParts: each part reads back as recorded (mutating
// calls summed, the longest validating call, the longest queue wait);
// a nil ExcludedLatency reads zero.
func TestExcludedLatencyParts(t *testing.T) {
	var e ExcludedLatency
	e.AddMutatingWebhook(10 * time.Millisecond)
	e.AddMutatingWebhook(20 * time.Millisecond)
	e.AddValidatingWebhook(5 * time.Millisecond)
	e.AddValidatingWebhook(7 * time.Millisecond)
	e.AddQueueWait(3 * time.Millisecond)
	if e.MutatingWebhooks() != 30*time.Millisecond || e.ValidatingWebhooks() != 7*time.Millisecond || e.QueueWait() != 3*time.Millisecond {
		t.Errorf("parts %v %v %v, want 30ms 7ms 3ms", e.MutatingWebhooks(), e.ValidatingWebhooks(), e.QueueWait())
	}
	var none *ExcludedLatency
	if none.MutatingWebhooks() != 0 || none.ValidatingWebhooks() != 0 || none.QueueWait() != 0 {
		t.Error("nil ExcludedLatency reads non-zero")
	}
}
