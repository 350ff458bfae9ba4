package flowcontrol

import (
	"slices"
	"time"
)

// Fair queuing inside a priority level, by virtual time, as kube-apiserver's
// queue sets do it (KEP 1040's "fair queuing for server requests"):
//
//   - The level keeps a virtual clock R (in seat-seconds) that advances,
//     while any queue is active (has requests waiting or executing), at
//     min(seats requested, the level's limit) / active queues per second
//     of real time: the service each active queue would get if the seats
//     were shared out equally.
//   - Each queue has the virtual time its next request starts at
//     (nextR): R when it becomes active, then advanced by each dispatched
//     request's estimated work, and never earlier than the arrival (in R)
//     of its oldest waiting request.
//   - A request's estimated work is its initial seats times
//     estimatedServiceDuration plus its final seats times its additional
//     latency. When it finishes having executed for d instead, its queue's
//     nextR is corrected by initial seats times (estimatedServiceDuration
//     - d).
//   - The next request dispatched is the oldest of the queue whose
//     virtual finish time (nextR plus that request's work) is the
//     smallest, ties going to the queue after the last one dispatched
//     from. If it does not fit in the free seats, the level waits for them.
//
// The Dispatcher has no clock: every call that changes a level passes
// now, and the level's R is brought up to it first (sync).

// estimatedServiceDuration is how long a request is assumed to execute
// until it finishes, as kube-apiserver's queue sets assume it (3 ms): a
// request in flight is charged little, and its queue is charged what it
// really took when it finishes.
const estimatedServiceDuration = 3 * time.Millisecond

// queue is one of a level's fair queues.
type queue struct {
	// dropped: no longer one of its level's queues (see
	// dropSurplusQueue); requests lingering from it still give their
	// seats back to it.
	dropped   bool
	waiting   []*Request // oldest first
	executing int        // requests dispatched from it, still executing
	// seatsInUse: seats of its requests executing or lingering;
	// waitingSeats, waitingWork: the seats and estimated work of its
	// waiting requests.
	seatsInUse, waitingSeats int
	waitingWork              float64
	// nextR is the virtual time its next request starts at.
	nextR float64
}

func (q *queue) active() bool { return len(q.waiting) > 0 || q.executing > 0 }

// fairState is a level's virtual clock and what its rate is computed from.
type fairState struct {
	vt      float64   // R, seat-seconds
	lastNow time.Time // real time R was brought up to
	// active: queues with requests waiting or executing; seatsRequested:
	// the seats in use and waiting in all queues.
	active, seatsRequested int
	robin                  int // the queue last dispatched from
}

// sync brings l's virtual time, and its seat demand's integral (see
// borrowing.go), up to now: the level has been as it is since the last
// sync.
func (l *level) sync(now time.Time) {
	if l.lastNow.IsZero() || !now.After(l.lastNow) {
		if l.lastNow.IsZero() && !now.IsZero() {
			l.lastNow = now
			if !l.demand.initialized {
				l.demand.start, l.demand.initialized = now, true
			}
		}
		return
	}
	dt := now.Sub(l.lastNow).Seconds()
	if l.active > 0 {
		l.vt += float64(min(l.seatsRequested, l.current)) / float64(l.active) * dt
	}
	demand := l.demandNow()
	l.demand.add(demand, dt)
	l.demandHist.observe(demand/l.demandDenominator(), uint64(now.Sub(l.lastNow)))
	l.lastNow = now
}

// settle counts q's becoming active or idle.
func (l *level) settle(q *queue, wasActive bool) {
	switch now := q.active(); {
	case now && !wasActive:
		l.active++
	case !now && wasActive:
		l.active--
	}
}

// estimateWork sets r's seats while waiting, initial seats and estimated
// work, as kube-apiserver's queue sets: none capped by l's limit.
func (l *level) estimateWork(r *Request) {
	r.want = r.work.maxSeats()
	r.initial = max(r.work.InitialSeats, 1)
	r.estimate = float64(r.initial) * estimatedServiceDuration.Seconds()
	if r.work.lingers() {
		// Final seats beyond the limit are held longer instead (see
		// start): their seat-seconds are the same.
		r.estimate += float64(r.work.FinalSeats) * r.work.AdditionalLatency.Seconds()
	}
}

// enqueue puts r at the end of queue qi (r.arrivalR is set).
func (l *level) enqueue(qi int, r *Request) {
	q := l.queues[qi]
	was := q.active()
	if !was {
		q.nextR = l.vt
	}
	q.waiting = append(q.waiting, r)
	q.waitingSeats += r.want
	q.waitingWork += r.estimate
	l.seatsRequested += r.want
	l.waitingSeats += r.want
	l.waiting++
	r.queue, r.state = q, stateQueued
	l.settle(q, was)
	l.bound(q)
}

// passThrough makes queue qi r's, for a request that is dispatched as
// it arrives: as if it joined the (empty) line and left it at once.
func (l *level) passThrough(qi int, r *Request) {
	q := l.queues[qi]
	if !q.active() {
		q.nextR = l.vt
	}
	r.queue = q
}

// unqueue takes the i-th waiting request out of q.
func (l *level) unqueue(q *queue, i int) *Request {
	was := q.active()
	r := q.waiting[i]
	copy(q.waiting[i:], q.waiting[i+1:])
	q.waiting[len(q.waiting)-1] = nil
	q.waiting = q.waiting[:len(q.waiting)-1]
	if len(q.waiting) == 0 {
		q.waiting = nil // let the backing array go
		q.waitingWork = 0
	} else {
		q.waitingWork -= r.estimate
	}
	q.waitingSeats -= r.want
	l.seatsRequested -= r.want
	l.waitingSeats -= r.want
	l.waiting--
	l.settle(q, was)
	l.bound(q)
	return r
}

// bound keeps q's next start no earlier than its oldest request's arrival
// (kube-apiserver's anti-windup: a queue that could not use its share
// does not bank it).
func (l *level) bound(q *queue) {
	if len(q.waiting) > 0 && q.nextR < q.waiting[0].arrivalR {
		q.nextR = q.waiting[0].arrivalR
	}
}

// startInQueue counts r, just dispatched holding r.seats, as executing in
// its queue, whose next start moves on by r's estimated work.
func (l *level) startInQueue(r *Request) {
	q := r.queue
	if q == nil {
		return
	}
	was := q.active()
	q.executing++
	q.seatsInUse += r.seats
	l.seatsRequested += r.seats
	q.nextR += r.estimate
	l.settle(q, was)
}

// endInQueue counts r as no longer executing in its queue, correcting the
// queue's next start by what r's execution really took.
func (l *level) endInQueue(r *Request, now time.Time) {
	q := r.queue
	if q == nil {
		return
	}
	was := q.active()
	q.executing--
	took := now.Sub(r.started)
	q.nextR -= float64(r.initial) * (estimatedServiceDuration - took).Seconds()
	l.bound(q)
	l.settle(q, was)
}

// releaseInQueue gives back r's seats in its queue.
func (l *level) releaseInQueue(r *Request) {
	q := r.queue
	if q == nil {
		return
	}
	q.seatsInUse -= r.seats
	if !q.dropped {
		l.seatsRequested -= r.seats
	}
}

// dropSurplusQueue drops q, whose request just gave its seats back, if
// l has more queues than configured and q has no request waiting or
// executing, as kube-apiserver's queue sets shrink: the queues after it
// move up one place (the robin follows), and seats still lingering from
// it no longer count for l's virtual clock.
//
// A queue is dropped once: a request lingering from it that gives its
// seats back later drops nothing. kube-apiserver's removeQueueIfEmptyLocked
// then, while the level still has surplus queues, removes by the dropped
// queue's stale index whichever queue is there now (waiting requests and
// all), or panics past the end (the open kubernetes/kubernetes#140885
// keeps such a queue until its lingering seats are back instead).
func (l *level) dropSurplusQueue(q *queue) {
	if q == nil || q.dropped || len(l.queues) <= l.numQueues || q.active() {
		return
	}
	i := slices.Index(l.queues, q)
	l.queues = slices.Delete(l.queues, i, i+1)
	q.dropped = true
	l.seatsRequested -= q.seatsInUse
	if l.robin >= i {
		l.robin--
	}
}

// fairest is the queue whose oldest request l dispatches next: the
// smallest virtual finish time, looking from the queue after the last one
// dispatched from (ties go to the first seen). l has requests waiting.
func (l *level) fairest() int {
	n := len(l.queues)
	best, bestFinish := -1, 0.0
	for i := 1; i <= n; i++ {
		qi := (l.robin + i) % n
		q := l.queues[qi]
		if len(q.waiting) == 0 {
			continue
		}
		if finish := q.nextR + q.waiting[0].estimate; best < 0 || finish < bestFinish {
			best, bestFinish = qi, finish
		}
	}
	if best < 0 {
		panic("flowcontrol: a level with waiting requests has none queued")
	}
	return best
}

// chooseQueue deals the flow its hand of queues and picks the one whose
// waiting requests have the least estimated work, looking from a place
// in the hand that moves on with every choice (so that ties do not always
// go to the same queue), as kube-apiserver does.
func (d *Dispatcher) chooseQueue(l *level, hash uint64) int {
	d.scratch = deal(hash, l.numQueues, l.handSize, d.scratch[:0])
	hand := len(d.scratch)
	offset := l.enqueues % hand
	l.enqueues++
	best, bestWork := -1, 0.0
	for i := range hand {
		qi := d.scratch[(offset+i)%hand]
		if w := l.queues[qi].waitingWork; best < 0 || w < bestWork {
			best, bestWork = qi, w
		}
	}
	return best
}
