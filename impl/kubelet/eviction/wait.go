package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// After an interval that evicted pods, upstream's eviction manager does
// not look at the node again until the evicted pods are gone: evicting a
// pod waits for its kill (TerminatePodAbnormallyAndWait, the pods of one
// interval one after another, each wait ending the moment the kill
// does), then the manager polls every second, up to 30 s, until every
// evicted pod is finished (its resources reclaimed: the kubelet's
// PodIsFinished), and then synchronizes at once, without waiting out its
// monitoring interval. Wait is that waiting as a state the kubelet
// advances (Step) when a victim's kill ends and at the time the last step
// asked for (WaitStep.WakeAt): no goroutine and nothing blocks.

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
	nextPoll     time.Time // the clean-up's next check: cleanupFrom plus whole poll periods
}

// WaitStep is what Step asks the kubelet to do; with only WakeAt set:
// nothing until then or until a victim's kill ends.
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
	// WakeAt, on a step asking for nothing else: when to step again
	// unless a victim's kill ends first (its KillTimeout, the clean-up's
	// next poll).
	WakeAt time.Time
}

// NewWait starts waiting for victims (none: the wait is over at once).
func NewWait(victims []Eviction) *Wait {
	return &Wait{Victims: victims}
}

// Step advances the wait at now, given what the kubelet knows of each
// victim (state), and returns the next thing to do. Call it again after
// acting on a step asking for something that is not Over; a step with
// only WakeAt means waiting further: step again then, or once a victim's
// kill ends (a pod terminated or gone), as upstream's manager wakes on the
// pod worker's completion of the kill. It looks at nothing but its
// arguments.
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
			return WaitStep{WakeAt: w.killDeadline}
		}
	}
	if len(w.Victims) == 0 {
		return WaitStep{Over: true}
	}
	// The clean-up is checked on its poll's ticks only; one missed (the
	// kubelet busy) is checked late, the next keeping to the ticks.
	if now.Before(w.nextPoll) {
		return WaitStep{WakeAt: w.nextPoll}
	}
	w.nextPoll = w.nextPoll.Add((now.Sub(w.nextPoll)/PodCleanupPollPeriod + 1) * PodCleanupPollPeriod)
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
	return WaitStep{WakeAt: w.nextPoll}
}

// advance moves past the victim whose kill ended (or timed out) at at.
func (w *Wait) advance(at time.Time) {
	w.next++
	w.requestedAt, w.killDeadline = time.Time{}, time.Time{}
	if w.next == len(w.Victims) {
		w.cleanupFrom, w.nextPoll = at, at.Add(PodCleanupPollPeriod)
	}
}
