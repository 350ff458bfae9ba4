package kubelet

import (
	"testing"
	"time"
)

// TestRotationRetrySchedule: after failed requests the manager waits as
// upstream's: the jittered exponential back-off (2s doubling, each wait
// up to 10% longer) for its five attempts, then, the back-off spent,
// attempts on a 32s beat from when it ran out, an attempt that
// overran a beat waiting for the next. Bounds, the jitter being
// random; a success starts the back-off again.
func TestRotationRetrySchedule(t *testing.T) {
	jittered := false // some wait over its base: the back-off is jittered
	for run := range 50 {
		r := newRotationRetry()
		now := time.Unix(1_000_000, 0)
		for i, base := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second} {
			at, spent := r.failed(now)
			if spent {
				t.Fatalf("run %d: back-off spent after %d failures, want 5", run, i+1)
			}
			d := at.Sub(now)
			if d < base || d >= base+base/10 {
				t.Fatalf("run %d: wait after failure %d = %v, want in [%v, %v)", run, i+1, d, base, base+base/10)
			}
			jittered = jittered || d > base
			now = at.Add(100 * time.Millisecond) // the next attempt took 100ms
		}
		start := now
		at, spent := r.failed(now)
		if !spent || at != start.Add(32*time.Second) {
			t.Fatalf("run %d: fifth failure: next at %v (spent %v), want %v and spent", run, at.Sub(start), spent, 32*time.Second)
		}
		// An attempt ending 3s into the beat: the next beat.
		if at, spent = r.failed(start.Add(35 * time.Second)); spent || at != start.Add(64*time.Second) {
			t.Fatalf("run %d: next at %v after the beat's start (spent %v), want 64s", run, at.Sub(start), spent)
		}
		// One overrunning a beat (a 40s wait for its certificate): the
		// beat after, the overrun one being skipped.
		if at, _ = r.failed(start.Add(104 * time.Second)); at != start.Add(128*time.Second) {
			t.Fatalf("run %d: next at %v after the beat's start, want 128s", run, at.Sub(start))
		}
		r.succeeded()
		if at, spent = r.failed(now); spent || at.Sub(now) < 2*time.Second || at.Sub(now) >= 2200*time.Millisecond {
			t.Fatalf("run %d: after a success the first wait is %v (spent %v), want the back-off's first", run, at.Sub(now), spent)
		}
	}
	if !jittered {
		t.Error("200 back-off waits all exactly their base: no jitter, want up to 10% more as upstream's")
	}
}
