package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// After an interval that evicted pods, upstream's eviction manager does
// not look at the node again until the evicted pods are gone: evicting a
// pod waits for its kill (TerminatePodAbnormallyAndWait, the pods of one
// interval one after another), then the manager polls every second, up
// to 30 s, until every evicted pod is finished (its resources reclaimed:
// the kubelet's PodIsFinished), and then synchronizes at once, without
// waiting out its monitoring interval. Wait is that waiting as a state
// the kubelet advances (Step) from its housekeeping loop: no goroutine
// and nothing blocks.

const (
	// PodCleanupTimeout bounds the wait for the evicted pods' clean-up
	// (upstream's podCleanupTimeout).
	PodCleanupTimeout = 30 * time.Second
	// PodCleanupPollPeriod is how often the clean-up is checked
	// (upstream's podCleanupPollFreq); the first check is one period after
	// the kills ended.
	PodCleanupPollPeriod = time.Second
	// minKillTimeout is the shortest wait for an evicted pod's kill: the
	// kubelet's traffic to the runtime to complete a SIGKILL.
	minKillTimeout = 10
)

// KillTimeout is how long the eviction manager waits for the kill of a
// pod whose eviction asks for grace seconds (Eviction.KillTimeout): one
// and a half times that (whole seconds, rounded down), at least 10 s, as
// upstream's killPodNow (TerminatePodAbnormallyAndWait). Pure.
func KillTimeout(grace int64) time.Duration {
	t := grace + grace/2
	if t < minKillTimeout {
		t = minKillTimeout
	}
	return time.Duration(t) * time.Second
}

// VictimState is what the kubelet knows of an evicted pod, for Wait.
type VictimState struct {
	// Killed: the kill that ends the pod succeeded (it is terminated, at
	// KilledAt), or the pod is gone (KilledAt zero).
	Killed   bool
	KilledAt time.Time
	// Finished: the terminated pod's resources are reclaimed (its volumes
	// torn down, its cgroup removed, its final status written; upstream's
	// PodIsFinished), or it is gone.
	Finished bool
}

// Wait is the eviction manager waiting for the pods one interval evicted.
type Wait struct {
	// Victims are the evictions decided, in the order they are carried
	// out (each requested once the previous one's kill ended or timed
	// out).
	Victims []Eviction

	next         int       // the victim whose kill is awaited (len: the kills are over)
	requestedAt  time.Time // when Victims[next]'s eviction was requested (zero: not yet)
	killDeadline time.Time
	cleanupFrom  time.Time // when the kills were over
}

// WaitStep is what Step asks the kubelet to do; the zero value: nothing
// until a later time or a victim's progress.
type WaitStep struct {
	// Request: hand this pod's eviction to the pod workers now.
	Request *Eviction
	// KillTimedOut: this pod's kill did not end within its KillTimeout
	// (upstream records ExceededGracePeriod on it and moves on).
	KillTimedOut *Eviction
	// Over: the wait is over; the manager synchronizes now.
	// CleanupTimedOut says the evicted pods were not all finished within
	// PodCleanupTimeout.
	Over            bool
	CleanupTimedOut bool
}

// NewWait starts waiting for victims (none: the wait is over at once).
func NewWait(victims []Eviction) *Wait {
	return &Wait{Victims: victims}
}

// Step advances the wait at now, given what the kubelet knows of each
// victim (state), and returns the next thing to do. Call it again after
// acting on a non-zero step that is not Over; a zero step means waiting
// further. It looks at nothing but its arguments.
func (w *Wait) Step(now time.Time, state func(types.UID) VictimState) WaitStep {
	for w.next < len(w.Victims) {
		v := &w.Victims[w.next]
		if w.requestedAt.IsZero() {
			w.requestedAt = now
			w.killDeadline = now.Add(v.KillTimeout)
			return WaitStep{Request: v}
		}
		s := state(v.Pod.UID)
		switch {
		case s.Killed:
			// The kill ended when it did (or at the request, for a pod
			// terminated before it, whose wait upstream ends at once).
			at := s.KilledAt
			if at.IsZero() || at.After(now) {
				at = now
			}
			if at.Before(w.requestedAt) {
				at = w.requestedAt
			}
			w.advance(at)
		case !now.Before(w.killDeadline):
			w.advance(w.killDeadline)
			return WaitStep{KillTimedOut: v}
		default:
			return WaitStep{}
		}
	}
	if len(w.Victims) == 0 {
		return WaitStep{Over: true}
	}
	if now.Before(w.cleanupFrom.Add(PodCleanupPollPeriod)) {
		return WaitStep{}
	}
	finished := true
	for i := range w.Victims {
		if !state(w.Victims[i].Pod.UID).Finished {
			finished = false
			break
		}
	}
	switch {
	case finished:
		return WaitStep{Over: true}
	case !now.Before(w.cleanupFrom.Add(PodCleanupTimeout)):
		return WaitStep{Over: true, CleanupTimedOut: true}
	}
	return WaitStep{}
}

// advance moves past the victim whose kill ended (or timed out) at at.
func (w *Wait) advance(at time.Time) {
	w.next++
	w.requestedAt, w.killDeadline = time.Time{}, time.Time{}
	if w.next == len(w.Victims) {
		w.cleanupFrom = at
	}
}
