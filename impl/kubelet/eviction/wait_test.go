package eviction

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestKillTimeout: upstream's TerminatePodAbnormallyAndWait waits 1.5 ×
// the grace period (whole seconds, the half rounded down), at least 10 s.
func TestKillTimeout(t *testing.T) {
	for grace, want := range map[int64]time.Duration{
		0: 10 * time.Second, 1: 10 * time.Second, 7: 10 * time.Second,
		9: 13 * time.Second, 30: 45 * time.Second, 600: 900 * time.Second,
	} {
		if got := KillTimeout(grace); got != want {
			t.Errorf("KillTimeout(%d) = %v, want %v", grace, got, want)
		}
	}
}

func victim(uid string, grace int64) Eviction {
	return Eviction{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}, GracePeriodSeconds: grace, KillTimeout: KillTimeout(grace)}
}

// victims is the kubelet's view of the victims, set by the test.
type victims map[types.UID]VictimState

func (v victims) state(uid types.UID) VictimState { return v[uid] }

func (w *Wait) mustStep(t *testing.T, now time.Time, v victims) WaitStep {
	t.Helper()
	return w.Step(now, v.state)
}

// TestWaitKillsOneAfterAnother: the victims of one interval are evicted
// one after another, each once the previous one's kill ended (at once
// when it ends) or timed out (KillTimeout, ExceededGracePeriod); then the
// clean-up is polled from a second after the last kill ended, and the
// wait is over once every victim is finished.
func TestWaitKillsOneAfterAnother(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	v := victims{}
	w := NewWait([]Eviction{victim("a", 1), victim("b", 30)})
	if s := w.mustStep(t, at(0), v); s.Request == nil || s.Request.Pod.UID != "a" {
		t.Fatalf("first step %+v, want a's request", s)
	}
	if s := w.mustStep(t, at(0), v); !idle(s) {
		t.Fatalf("b requested before a's kill ended: %+v", s)
	}
	if s := w.mustStep(t, at(9), v); !idle(s) {
		t.Fatalf("a's kill timed out before 10 s: %+v", s)
	}
	v["a"] = VictimState{Killed: true, KilledAt: at(2)}
	if s := w.mustStep(t, at(9), v); s.Request == nil || s.Request.Pod.UID != "b" {
		t.Fatalf("a killed: %+v, want b's request", s)
	}
	// b: grace 30 s, its kill awaited 45 s from its request.
	if s := w.mustStep(t, at(53), v); !idle(s) {
		t.Fatalf("b's kill timed out before 45 s: %+v", s)
	}
	if s := w.mustStep(t, at(54), v); s.KillTimedOut == nil || s.KillTimedOut.Pod.UID != "b" {
		t.Fatalf("b's kill not timed out at 45 s: %+v", s)
	}
	// Clean-up: polled from 1 s after the kills ended (at 54 s).
	v["a"] = VictimState{Killed: true, KilledAt: at(2), Finished: true}
	v["b"] = VictimState{Finished: true}
	if s := w.mustStep(t, at(54), v); !idle(s) {
		t.Fatalf("clean-up checked before its first poll: %+v", s)
	}
	if s := w.mustStep(t, at(55), v); !s.Over || s.CleanupTimedOut {
		t.Fatalf("every victim finished: %+v, want over", s)
	}
}

// TestWaitCleanupTimeout: victims not finished 30 s after their kills
// ended end the wait all the same.
func TestWaitCleanupTimeout(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	v := victims{}
	w := NewWait([]Eviction{victim("a", 1)})
	w.mustStep(t, at(0), v)
	// Killed at 1 s, seen at 3 s: the clean-up is due from 2 s.
	v["a"] = VictimState{Killed: true, KilledAt: at(1)}
	if s := w.mustStep(t, at(3), v); !idle(s) {
		t.Fatalf("unfinished victim: %+v", s)
	}
	if s := w.mustStep(t, at(30), v); !idle(s) {
		t.Fatalf("over before 30 s of clean-up: %+v", s)
	}
	if s := w.mustStep(t, at(31), v); !s.Over || !s.CleanupTimedOut {
		t.Fatalf("30 s after the kill: %+v, want over, timed out", s)
	}
}

// TestWaitPodAlreadyTerminated: a victim terminated before its eviction
// was requested (or gone) ends its kill's wait at once; the clean-up
// poll counts from the request.
func TestWaitPodAlreadyTerminated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := victims{"a": {Killed: true, KilledAt: t0.Add(-time.Hour), Finished: true}}
	w := NewWait([]Eviction{victim("a", 1)})
	w.mustStep(t, t0, v)
	if s := w.mustStep(t, t0.Add(999*time.Millisecond), v); !idle(s) {
		t.Fatalf("clean-up checked before a second: %+v", s)
	}
	if s := w.mustStep(t, t0.Add(time.Second), v); !s.Over {
		t.Fatalf("%+v, want over", s)
	}
	if s := NewWait(nil).Step(t0, v.state); !s.Over {
		t.Fatalf("no victims: %+v, want over", s)
	}
}

// waiting: s asks for nothing but to be looked at again at wakeAt (or
// once a victim's kill ends).
func waiting(s WaitStep, wakeAt time.Time) bool {
	return s == WaitStep{WakeAt: wakeAt}
}

// TestWaitWakeAt: a step that waits says when the wait needs looking at
// again without a victim's progress, as upstream's eviction manager
// blocks on the kill's completion channel or its timeout
// (TerminatePodAbnormallyAndWait), then on the clean-up poll's ticker
// (waitForPodsCleanup: every second from the end of the kills, up to 30
// s). The clean-up is checked at those ticks only: a step in between
// (woken by anything else) checks nothing.
func TestWaitWakeAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	v := victims{}
	w := NewWait([]Eviction{victim("a", 30)})
	w.mustStep(t, at(0), v)
	if s := w.mustStep(t, at(0), v); !waiting(s, at(45000)) {
		t.Fatalf("awaiting a's kill: %+v, want to wake at its KillTimeout (45 s)", s)
	}
	if s := w.mustStep(t, at(2000), v); !waiting(s, at(45000)) {
		t.Fatalf("still awaiting a's kill: %+v", s)
	}
	// The kill ends at 2.5 s; its completion wakes the wait at once.
	v["a"] = VictimState{Killed: true, KilledAt: at(2500)}
	if s := w.mustStep(t, at(2500), v); !waiting(s, at(3500)) {
		t.Fatalf("kill over: %+v, want the first clean-up poll a second later", s)
	}
	v["a"] = VictimState{Killed: true, KilledAt: at(2500), Finished: true}
	if s := w.mustStep(t, at(3000), v); !waiting(s, at(3500)) {
		t.Fatalf("between polls: %+v, want nothing checked before 3.5 s", s)
	}
	v["a"] = VictimState{Killed: true, KilledAt: at(2500)}
	if s := w.mustStep(t, at(3500), v); !waiting(s, at(4500)) {
		t.Fatalf("unfinished at the first poll: %+v, want the next one a second later", s)
	}
	// A poll late by 1.7 s (the kubelet busy) is the one due at 4.5 s;
	// the next stays on the grid: 6.5 s.
	if s := w.mustStep(t, at(6200), v); !waiting(s, at(6500)) {
		t.Fatalf("late poll: %+v, want the next at 6.5 s", s)
	}
	if s := w.mustStep(t, at(31500), v); !waiting(s, at(32500)) {
		t.Fatalf("29 s of clean-up: %+v", s)
	}
	if s := w.mustStep(t, at(32500), v); !s.Over || !s.CleanupTimedOut {
		t.Fatalf("30 s of clean-up: %+v, want over, timed out", s)
	}
}

// idle: s asks for nothing now (when to look again aside).
func idle(s WaitStep) bool {
	s.WakeAt = time.Time{}
	return s == WaitStep{}
}
