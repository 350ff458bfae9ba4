package flowcontrol

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// RejectReason is why a request was turned away, as the reason label of
// apiserver_flowcontrol_rejected_requests_total says it.
type RejectReason string

const (
	// ReasonQueueFull: the queue the request's flow was given is at the
	// level's queueLengthLimit.
	ReasonQueueFull RejectReason = "queue-full"
	// ReasonConcurrencyLimit: a level whose limit response is Reject has no
	// free seat.
	ReasonConcurrencyLimit RejectReason = "concurrency-limit"
	// ReasonTimeout: the request waited in its queue for the wait limit.
	ReasonTimeout RejectReason = "time-out"
	// ReasonCancelled: the client went away while the request waited.
	ReasonCancelled RejectReason = "cancelled"
)

// Outcome is what Arrive did with a request.
type Outcome int

const (
	// Executing: the request holds its seats; call Finish when it is done.
	Executing Outcome = iota
	// Queued: the request waits; a later Finish dispatches it, or Leave
	// takes it out.
	Queued
	// Rejected: the request is turned away (see the reason).
	Rejected
)

// WorkEstimate is how many seats a request needs and for how long, as
// kube-apiserver's work estimator says it. The zero value is one seat
// while the request executes, nothing after.
type WorkEstimate struct {
	// InitialSeats are the seats the request needs while it executes
	// (0 means 1).
	InitialSeats int
	// FinalSeats are the seats it goes on holding for AdditionalLatency
	// once it has finished executing (a write's watch notifications);
	// nothing is held after it unless both are positive.
	FinalSeats        int
	AdditionalLatency time.Duration
}

// maxSeats is the most seats the request ever needs: it takes them all
// when it is dispatched and holds them until it is done, lingering
// included, as kube-apiserver's queue sets do (so that its final seats
// are always there).
func (w WorkEstimate) maxSeats() int { return max(w.InitialSeats, w.FinalSeats, 1) }

// lingers: the request holds seats after it finishes executing.
func (w WorkEstimate) lingers() bool { return w.FinalSeats > 0 && w.AdditionalLatency > 0 }

type requestState int

const (
	stateNew requestState = iota
	stateQueued
	stateExecuting
	// stateLingering: finished executing, still holding its final seats
	// for its additional latency.
	stateLingering
	stateDone
)

// Request is one request in a Dispatcher.
type Request struct {
	level *level
	hash  uint64 // of its flow
	work  WorkEstimate
	// seats it holds while executing and lingering: its initial seats, or
	// its final seats if more (those capped at its level's limit when it
	// is dispatched from a queue); want is work.maxSeats(), what it asks
	// for while it waits.
	seats, want int
	// For fair queuing (see fairqueue.go): its initial seats and estimated
	// work in seat-seconds, its level's virtual time when it arrived, and
	// when it started executing.
	initial  int
	estimate float64
	arrivalR float64
	started  time.Time
	// linger is how long it holds its seats after it finishes executing:
	// its additional latency, longer when its final seats were more than
	// its level's limit (set when it is dispatched).
	linger time.Duration
	// queue is the one it waits in or came through (nil: none); it may
	// have been dropped from its level since (see dropSurplusQueue).
	queue *queue
	state requestState
	// wake is closed by the Controller when the request is dispatched
	// from its queue; the Dispatcher never touches it.
	wake chan struct{}
	// The Controller's: the request's metrics once it executes, and
	// whether its seat was given back.
	metrics  *flowMetrics
	released atomic.Bool
}

// level is one priority level's state.
type level struct {
	name   string
	exempt bool
	// reject: over the limit a request is turned away (limit response
	// Reject) instead of queued.
	reject bool
	// shares and lendablePercent are the configuration nominal and
	// lendable are computed from; borrowingLimitPercent (-1: none) caps
	// what the level may use beyond its nominal seats.
	shares, lendablePercent int32
	borrowingLimitPercent   int32
	// quiescing: the level is no longer configured; it admits nothing new
	// and is removed once its queued and executing requests are gone.
	quiescing bool
	// gone: removed from the Dispatcher (it was idle).
	gone bool
	// nominal is the level's nominal concurrency limit in seats; it may
	// lend lendable of them to other levels and borrow borrowable more
	// (see borrowing.go); current is what it may use now.
	nominal, lendable, borrowable int
	current                       int
	fresh                         bool // current not set yet
	handSize, queueLengthLimit    int
	// queues: numQueues are configured (0: the level does not queue);
	// there are more while surplus ones wait to go empty (see
	// dropSurplusQueue).
	queues       []*queue
	numQueues    int
	inUse        int // seats of executing and lingering requests
	executing    int // requests executing (lingering ones not counted)
	waiting      int // requests in the queues
	waitingSeats int // the seats they will take
	enqueues     int // queue choices made (see chooseQueue)
	fairState
	// Seat demand: integrated since the last adjustment, and its
	// statistics and the target they gave.
	demand     demandIntegrator
	demandHist demandHistogram
	// serverSeats is the server's total (see demandDenominator).
	serverSeats int
	stats       DemandStats
	target      float64
	drops       dropHistory
}

// idle: nothing queued or executing.
func (l *level) idle() bool { return l.inUse == 0 && l.waiting == 0 }

// Dispatcher is the pure core of API Priority and Fairness: priority
// levels with their seats and queues. It has no clock, no goroutines and no
// locks; the Controller serialises calls to it.
//
// Seats: each Limited level dispatches while its seats in use stay
// within its current limit, which AdjustBorrowing re-divides among the
// levels by their demand (borrowing.go); a request wider than the limit
// starts alone, once none of its level's requests executes (see
// canDispatch), as kube-apiserver's queue sets do.
type Dispatcher struct {
	total   int      // seats of the server
	levels  []*level // configured ones in configuration order, then quiescing ones
	byName  map[string]*level
	scratch []int
	// nominalSum is the sum of the levels' nominal limits, what
	// AdjustBorrowing shares out; fairFrac the proportion it used.
	nominalSum int
	fairFrac   float64
	// adjustments counts the re-divisions of the current limits (adjust),
	// for the Controller to see when its seat gauges are stale.
	adjustments uint64
	// quiescing counts the levels waiting to be removed once idle.
	quiescing int
}

// LevelLimits are a level's seats: its nominal limit and lendable seats as
// the shares give them, its lower and upper limits, its current limit and
// the target and demand statistics of the last adjustment.
type LevelLimits struct {
	Name                  string
	Nominal, Lendable     int
	Lower, Upper, Current int
	Target                float64
	Demand                DemandStats
}

// NewDispatcher builds the levels of plcs for a server with total seats
// (--max-requests-inflight + --max-mutating-requests-inflight). A level's
// nominal limit is ceil(total * shares / sum of all levels' shares), its
// lendable seats round(nominal * lendablePercent / 100), as
// kube-apiserver computes them.
func NewDispatcher(plcs []*flowcontrolv1.PriorityLevelConfiguration, total int) (*Dispatcher, error) {
	if total <= 0 {
		return nil, fmt.Errorf("flowcontrol: total concurrency %d is not positive", total)
	}
	d := &Dispatcher{total: total, byName: map[string]*level{}}
	if _, err := d.Reconfigure(plcs, time.Time{}); err != nil {
		return nil, err
	}
	return d, nil
}

// levelSpec is what a PriorityLevelConfiguration says of its level.
type levelSpec struct {
	name                      string
	exempt, reject            bool
	shares, lendablePercent   int32
	borrowingLimitPercent     int32 // -1: none
	queues, handSize, qlLimit int
}

// CheckLevel reports why the Dispatcher cannot use a priority level, or
// nil. Objects that passed the API's validation always can.
func CheckLevel(p *flowcontrolv1.PriorityLevelConfiguration) error {
	_, err := parseLevel(p)
	return err
}

func parseLevel(p *flowcontrolv1.PriorityLevelConfiguration) (levelSpec, error) {
	ls := levelSpec{name: p.Name, shares: shares(p), borrowingLimitPercent: -1}
	if ls.shares < 0 {
		return ls, fmt.Errorf("flowcontrol: priority level %q has negative shares", p.Name)
	}
	switch p.Spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		ls.exempt = true
		if e := p.Spec.Exempt; e != nil && e.LendablePercent != nil {
			ls.lendablePercent = *e.LendablePercent
			if ls.lendablePercent < 0 || ls.lendablePercent > 100 {
				return ls, fmt.Errorf("flowcontrol: priority level %q lends %d%%", p.Name, ls.lendablePercent)
			}
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		lim := p.Spec.Limited
		if lim == nil {
			return ls, fmt.Errorf("flowcontrol: priority level %q is Limited without limits", p.Name)
		}
		if lim.LendablePercent != nil {
			ls.lendablePercent = *lim.LendablePercent
			if ls.lendablePercent < 0 || ls.lendablePercent > 100 {
				return ls, fmt.Errorf("flowcontrol: priority level %q lends %d%%", p.Name, ls.lendablePercent)
			}
		}
		if lim.BorrowingLimitPercent != nil {
			ls.borrowingLimitPercent = *lim.BorrowingLimitPercent
			if ls.borrowingLimitPercent < 0 {
				return ls, fmt.Errorf("flowcontrol: priority level %q has a negative borrowing limit", p.Name)
			}
		}
		switch lim.LimitResponse.Type {
		case flowcontrolv1.LimitResponseTypeReject:
			ls.reject = true
		case flowcontrolv1.LimitResponseTypeQueue:
			q := lim.LimitResponse.Queuing
			if q == nil || q.Queues <= 0 || q.HandSize <= 0 || q.HandSize > q.Queues || q.QueueLengthLimit <= 0 {
				return ls, fmt.Errorf("flowcontrol: priority level %q has an invalid queuing configuration", p.Name)
			}
			ls.queues, ls.handSize, ls.qlLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
		default:
			return ls, fmt.Errorf("flowcontrol: priority level %q has limit response %q", p.Name, lim.LimitResponse.Type)
		}
	default:
		return ls, fmt.Errorf("flowcontrol: priority level %q has type %q", p.Name, p.Spec.Type)
	}
	return ls, nil
}

func shares(p *flowcontrolv1.PriorityLevelConfiguration) int32 {
	switch {
	case p.Spec.Limited != nil && p.Spec.Limited.NominalConcurrencyShares != nil:
		return *p.Spec.Limited.NominalConcurrencyShares
	case p.Spec.Limited != nil:
		return 30 // the API's default
	case p.Spec.Exempt != nil && p.Spec.Exempt.NominalConcurrencyShares != nil:
		return *p.Spec.Exempt.NominalConcurrencyShares
	}
	return 0
}

// Reconfigure makes plcs the Dispatcher's levels and returns the queued
// requests the new seats let start. A level that keeps its name keeps its
// executing and queued requests: they count against, and are dispatched
// under, its new limits (given more queues, it adds them; given fewer,
// it deals new requests into the first ones and drops the others as they
// go empty; a level that now rejects still dispatches what it had
// queued). A level no longer configured
// admits nothing new but goes on dispatching and counting its requests,
// with the shares it had, until it is idle; then it is removed. Either
// every level is applied or, on error, none.
func (d *Dispatcher) Reconfigure(plcs []*flowcontrolv1.PriorityLevelConfiguration, now time.Time) ([]*Request, error) {
	specs := make([]levelSpec, 0, len(plcs))
	named := map[string]bool{}
	sum := 0
	for _, p := range plcs {
		ls, err := parseLevel(p)
		if err != nil {
			return nil, err
		}
		if named[ls.name] {
			return nil, fmt.Errorf("flowcontrol: priority level %q given twice", ls.name)
		}
		named[ls.name] = true
		sum += int(ls.shares)
		specs = append(specs, ls)
	}
	if sum <= 0 {
		return nil, fmt.Errorf("flowcontrol: the priority levels have no concurrency shares")
	}
	d.sync(now)
	old := map[string]*level{}
	for _, l := range d.levels {
		old[l.name] = l
	}
	levels := make([]*level, 0, len(specs))
	d.byName = make(map[string]*level, len(specs))
	for _, ls := range specs {
		l := old[ls.name]
		if l == nil {
			l = &level{name: ls.name, fresh: true}
		}
		d.apply(l, ls)
		levels = append(levels, l)
		d.byName[ls.name] = l
	}
	d.quiescing = 0
	for _, l := range d.levels {
		if named[l.name] {
			continue
		}
		if l.idle() {
			l.gone = true
			continue
		}
		l.quiescing = true
		d.quiescing++
		levels = append(levels, l)
	}
	d.levels = levels
	d.recompute()
	d.adjust(now) // as kube-apiserver, on every configuration
	return d.dispatch(now), nil
}

// sync brings every level's virtual time up to now.
func (d *Dispatcher) sync(now time.Time) {
	for _, l := range d.levels {
		l.sync(now)
	}
}

// apply gives l the configuration ls, keeping its requests.
func (d *Dispatcher) apply(l *level, ls levelSpec) {
	l.exempt, l.reject, l.quiescing = ls.exempt, ls.reject, false
	l.shares, l.lendablePercent, l.borrowingLimitPercent = ls.shares, ls.lendablePercent, ls.borrowingLimitPercent
	// As kube-apiserver's queue sets: more queues are added at once, the
	// requests staying in theirs; surplus ones go as they go empty
	// (dropSurplusQueue); without queuing, what is queued drains from
	// the queues it is in.
	l.numQueues = ls.queues
	if ls.queues == 0 {
		return
	}
	l.handSize, l.queueLengthLimit = ls.handSize, ls.qlLimit
	for len(l.queues) < ls.queues {
		l.queues = append(l.queues, &queue{})
	}
}

// recompute derives every level's nominal limit, lendable and borrowable
// seats from the shares, as kube-apiserver: a level without a borrowing
// limit may borrow up to the server's total. A new level starts at
// nominal less half its lendable seats.
func (d *Dispatcher) recompute() {
	sum := 0
	for _, l := range d.levels {
		sum += int(l.shares)
	}
	d.nominalSum = 0
	for _, l := range d.levels {
		l.serverSeats = d.total
		l.nominal = 0
		if sum > 0 {
			l.nominal = int(math.Ceil(float64(d.total) * float64(l.shares) / float64(sum)))
		}
		l.lendable = int(math.Round(float64(l.nominal) * float64(l.lendablePercent) / 100))
		l.borrowable = d.total
		if l.borrowingLimitPercent >= 0 {
			l.borrowable = int(math.Round(float64(l.nominal) * float64(l.borrowingLimitPercent) / 100))
		}
		if l.fresh {
			l.current, l.fresh = l.nominal-l.lendable/2, false
		}
		d.nominalSum += l.nominal
	}
}

// reap removes the quiescing levels that are idle, giving their seats to
// the others. Every call that can leave a quiescing level idle ends here,
// so none is idle between calls, and the dispatch that ends
// AdjustBorrowing reaps nothing (one adjustment per instant).
// It reports whether it removed any (the limits were re-divided then).
func (d *Dispatcher) reap(now time.Time) bool {
	if d.quiescing == 0 {
		return false
	}
	kept := d.levels[:0]
	for _, l := range d.levels {
		if l.quiescing && l.idle() {
			l.gone = true
			d.quiescing--
			continue
		}
		kept = append(kept, l)
	}
	clear(d.levels[len(kept):])
	if len(kept) < len(d.levels) {
		d.levels = kept
		d.sync(now)
		d.recompute()
		// As kube-apiserver: reaping an idle removed level triggers a
		// configuration reload, which re-divides the seats and ends every
		// level's demand period then (not only the 10 s adjustment does).
		d.adjust(now)
		return true
	}
	return false
}

// Limits lists every level's seats, in configuration order.
func (d *Dispatcher) Limits() []LevelLimits {
	out := make([]LevelLimits, 0, len(d.levels))
	for _, l := range d.levels {
		out = append(out, LevelLimits{Name: l.name, Nominal: l.nominal, Lendable: l.lendable,
			Lower: l.lowerLimit(), Upper: l.upperLimit(), Current: l.current, Target: l.target, Demand: l.stats})
	}
	return out
}

// FairFrac is the proportion of their targets the last adjustment gave
// the levels (apiserver_flowcontrol_seat_fair_frac).
func (d *Dispatcher) FairFrac() float64 { return d.fairFrac }

// NewRequest makes a request for the flow hashed hash at the named level,
// needing the seats work says.
func (d *Dispatcher) NewRequest(levelName string, hash uint64, work WorkEstimate) (*Request, error) {
	l, ok := d.byName[levelName]
	if !ok {
		return nil, fmt.Errorf("flowcontrol: no priority level %q", levelName)
	}
	return &Request{level: l, hash: hash, work: work}, nil
}

// Seats are the seats r holds while it executes and lingers (0 before it
// is dispatched).
func (r *Request) Seats() int { return r.seats }

// AdditionalLatency is how long r goes on holding its seats after it has
// finished executing: when Finish leaves it lingering (see FinishLinger).
// Final seats beyond the level's limit when r was dispatched are held
// proportionally longer, keeping their seat-seconds, as kube-apiserver's
// queue sets do.
func (r *Request) AdditionalLatency() time.Duration {
	if r.state != stateLingering {
		return 0
	}
	return r.linger
}

// admits reports whether a request may be made at l: it is configured
// (neither quiescing nor gone).
func (l *level) admits() bool { return !l.quiescing && !l.gone }

// newRequestAt is NewRequest at a level already looked up, when it still
// admits requests.
func (d *Dispatcher) newRequestAt(l *level, hash uint64, work WorkEstimate) (*Request, bool) {
	if l == nil || !l.admits() {
		return nil, false
	}
	return &Request{level: l, hash: hash, work: work}, true
}

// Arrive admits r at now, as kube-apiserver's queue sets: at an exempt
// level it executes at once; at a level that does not queue it executes
// if it may start (see canDispatch), else it is rejected; at a level that
// queues it is rejected when the one of its flow's queues with the least
// work waiting is full and the level's seats are all taken (with seats
// free a full queue still takes it), else it joins that queue and the
// level dispatches what may start, fairest first: r executes if it was
// among them, else it waits. Arrive returns, besides, the other queued
// requests that dispatch started (held back by a request that left its
// queue since, see Leave). A request of a level that queues goes through
// its queue even when it executes at once, so that its work counts for
// its queue's fair share.
func (d *Dispatcher) Arrive(r *Request, now time.Time) (Outcome, RejectReason, []*Request) {
	if r.state != stateNew {
		panic("flowcontrol: a request arrived twice")
	}
	l := r.level
	l.sync(now)
	if l.exempt {
		// Never held, but its seats are the level's demand, which
		// borrowing counts as kube-apiserver does (its final seats for
		// their additional latency too, see Finish).
		d.start(r, now, false)
		return Executing, "", nil
	}
	l.estimateWork(r)
	r.arrivalR = l.vt
	if l.reject || l.numQueues == 0 {
		if d.canDispatch(l, r.want, false) {
			d.start(r, now, false)
			return Executing, "", nil
		}
		r.state = stateDone
		return Rejected, ReasonConcurrencyLimit, nil
	}
	qi := d.chooseQueue(l, r.hash)
	if l.waiting == 0 && d.canDispatch(l, r.want, true) {
		// The only request waiting, and it may start: the dispatch
		// would take it at once.
		l.passThrough(qi, r)
		l.robin = qi
		d.start(r, now, true)
		return Executing, "", nil
	}
	if len(l.queues[qi].waiting) >= l.queueLengthLimit && l.inUse >= l.current {
		r.state = stateDone
		return Rejected, ReasonQueueFull, nil
	}
	l.enqueue(qi, r)
	woken := d.dispatchLevel(l, now, nil, r)
	if r.state == stateExecuting {
		return Executing, "", woken
	}
	return Queued, "", woken
}

// Finish ends the execution of r at now. A request whose work has final
// seats and additional latency then lingers: it keeps its seats, and
// r.AdditionalLatency() says how long until the caller is to call
// FinishLinger (the Dispatcher has no clock). Any other request gives its
// seats back. Either way Finish dispatches what can start (as
// kube-apiserver, after every finish), returning the requests dispatched
// (in order). Finishing a request that is not executing does nothing.
func (d *Dispatcher) Finish(r *Request, now time.Time) []*Request {
	if r.state != stateExecuting {
		return nil
	}
	l := r.level
	l.executing--
	l.sync(now)
	l.endInQueue(r, now)
	// Every level's requests linger, the exempt one's too (kube-apiserver
	// runs its exempt requests through a queue set as well): their final
	// seats count for their level's demand.
	if r.work.lingers() {
		// It keeps its seats, but its queue's charge was corrected: a
		// request of another queue may be the next pick now, and fit.
		r.state = stateLingering
		return d.dispatchAt(l, now)
	}
	return d.release(r, now)
}

// FinishLinger gives back, at now, the seats r held after it finished
// executing and dispatches what they let start, returning the requests
// dispatched. It does nothing unless Finish left r lingering.
func (d *Dispatcher) FinishLinger(r *Request, now time.Time) []*Request {
	if r.state != stateLingering {
		return nil
	}
	r.level.sync(now)
	return d.release(r, now)
}

// release gives back r's seats; its level is synced to now.
func (d *Dispatcher) release(r *Request, now time.Time) []*Request {
	r.state = stateDone
	l := r.level
	l.inUse -= r.seats
	l.releaseInQueue(r)
	l.dropSurplusQueue(r.queue)
	return d.dispatchAt(l, now)
}

// Leave takes a queued request out of its queue at now (it timed out, or
// its client went away) and reports whether it was still queued; false
// means it was dispatched already (and must be finished) or is done.
// Leaving dispatches nothing, as kube-apiserver's queue sets: a wide
// request that held back narrower ones lets them start at its level's
// next arrival or finish (or the next adjustment). Only when it leaves a
// removed level idle, the level goes and the seats are re-divided
// (kube-apiserver reloads its configuration then): Leave returns the
// requests that lets start.
func (d *Dispatcher) Leave(r *Request, now time.Time) (bool, []*Request) {
	if r.state != stateQueued {
		return false, nil
	}
	l := r.level
	l.sync(now)
	l.unqueue(r.queue, slices.Index(r.queue.waiting, r))
	r.state = stateDone
	if d.reap(now) {
		return true, d.dispatchLevels(now, nil)
	}
	return true, nil
}

// canDispatch reports whether a request asking for seats may start at l
// now, as kube-apiserver's queue sets decide it: an exempt level always
// lets it; from the queues (fromQueues; the arrival of a request at a
// level that queues too) nothing starts while the seats in use reach the
// limit; a request wider than the limit starts once none of l's
// requests executes (lingering ones not counted) and holds all its
// seats; any other once its seats fit in the limit.
func (d *Dispatcher) canDispatch(l *level, seats int, fromQueues bool) bool {
	switch {
	case l.exempt:
		return true
	case fromQueues && l.inUse >= l.current:
		return false // a current limit of 0 starts nothing from the queues
	case seats > l.current:
		return l.executing == 0
	}
	return l.inUse+seats <= l.current
}

// start makes r executing at now; queued: it came through one of l's
// queues (at a level that queues).
func (d *Dispatcher) start(r *Request, now time.Time, queued bool) {
	l := r.level
	r.seats, r.linger = max(r.work.InitialSeats, 1), r.work.AdditionalLatency
	final := r.work.FinalSeats
	if limit := l.current; queued && final > limit && limit > 0 {
		// As kube-apiserver's queue sets: final seats beyond the limit
		// are capped at it and held proportionally longer (a level that
		// does not queue holds them all; from the queues nothing starts
		// at a limit of 0).
		r.linger = time.Duration(float64(r.linger) * float64(final) / float64(limit))
		final = limit
	}
	r.seats = max(r.seats, final)
	l.inUse += r.seats
	l.executing++
	r.started = now
	l.startInQueue(r)
	r.state = stateExecuting
}

// dispatch reaps the removed levels that are idle, then starts, at now,
// the queued requests every level's limits let start (dispatchLevel).
func (d *Dispatcher) dispatch(now time.Time) []*Request {
	d.reap(now)
	return d.dispatchLevels(now, nil)
}

// dispatchAt is dispatch after a change at l alone (an arrival, finish or
// linger end), as kube-apiserver's queue sets each dispatch their own:
// only l's requests start, unless a removed level went and the seats
// were re-divided.
func (d *Dispatcher) dispatchAt(l *level, now time.Time) []*Request {
	if d.reap(now) {
		return d.dispatchLevels(now, nil)
	}
	return d.dispatchLevel(l, now, nil, nil)
}

// dispatchLevels is dispatchLevel of every level.
func (d *Dispatcher) dispatchLevels(now time.Time, out []*Request) []*Request {
	for _, l := range d.levels {
		out = d.dispatchLevel(l, now, out, nil)
	}
	return out
}

// dispatchLevel starts, at now, the queued requests l's limits let start,
// appending them to out (but for self, the arriving request, if it
// starts): while the request it would dispatch next (the fairest, see
// fairqueue.go) may start (canDispatch); a wide one waits, and the
// level's other requests wait behind it, so that it is not starved by
// narrow ones. (Only a level with requests waiting changes; it is
// synced to now first.)
func (d *Dispatcher) dispatchLevel(l *level, now time.Time, out []*Request, self *Request) []*Request {
	if l.waiting == 0 {
		return out
	}
	l.sync(now)
	for l.waiting > 0 {
		qi := l.fairest()
		if !d.canDispatch(l, l.queues[qi].waiting[0].want, true) {
			break
		}
		r := l.unqueue(l.queues[qi], 0)
		l.robin = qi
		d.start(r, now, true)
		if r != self {
			out = append(out, r)
		}
	}
	return out
}

// LevelState is a snapshot of one level, for tests and debugging.
type LevelState struct {
	InUse, Waiting int
}

// State returns the named level's seats in use and requests waiting.
func (d *Dispatcher) State(levelName string) LevelState {
	l := d.byName[levelName]
	if l == nil {
		return LevelState{}
	}
	return LevelState{InUse: l.inUse, Waiting: l.waiting}
}
