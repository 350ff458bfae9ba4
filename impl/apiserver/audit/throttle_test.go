package audit

import (
	"testing"
	"time"
)

// TestTokenBucketThrottlesBatches: the batch throttle lets a burst
// through at once, then one batch per 1/qps, and refills while unused,
// never beyond the burst (kube-apiserver's token bucket).
func TestTokenBucketThrottlesBatches(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := newTokenBucket(2, 3)
	for i := range 3 {
		if w := b.reserve(t0); w != 0 {
			t.Fatalf("burst batch %d waits %v", i, w)
		}
	}
	if w := b.reserve(t0); w != 500*time.Millisecond {
		t.Errorf("4th batch waits %v, want 500ms (2 qps)", w)
	}
	if w := b.reserve(t0); w != time.Second {
		t.Errorf("5th batch waits %v, want 1s (owed tokens add up)", w)
	}
	// An hour unused refills the bucket to its burst only.
	later := t0.Add(time.Hour)
	for i := range 3 {
		if w := b.reserve(later); w != 0 {
			t.Fatalf("after an hour, batch %d waits %v", i, w)
		}
	}
	if w := b.reserve(later); w != 500*time.Millisecond {
		t.Errorf("after the refilled burst, wait %v, want 500ms", w)
	}
	if w := b.reserve(later.Add(250 * time.Millisecond)); w != 750*time.Millisecond {
		t.Errorf("250ms later, wait %v, want 750ms", w)
	}
}
