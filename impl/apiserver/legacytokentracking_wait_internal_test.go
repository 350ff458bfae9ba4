package apiserver

import (
	"testing"
	"time"
)

// TestLegacyTrackingWait: the next look comes an interval after a
// successful one and after the queue's back-off (5ms doubling, at most
// 1000s) after failed ones.
func TestLegacyTrackingWait(t *testing.T) {
	for failures, want := range map[int]time.Duration{
		0: 30 * time.Minute, 1: 5 * time.Millisecond, 2: 10 * time.Millisecond, 3: 20 * time.Millisecond,
		18: 655360 * time.Millisecond, 19: 1000 * time.Second, 1000: 1000 * time.Second,
	} {
		if got := legacyTrackingWait(failures); got != want {
			t.Errorf("after %d failures: %v, want %v", failures, got, want)
		}
	}
}
