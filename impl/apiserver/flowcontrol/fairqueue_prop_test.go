package flowcontrol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"pgregory.net/rapid"
)

// Randomized properties of the Dispatcher (the pure core: no clock, no
// goroutine), driven by a model of what every request should be doing.
// A rapid seed replays a run exactly.

// propState is where the model says a request is.
type propState int

const (
	propQueued propState = iota
	propExecuting
	propLingering
	propEnded // rejected, left its queue, or done
)

// propReq is the model's view of one request.
type propReq struct {
	r        *Request
	level    string
	flow     int
	state    propState
	arrived  time.Time
	seq      int // arrival order
	queue    int // the queue it waits in, while queued
	ends     int // how many times it ended (must end exactly once)
	dispatch int // how many times it was started
}

// propRun is one random run: the Dispatcher under test and the model.
type propRun struct {
	rt      *rapid.T
	d       *Dispatcher
	now     time.Time
	reqs    []*propReq
	by      map[*Request]*propReq
	started map[*level][]*propReq // started during the current step, in order
	// flex: the arriving request started among others its arrival
	// dispatched, at a place in started the Dispatcher does not say.
	flex map[*level]*propReq
	// stale: a request left the level's queues since its last dispatch,
	// which may have let the next one start (kube-apiserver's queue sets,
	// like the Dispatcher, start it at the level's next arrival or finish).
	stale  map[*level]bool
	lastVT map[*level]float64
}

// waitLimitProp is how long a queued request waits before the run takes
// it out as timed out (the Controller's wait limit).
const waitLimitProp = 15 * time.Second

// TestDispatcherModelProperties drives a Dispatcher of two queuing
// levels with random shapes, a Reject level and an exempt one through
// random arrivals (flows, widths, final seats), finishes, linger ends,
// cancellations, time-outs after the wait limit, borrowing adjustments
// and clock steps, and checks after every step:
//   - every request ends exactly once, and none is started twice, started
//     after it was rejected or left, or started without being queued;
//   - a queued request sits in one of its flow's dealt queues (shuffle
//     sharding), one with the least waiting work of the hand;
//   - requests leave a queue in the order they joined it (FIFO);
//   - each start is one kube-apiserver's queue sets allow (modelFits): it
//     fits in the level's current limit, or it is wider than the limit
//     and none of the level's requests executed; from the queues, only
//     while the seats in use are under the limit; it holds its initial
//     seats or its final ones if more, final seats capped at the limit
//     when it came through a queue (modelSeats);
//   - work conservation: the request fair queuing picks next at a level
//     with requests waiting could not start (unless a request left the
//     level's queues since its last arrival, finish or adjustment:
//     leaving dispatches nothing);
//   - the virtual clock never goes back and no queue's next start is
//     earlier than the arrival of its oldest waiting request;
//   - rejections: queue-full only when the hand holds a queue at its
//     length limit and the seats are taken; concurrency-limit only when
//     the request does not fit;
//   - borrowing: every current limit within [nominal-lendable,
//     nominal+borrowable] (and, after an adjustment, at least
//     min(nominal, demand high watermark)); their sum is the nominal
//     limits' sum within rounding, and that is the server's total
//     within the ceilings;
//   - the books: seats in use and requests waiting match the model.
//
// At the end every executing and lingering request is finished: nothing
// may stay queued with every seat free, and every level is idle.
func TestDispatcherModelProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		total := rapid.IntRange(1, 12).Draw(rt, "total")
		queuingLevel := func(name string) *flowcontrolv1.PriorityLevelConfiguration {
			queues := rapid.IntRange(1, 8).Draw(rt, name+"-queues")
			hand := rapid.IntRange(1, min(queues, 4)).Draw(rt, name+"-hand")
			qll := rapid.IntRange(1, 5).Draw(rt, name+"-qll")
			pl := limitedLevel(name, int32(rapid.IntRange(1, 5).Draw(rt, name+"-shares")),
				int32(rapid.IntRange(0, 100).Draw(rt, name+"-lend")), queuing(int32(queues), int32(hand), int32(qll)))
			if rapid.Bool().Draw(rt, name+"-borrow-limited") {
				pl.Spec.Limited.BorrowingLimitPercent = ptr(int32(rapid.IntRange(0, 200).Draw(rt, name+"-borrow")))
			}
			return pl
		}
		exempt := priorityLevel("x", flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr(int32(rapid.IntRange(0, 2).Draw(rt, "x-shares"))),
				LendablePercent:          ptr(int32(rapid.IntRange(0, 100).Draw(rt, "x-lend"))),
			},
		})
		plcs := []*flowcontrolv1.PriorityLevelConfiguration{
			queuingLevel("a"), queuingLevel("b"),
			limitedLevel("r", int32(rapid.IntRange(1, 3).Draw(rt, "r-shares")), int32(rapid.IntRange(0, 100).Draw(rt, "r-lend")), nil),
			exempt,
		}
		d, err := NewDispatcher(plcs, total)
		if err != nil {
			rt.Fatal(err)
		}
		p := &propRun{rt: rt, d: d, now: t0, by: map[*Request]*propReq{}, started: map[*level][]*propReq{}, lastVT: map[*level]float64{},
			flex: map[*level]*propReq{}, stale: map[*level]bool{}}
		p.checkBorrowing(false)

		steps := rapid.IntRange(1, 300).Draw(rt, "steps")
		for range steps {
			p.now = p.now.Add(time.Duration(rapid.IntRange(0, 1500).Draw(rt, "ms")) * time.Millisecond)
			adjusted := false
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op <= 3:
				p.arrive()
			case op <= 5:
				if r := p.pick(propExecuting, "finish"); r != nil {
					p.finish(r)
				}
			case op == 6:
				if r := p.pick(propLingering, "linger"); r != nil {
					delete(p.stale, r.r.level)
					p.collect(d.FinishLinger(r.r, p.now))
					p.end(r)
				}
			case op == 7:
				if r := p.pick(propQueued, "cancel"); r != nil {
					p.leave(r)
				}
			case op == 8:
				p.collect(d.AdjustBorrowing(p.now))
				clear(p.stale)
				adjusted = true
			case op == 9:
				p.now = p.now.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "s")) * time.Second)
			}
			// The Controller's wait limit: a request queued that long
			// leaves with time-out.
			for _, r := range p.reqs {
				if r.state == propQueued && p.now.Sub(r.arrived) >= waitLimitProp {
					p.leave(r)
				}
			}
			p.check()
			p.checkBorrowing(adjusted)
		}

		// Drain: finish everything executing and lingering. A level that
		// lent all its seats (current limit 0) starts nothing from its
		// queues until an adjustment gives it some for its demand: one
		// adjustment when only waiting requests are left.
		adjustedAtEnd := false
		for {
			r := p.first(propLingering)
			if r == nil {
				r = p.first(propExecuting)
			}
			if r == nil && !adjustedAtEnd && p.first(propQueued) != nil {
				p.now = p.now.Add(BorrowingAdjustmentPeriod)
				p.collect(d.AdjustBorrowing(p.now))
				clear(p.stale)
				p.check()
				adjustedAtEnd = true
				continue
			}
			if r == nil {
				break
			}
			p.now = p.now.Add(100 * time.Millisecond)
			if r.state == propLingering {
				delete(p.stale, r.r.level)
				p.collect(d.FinishLinger(r.r, p.now))
				p.end(r)
			} else {
				p.finish(r)
			}
			p.check()
		}
		for _, r := range p.reqs {
			if r.state == propQueued {
				rt.Fatalf("request %d of level %s still queued with every seat free", r.seq, r.level)
			}
			if r.ends != 1 {
				rt.Fatalf("request %d ended %d times", r.seq, r.ends)
			}
		}
		for _, l := range d.levels {
			if l.inUse != 0 || l.waiting != 0 || l.active != 0 || l.seatsRequested != 0 {
				rt.Fatalf("level %s after the drain: %d seats in use, %d waiting, %d active queues, %d seats requested",
					l.name, l.inUse, l.waiting, l.active, l.seatsRequested)
			}
		}
	})
}

// arrive makes a random request arrive and checks its outcome.
func (p *propRun) arrive() {
	rt, d := p.rt, p.d
	work := WorkEstimate{InitialSeats: rapid.IntRange(0, 6).Draw(rt, "initial")}
	if rapid.Bool().Draw(rt, "final") {
		work.FinalSeats = rapid.IntRange(0, 6).Draw(rt, "finalSeats")
		work.AdditionalLatency = time.Duration(rapid.IntRange(0, 2000).Draw(rt, "latencyMs")) * time.Millisecond
	}
	name := rapid.SampledFrom([]string{"a", "b", "r", "x"}).Draw(rt, "level")
	flow := rapid.IntRange(0, 7).Draw(rt, "flow")
	hash := flowHash("fs", fmt.Sprint(flow))
	r, err := d.NewRequest(name, hash, work)
	if err != nil {
		rt.Fatal(err)
	}
	l := r.level
	// What shuffle sharding must choose from, before the arrival.
	var hand []int
	leastWork := math.Inf(1)
	workBefore := map[int]float64{} // of the hand's queues
	fullInHand := false
	if l.numQueues > 0 {
		hand = deal(hash, l.numQueues, l.handSize, nil)
		for _, qi := range hand {
			workBefore[qi] = l.queues[qi].waitingWork
			leastWork = min(leastWork, l.queues[qi].waitingWork)
			fullInHand = fullInHand || len(l.queues[qi].waiting) >= l.queueLengthLimit
		}
	}
	inUse, waiting, width := l.inUse, l.waiting, work.maxSeats()
	executing := p.executing(l)
	fits := modelFits(l, inUse, executing, width, false)
	fitsQueued := modelFits(l, inUse, executing, width, true)

	pr := &propReq{r: r, level: name, flow: flow, arrived: p.now, seq: len(p.reqs), queue: -1}
	p.reqs = append(p.reqs, pr)
	p.by[r] = pr
	o, reason, woken := d.Arrive(r, p.now)
	delete(p.stale, l)
	switch o {
	case Executing:
		// (With others waiting it may start if fair queuing picks it
		// first: check() sees that it fitted.)
		pr.state = propExecuting
		pr.dispatch++
		p.started[l] = append(p.started[l], pr)
		if len(woken) > 0 {
			p.flex[l] = pr
		}
	case Queued:
		if l.exempt || l.reject {
			rt.Fatalf("level %s queued a request", name)
		}
		qi := queueIndex(l, r)
		if !slices.Contains(hand, qi) {
			rt.Fatalf("level %s: flow %d queued on queue %d, outside its hand %v", name, flow, qi, hand)
		}
		if w := workBefore[qi]; math.Abs(w-leastWork) > 1e-9 {
			rt.Fatalf("level %s: flow %d joined queue %d with %.3f work waiting; its hand %v had one with %.3f", name, flow, qi, w, hand, leastWork)
		}
		if waiting == 0 && fitsQueued {
			rt.Fatalf("level %s: a request that fits (%d of %d seats in use, width %d) was queued with nothing waiting", name, inUse, l.current, width)
		}
		pr.state, pr.queue = propQueued, qi
	case Rejected:
		switch {
		case l.exempt:
			rt.Fatalf("exempt level rejected a request (%s)", reason)
		case l.reject:
			if reason != ReasonConcurrencyLimit || fits {
				rt.Fatalf("level %s rejected %q a request that fits: %d of %d seats in use, width %d", name, reason, inUse, l.current, width)
			}
		default:
			if reason != ReasonQueueFull || !fullInHand {
				rt.Fatalf("level %s rejected %q with no queue of the hand %v full", name, reason, hand)
			}
			if inUse < l.current {
				rt.Fatalf("level %s rejected a request as queue-full with %d of its %d seats in use", name, inUse, l.current)
			}
		}
		p.end(pr)
	}
	p.collect(woken)
}

// modelFits: may a request asking for want seats start at l, with inUse
// seats held and executing requests (lingering ones not counted), as
// kube-apiserver's queue sets decide it: from the queues only while the
// seats in use are under the limit; one wider than the limit only when
// none of the level's requests executes; any other when it fits. (A
// limit of 0 starts nothing from the queues, and at a level without
// queues one request at a time.)
func modelFits(l *level, inUse, executing, want int, fromQueues bool) bool {
	limit := l.current
	switch {
	case fromQueues && inUse >= limit:
		return false
	case want > limit:
		return executing == 0
	}
	return inUse+want <= limit
}

// modelSeats are the seats a request holds once started at l: its initial
// seats (at least one) or its final ones if more, final seats capped at
// the limit when it came through a queue.
func modelSeats(l *level, w WorkEstimate, queued bool) int {
	final := w.FinalSeats
	if queued {
		final = min(final, l.current)
	}
	return max(w.InitialSeats, 1, final)
}

// executing counts the model's requests executing at l.
func (p *propRun) executing(l *level) int {
	n := 0
	for _, r := range p.reqs {
		if r.state == propExecuting && r.r.level == l {
			n++
		}
	}
	return n
}

// finish ends r's execution at p.now.
func (p *propRun) finish(r *propReq) {
	delete(p.stale, r.r.level)
	p.collect(p.d.Finish(r.r, p.now))
	if r.r.AdditionalLatency() > 0 {
		r.state = propLingering
		return
	}
	p.end(r)
}

// leave takes a queued request out of its queue.
func (p *propRun) leave(r *propReq) {
	left, woken := p.d.Leave(r.r, p.now)
	if !left {
		p.rt.Fatalf("request %d of level %s, queued, could not leave", r.seq, r.level)
	}
	p.stale[r.r.level] = true
	p.end(r)
	p.collect(woken)
}

func (p *propRun) end(r *propReq) {
	r.ends++
	if r.ends > 1 {
		p.rt.Fatalf("request %d of level %s ended twice", r.seq, r.level)
	}
	r.state = propEnded
}

// collect takes the requests a call started: each must have been queued,
// and the oldest still queued in its queue.
func (p *propRun) collect(woken []*Request) {
	for _, w := range woken {
		r := p.by[w]
		if r == nil || r.state != propQueued {
			p.rt.Fatalf("started a request that was not queued (model state %v)", r.state)
		}
		for _, o := range p.reqs {
			if o.state == propQueued && o.level == r.level && o.queue == r.queue && o.seq < r.seq {
				p.rt.Fatalf("level %s queue %d: request %d started before %d, which joined earlier", r.level, r.queue, r.seq, o.seq)
			}
		}
		r.state = propExecuting
		r.dispatch++
		if r.dispatch > 1 {
			p.rt.Fatalf("request %d started twice", r.seq)
		}
		p.started[w.level] = append(p.started[w.level], r)
	}
}

// pick draws one request in state s, or nil when there is none.
func (p *propRun) pick(s propState, label string) *propReq {
	var in []*propReq
	for _, r := range p.reqs {
		if r.state == s {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return nil
	}
	return in[rapid.IntRange(0, len(in)-1).Draw(p.rt, label)]
}

func (p *propRun) first(s propState) *propReq {
	for _, r := range p.reqs {
		if r.state == s {
			return r
		}
	}
	return nil
}

// check verifies the invariants of every level after a step.
func (p *propRun) check() {
	rt := p.rt
	held, waiting := map[*level]int{}, map[*level]int{}
	for _, r := range p.reqs {
		switch r.state {
		case propExecuting, propLingering:
			held[r.r.level] += r.r.seats
		case propQueued:
			waiting[r.r.level]++
		}
	}
	for _, l := range p.d.levels {
		if l.inUse != held[l] || l.waiting != waiting[l] {
			rt.Fatalf("level %s: %d seats in use and %d waiting; the model says %d and %d", l.name, l.inUse, l.waiting, held[l], waiting[l])
		}
		if l.exempt {
			continue
		}
		// Every start of the step, in order, fitted in the current
		// limit or found nothing of the level holding a seat. The
		// step's releases all came before its starts.
		starts := p.started[l]
		inUse, executing := l.inUse, p.executing(l)
		for _, r := range starts {
			inUse -= r.r.seats
			executing--
		}
		queues := l.numQueues > 0 && !l.reject
		for _, r := range starts {
			if want := modelSeats(l, r.r.work, queues); r.r.seats != want {
				rt.Fatalf("level %s (limit %d): a request of %+v holds %d seats, want %d", l.name, l.current, r.r.work, r.r.seats, want)
			}
		}
		// The arriving request that started among others its arrival
		// dispatched may have started at any place among them.
		orders := [][]*propReq{starts}
		if f := p.flex[l]; f != nil {
			others := slices.DeleteFunc(slices.Clone(starts), func(r *propReq) bool { return r == f })
			orders = nil
			for i := range len(others) + 1 {
				orders = append(orders, slices.Insert(slices.Clone(others), i, f))
			}
		}
		msg := ""
		for _, order := range orders {
			if msg = startsFit(l, inUse, executing, order, queues); msg == "" {
				break
			}
		}
		if msg != "" {
			rt.Fatalf("level %s: %s", l.name, msg)
		}
		// Work conservation: nothing waits that could start.
		if l.waiting > 0 && !p.stale[l] {
			if head := fairestHead(l); modelFits(l, l.inUse, p.executing(l), head.work.maxSeats(), true) {
				rt.Fatalf("level %s: its next request (%d seats) waits with %d of %d seats in use", l.name, head.work.maxSeats(), l.inUse, l.current)
			}
		}
		// The virtual clock.
		if l.vt < p.lastVT[l] {
			rt.Fatalf("level %s: virtual time went back from %g to %g", l.name, p.lastVT[l], l.vt)
		}
		p.lastVT[l] = l.vt
		for qi := range l.queues {
			if q := l.queues[qi]; len(q.waiting) > 0 && q.nextR < q.waiting[0].arrivalR-1e-9 {
				rt.Fatalf("level %s queue %d: next start %g before its oldest request's arrival %g", l.name, qi, q.nextR, q.waiting[0].arrivalR)
			}
		}
	}
	clear(p.started)
	clear(p.flex)
}

// startsFit checks that each start of order, one after the other from
// inUse seats held and executing requests, was one modelFits allows; it
// says which was not, or "".
func startsFit(l *level, inUse, executing int, order []*propReq, queues bool) string {
	for _, r := range order {
		if !modelFits(l, inUse, executing, r.r.work.maxSeats(), queues) {
			return fmt.Sprintf("a request of %d seats started with %d of %d seats in use and %d requests executing",
				r.r.work.maxSeats(), inUse, l.current, executing)
		}
		inUse += r.r.seats
		executing++
	}
	return ""
}

// fairestHead is the request fair queuing dispatches next at l, found
// independently of the Dispatcher's own search: the head of the queue
// with the smallest virtual finish time (next start plus the head's
// estimated work), the first of equals looking from the queue after the
// one last dispatched from.
func fairestHead(l *level) *Request {
	var best *Request
	bestFinish := math.Inf(1)
	for i := range len(l.queues) {
		q := l.queues[(l.robin+1+i)%len(l.queues)]
		if len(q.waiting) == 0 {
			continue
		}
		if f := q.nextR + q.waiting[0].estimate; f < bestFinish {
			best, bestFinish = q.waiting[0], f
		}
	}
	return best
}

// checkBorrowing verifies the levels' limits; adjusted: the step
// re-divided them from the period's demand.
func (p *propRun) checkBorrowing(adjusted bool) {
	rt, d := p.rt, p.d
	sum, n := 0, len(d.levels)
	for _, l := range d.levels {
		if l.current < l.lowerLimit() || l.current > l.upperLimit() {
			rt.Fatalf("level %s: current limit %d outside [%d, %d]", l.name, l.current, l.lowerLimit(), l.upperLimit())
		}
		if adjusted {
			if floor := min(float64(l.nominal), l.stats.HighWatermark); float64(l.current) < floor {
				rt.Fatalf("level %s: current limit %d under its demand's high watermark %g (nominal %d)", l.name, l.current, l.stats.HighWatermark, l.nominal)
			}
		}
		sum += l.current
	}
	// Each level's share is rounded to whole seats.
	if diff := sum - d.nominalSum; 2*diff > n || -2*diff > n {
		rt.Fatalf("current limits sum to %d, the nominal ones to %d", sum, d.nominalSum)
	}
	// Nominal limits are rounded up from the server's total.
	if d.nominalSum < d.total || d.nominalSum >= d.total+n {
		rt.Fatalf("nominal limits sum to %d for a server of %d seats and %d levels", d.nominalSum, d.total, n)
	}
}

// TestFairShareProperty: two flows of equal width, each always with
// requests waiting in its own queue, get the same seat-seconds of service
// over a long run (a simulated minute), whatever their requests' real
// durations (each flow draws them from its own range): the difference
// stays within a few requests' worth per seat.
func TestFairShareProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seats := rapid.IntRange(1, 6).Draw(rt, "seats")
		// A width that divides the seats: the level can use them all.
		// (Otherwise an idle remainder makes the virtual clock run
		// faster than any queue is served, every queue's next start is
		// held at its oldest request's arrival, and the order follows
		// arrivals more than service, in kube-apiserver's queue sets
		// too.)
		var widths []int
		for w := 1; w <= seats; w++ {
			if seats%w == 0 {
				widths = append(widths, w)
			}
		}
		width := rapid.SampledFrom(widths).Draw(rt, "width")
		d, err := NewDispatcher([]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("f", 1, 0, queuing(16, 1, 1000))}, seats)
		if err != nil {
			rt.Fatal(err)
		}
		// Two flows dealt different queues.
		flows := [2]string{"f0", ""}
		q0 := deal(flowHash("fs", flows[0]), 16, 1, nil)[0]
		for i := 1; flows[1] == ""; i++ {
			if name := fmt.Sprint("f", i); deal(flowHash("fs", name), 16, 1, nil)[0] != q0 {
				flows[1] = name
			}
		}
		var lo, hi [2]time.Duration
		for f := range 2 {
			lo[f] = time.Duration(rapid.IntRange(20, 1000).Draw(rt, "lo")) * time.Millisecond
			hi[f] = lo[f] + time.Duration(rapid.IntRange(0, 1000).Draw(rt, "spread"))*time.Millisecond
		}
		// The durations: many draws, from a generator the run seeds.
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 0))
		type running struct {
			r    *Request
			flow int
			end  time.Time
			took time.Duration
		}
		now := t0
		var exec []running
		flowOf := map[*Request]int{}
		var served [2]float64 // seat-seconds of finished requests
		start := func(r *Request) {
			f := flowOf[r]
			took := lo[f] + time.Duration(rng.Int64N(int64(hi[f]-lo[f])+1))
			exec = append(exec, running{r: r, flow: f, end: now.Add(took), took: took})
		}
		add := func(f int) {
			r, err := d.NewRequest("f", flowHash("fs", flows[f]), WorkEstimate{InitialSeats: width})
			if err != nil {
				rt.Fatal(err)
			}
			flowOf[r] = f
			if o, reason, _ := d.Arrive(r, now); o == Executing {
				start(r)
			} else if o == Rejected {
				rt.Fatalf("rejected: %s", reason)
			}
		}
		// Keep both backlogged: more waiting than the level can run.
		for range seats/width + 2 {
			add(0)
			add(1)
		}
		for now.Before(t0.Add(time.Minute)) {
			next := 0
			for i, e := range exec {
				if e.end.Before(exec[next].end) {
					next = i
				}
			}
			e := exec[next]
			exec = slices.Delete(exec, next, next+1)
			now = e.end
			served[e.flow] += float64(e.r.seats) * e.took.Seconds()
			for _, w := range d.Finish(e.r, now) {
				start(w)
				add(flowOf[w]) // a new one joins behind it
			}
			if d.State("f").Waiting == 0 {
				rt.Fatal("a flow ran out of waiting requests")
			}
		}
		// Requests still executing hold service not counted yet, at
		// most the level's seats for the longest duration; the fair
		// queuing itself lags by about that much again.
		longest := max(hi[0], hi[1]).Seconds()
		bound := 2*float64(seats)*longest + float64(width)*longest
		if diff := math.Abs(served[0] - served[1]); diff > bound {
			rt.Fatalf("served %.2f and %.2f seat-seconds (difference %.2f, bound %.2f; durations %v-%v and %v-%v)",
				served[0], served[1], diff, bound, lo[0], hi[0], lo[1], hi[1])
		}
	})
}

// TestAllocateProperties: allocate shares a feasible total out so that
// the allocations sum to it, each stays within its bounds, and each is
// its target times the one fair fraction unless a bound holds it.
func TestAllocateProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "n")
		items := make([]allocItem, n)
		lowSum, highSum := 0.0, 0.0
		for i := range items {
			lower := float64(rapid.IntRange(0, 20).Draw(rt, "lower"))
			upper := lower + float64(rapid.IntRange(0, 20).Draw(rt, "room"))
			target := lower + float64(rapid.IntRange(0, 3000).Draw(rt, "over"))/100
			items[i] = allocItem{target: target, lower: lower, upper: upper}
			lowSum += lower
			highSum += upper
		}
		total := lowSum + float64(rapid.IntRange(0, 1000).Draw(rt, "share"))/1000*(highSum-lowSum)
		allocs, fair, err := allocate(total, items)
		if err != nil {
			rt.Fatalf("feasible problem %v (total %g): %v", items, total, err)
		}
		const eps = 1e-6
		sum := 0.0
		for i, it := range items {
			a := allocs[i]
			sum += a
			if a < it.lower-eps || a > it.upper+eps {
				rt.Fatalf("item %d: %g outside [%g, %g]", i, a, it.lower, it.upper)
			}
			want := fair * max(it.target, minTarget)
			switch {
			case math.Abs(a-want) <= eps*max(1, want):
			case math.Abs(a-it.lower) <= eps && want <= it.lower+eps:
			case math.Abs(a-it.upper) <= eps && want >= it.upper-eps:
			default:
				rt.Fatalf("item %d %+v: got %g, fair fraction %g gives %g", i, it, a, fair, want)
			}
		}
		if math.Abs(sum-total) > eps*max(1, total) {
			rt.Fatalf("allocations %v sum to %g, want %g", allocs, sum, total)
		}
	})
}
