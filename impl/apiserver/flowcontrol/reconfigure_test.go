package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestReconfigureKeepsRequests: a level that stays keeps its executing
// and queued requests under its new limits, when its number of queues
// changes too (see TestQueuesChangeLazily); more seats dispatch at once.
func TestReconfigureKeepsRequests(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(4, 2, 10))}, 1)
	held, _, _ := arrive(t, d, "q", "a")
	var waiting []*Request
	for _, f := range []string{"b", "c", "d"} {
		r, o, _ := arrive(t, d, "q", f)
		if o != Queued {
			t.Fatalf("flow %s: %v, want queued", f, o)
		}
		waiting = append(waiting, r)
	}
	// Eight queues now, still one seat: nothing starts, nothing is lost.
	woken, err := d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(8, 2, 10))}, t0)
	if err != nil || len(woken) != 0 {
		t.Fatalf("reconfigure: %v woken %d", err, len(woken))
	}
	if s := d.State("q"); s.InUse != 1 || s.Waiting != 3 {
		t.Fatalf("after adding queues: %+v", s)
	}
	if got := d.Finish(held, t0); len(got) != 1 {
		t.Fatalf("finish dispatched %d, want 1", len(got))
	}
	// Two levels of 1 share over 4 seats: q gets 2, so one more starts.
	woken, err = d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{
		limitedLevel("q", 1, 0, queuing(8, 2, 10)), limitedLevel("other", 1, 0, nil)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	_ = woken
	d.total = 4
	d.recompute()
	d.adjust(t0)
	if got := d.dispatch(t0); len(got) != 1 {
		t.Fatalf("with 2 seats dispatched %d more, want 1", len(got))
	}
	if s := d.State("q"); s.InUse != 2 || s.Waiting != 1 {
		t.Fatalf("with 2 seats: %+v", s)
	}
	for finished := true; finished; {
		finished = false
		for _, r := range waiting {
			if r.state == stateExecuting {
				d.Finish(r, t0)
				finished = true
			}
		}
	}
	if s := d.State("q"); s.InUse != 0 || s.Waiting != 0 {
		t.Fatalf("at the end: %+v", s)
	}
}

// TestRemovedLevelQuiesces: a level no longer configured admits nothing
// new, dispatches what it queued as its seats free, and is gone once idle.
func TestRemovedLevelQuiesces(t *testing.T) {
	levels := []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("gone", 1, 0, queuing(4, 2, 10)), limitedLevel("stays", 1, 0, nil)}
	d := mustDispatcher(t, levels, 2)
	held, _, _ := arrive(t, d, "gone", "a")
	queued, o, _ := arrive(t, d, "gone", "b")
	if o != Queued {
		t.Fatalf("second: %v", o)
	}
	if _, err := d.Reconfigure(levels[1:], t0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NewRequest("gone", 1, WorkEstimate{}); err == nil {
		t.Fatal("a removed level admits new requests")
	}
	if woken := d.Finish(held, t0); len(woken) != 1 || woken[0] != queued {
		t.Fatalf("the quiescing level's queued request was not dispatched: %v", woken)
	}
	if len(d.Limits()) != 2 {
		t.Fatalf("levels %+v, want the quiescing one kept while busy", d.Limits())
	}
	d.Finish(queued, t0)
	if l := d.Limits(); len(l) != 1 || l[0].Name != "stays" || l[0].Nominal != 2 {
		t.Fatalf("levels %+v, want stays alone with both seats", l)
	}
}

// TestRemovedLevelIsReapedAtItsLastFinish: a removed level is gone as
// soon as its last request is done, exempt ones too (kube-apiserver's
// filter reaps after every finish that leaves an undesired level idle).
// Removing it re-divides the seats and ends the demand period then, as
// kube-apiserver's configuration reload that the reaping triggers does;
// the next adjustment's period starts there.
func TestRemovedLevelIsReapedAtItsLastFinish(t *testing.T) {
	x := priorityLevel("x", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt,
		Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(1))}})
	a := limitedLevel("a", 1, 0, queuing(4, 2, 10))
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{x, a}, 8) // 4 seats each
	rx, _, _ := arrive(t, d, "x", "x")
	var ra []*Request
	for range 4 {
		r, o, _ := arrive(t, d, "a", "a")
		if o != Executing {
			t.Fatalf("a: %v, want executing", o)
		}
		ra = append(ra, r)
	}
	if _, err := d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{a}, t0); err != nil {
		t.Fatal(err)
	}
	for _, r := range ra[1:] {
		d.Finish(r, t0.Add(time.Second)) // a's demand: 4 for 1 s, then 1
	}
	d.Finish(rx, t0.Add(2*time.Second))
	if l := d.Limits(); len(l) != 1 || l[0].Name != "a" || l[0].Nominal != 8 {
		t.Fatalf("levels %+v, want a alone with the 8 seats once x's last request is done", l)
	}
	if st := limitsOf(d, "a").Demand; st.HighWatermark != 4 || st.Average != 2.5 {
		t.Fatalf("a's demand at the reaping: %+v, want the period from the reconfiguration (high watermark 4, average 2.5)", st)
	}
	d.AdjustBorrowing(t0.Add(2*time.Second + BorrowingAdjustmentPeriod))
	if st := limitsOf(d, "a").Demand; st.HighWatermark != 1 || st.Average != 1 {
		t.Fatalf("a's demand at the next adjustment: %+v, want the period from the reaping (1 seat throughout)", st)
	}
}

func TestReconfigureIsAllOrNothing(t *testing.T) {
	d := mustDispatcher(t, testLevels(0), 3)
	before := d.Limits()
	bad := limitedLevel("bad", 1, 0, queuing(4, 8, 1))
	if _, err := d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 5, 0, queuing(4, 2, 3)), bad}, t0); err == nil {
		t.Fatal("a bad level was accepted")
	}
	if after := d.Limits(); len(after) != len(before) || after[0] != before[0] {
		t.Fatalf("limits changed by a failed reconfigure: %+v -> %+v", before, after)
	}
}

func TestDigest(t *testing.T) {
	own := flowSchema("alice", "tiny", 500, flowcontrolv1.FlowDistinguisherMethodByUserType,
		withSubjects(everythingRules(), users("alice")...))
	broken := limitedLevel("broken", 1, 0, queuing(2, 3, 1))
	dg := Digest([]*flowcontrolv1.FlowSchema{own}, []*flowcontrolv1.PriorityLevelConfiguration{broken})
	if !dg.Dangling["alice"] || len(dg.Unusable) != 1 {
		t.Fatalf("dangling %v unusable %v", dg.Dangling, dg.Unusable)
	}
	var names []string
	for _, p := range dg.PriorityLevels {
		names = append(names, p.Name)
	}
	for _, fs := range dg.FlowSchemas {
		names = append(names, fs.Name)
	}
	if want := "exempt catch-all exempt catch-all"; joinNames(names) != want {
		t.Fatalf("digested %q, want the mandatory objects alone: %q", joinNames(names), want)
	}
	dg = Digest([]*flowcontrolv1.FlowSchema{own}, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("tiny", 1, 0, nil)})
	if dg.Dangling["alice"] || len(dg.FlowSchemas) != 3 || len(dg.PriorityLevels) != 3 {
		t.Fatalf("%+v", dg)
	}
}

func joinNames(n []string) string {
	out := ""
	for i, s := range n {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

// TestControllerFollowsConfiguration: a FlowSchema sending alice to a
// level of one seat that rejects changes what alice gets; going back to
// the defaults restores it. A request queued in a level that a
// reconfiguration removes still runs when its seat frees.
func TestControllerFollowsConfiguration(t *testing.T) {
	noLeak(t)
	// The mandatory objects alone (nothing lendable), 12 seats.
	none := Digest(nil, nil)
	c, err := New(Config{TotalSeats: 12, WaitLimit: time.Minute, FlowSchemas: none.FlowSchemas, PriorityLevels: none.PriorityLevels})
	if err != nil {
		t.Fatal(err)
	}
	alice := named("alice", "system:authenticated")
	get := request.Parse(httptest.NewRequest("GET", "/api/v1/pods", nil))
	if got := c.Classify(alice, get).FlowSchema().Name; got != "catch-all" {
		t.Fatalf("alice before: %s", got)
	}
	own := flowSchema("alice", "tiny", 500, flowcontrolv1.FlowDistinguisherMethodByUserType,
		withSubjects(everythingRules(), users("alice")...))
	schemas := []*flowcontrolv1.FlowSchema{own}
	levels := []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("tiny", 1, 0, queuing(1, 1, 1))}
	if err := c.Reconfigure(Digest(schemas, levels)); err != nil {
		t.Fatal(err)
	}
	cl := c.Classify(alice, get)
	if cl.FlowSchema().Name != "alice" || cl.PriorityLevel().Name != "tiny" {
		t.Fatalf("alice after: %s/%s", cl.FlowSchema().Name, cl.PriorityLevel().Name)
	}
	// tiny's share of 12 seats is ceil(12*1/6) = 2; a third request
	// queues, a fourth finds its queue full.
	held1, err := c.Wait(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Wait(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := c.Wait(context.Background(), c.Classify(alice, get))
		if err == nil {
			c.Release(r)
		}
		done <- err
	}()
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.d.State("tiny").Waiting == 1
	})
	var rej *Rejection
	if _, err := c.Wait(context.Background(), c.Classify(alice, get)); !errors.As(err, &rej) || rej.Reason != ReasonQueueFull {
		t.Fatalf("fourth request: %v, want queue-full", err)
	}
	// Back to the mandatory objects: tiny is gone, alice is catch-all
	// again, and the request queued in tiny still gets to run.
	if err := c.Reconfigure(none); err != nil {
		t.Fatal(err)
	}
	if got := c.Classify(alice, get).FlowSchema().Name; got != "catch-all" {
		t.Fatalf("alice after the delete: %s", got)
	}
	c.Release(held)
	c.Release(held1)
	if err := <-done; err != nil {
		t.Fatalf("the request queued in the removed level: %v", err)
	}
	c.mu.Lock()
	n := len(c.d.Limits())
	c.mu.Unlock()
	if n != 2 {
		t.Errorf("%d levels after the removed one drained, want 2", n)
	}
	// Classified before a reconfiguration that removes its level: the
	// catch-all level takes it.
	if err := c.Reconfigure(Digest(schemas, levels)); err != nil {
		t.Fatal(err)
	}
	stale := c.Classify(alice, get)
	if err := c.Reconfigure(none); err != nil {
		t.Fatal(err)
	}
	r, err := c.Wait(context.Background(), stale)
	if err != nil {
		t.Fatalf("stale classification: %v", err)
	}
	if r.level.name != "catch-all" {
		t.Errorf("stale classification ran at %s, want catch-all", r.level.name)
	}
	c.Release(r)
}

// TestReapShowsTheNewLimitsAtOnce: when a removed level's last request
// is done, the level goes and the seats are re-divided (kube-apiserver
// reloads its configuration then, which sets the seat gauges); the
// gauges show the new limits at once, not at the next 10 s adjustment.
func TestReapShowsTheNewLimitsAtOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	none := Digest(nil, nil) // exempt (no shares) and catch-all (5 shares)
	c, err := New(Config{TotalSeats: 12, WaitLimit: time.Minute, Metrics: reg,
		FlowSchemas: none.FlowSchemas, PriorityLevels: none.PriorityLevels})
	if err != nil {
		t.Fatal(err)
	}
	own := flowSchema("alice", "tiny", 500, flowcontrolv1.FlowDistinguisherMethodByUserType,
		withSubjects(everythingRules(), users("alice")...))
	if err := c.Reconfigure(Digest([]*flowcontrolv1.FlowSchema{own},
		[]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("tiny", 1, 0, queuing(1, 1, 1))})); err != nil {
		t.Fatal(err)
	}
	get := request.Parse(httptest.NewRequest("GET", "/api/v1/pods", nil))
	held, err := c.Wait(context.Background(), c.Classify(named("alice", "system:authenticated"), get))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reconfigure(none); err != nil {
		t.Fatal(err)
	}
	nominal := func(level string) (float64, bool) {
		return metricValue(reg, "apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": level})
	}
	// tiny quiesces with its share: catch-all has ceil(12*5/6) = 10.
	if v, ok := nominal("catch-all"); !ok || v != 10 {
		t.Fatalf("catch-all's nominal limit while tiny drains: %v (found %v), want 10", v, ok)
	}
	c.Release(held) // tiny is idle: reaped, catch-all has the 12 seats
	if v, ok := nominal("catch-all"); !ok || v != 12 {
		t.Errorf("catch-all's nominal limit once tiny is gone: %v (found %v), want 12", v, ok)
	}
	if v, ok := metricValue(reg, "apiserver_flowcontrol_current_limit_seats", map[string]string{"priority_level": "catch-all"}); !ok || v != 12 {
		t.Errorf("catch-all's current limit once tiny is gone: %v (found %v), want 12", v, ok)
	}
	if v, ok := nominal("tiny"); ok {
		t.Errorf("tiny's nominal limit still shown (%v) once it is gone", v)
	}
}

// queueIndex is the index in l.queues of the queue r is in (or came
// through).
func queueIndex(l *level, r *Request) int { return slices.Index(l.queues, r.queue) }

// TestQueuesChangeLazily: as kube-apiserver's queue sets, a level given
// more queues adds them at once and its waiting requests stay where they
// are; given fewer, it deals new requests into the first ones only and
// drops a surplus queue when a request of it gives its seats back and
// leaves it empty, until it has as many as configured.
func TestQueuesChangeLazily(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(4, 1, 10))}, 1)
	l := d.byName["q"]
	held, _, _ := arrive(t, d, "q", "held")
	at := map[*Request]int{}
	moved := false // the deal of one of the flows differs between 4 and 8 queues
	for i := range 8 {
		r, o, _ := arrive(t, d, "q", fmt.Sprint("f", i))
		if o != Queued {
			t.Fatalf("flow f%d: %v, want queued", i, o)
		}
		at[r] = queueIndex(l, r)
		moved = moved || deal(r.hash, 8, 1, nil)[0] != at[r]
	}
	if !moved {
		t.Fatal("no flow is dealt another queue of 8 than of 4: the test proves nothing")
	}
	if _, err := d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(8, 1, 10))}, t0); err != nil {
		t.Fatal(err)
	}
	if len(l.queues) != 8 {
		t.Fatalf("%d queues after going to 8, want 8", len(l.queues))
	}
	for r, i := range at {
		if got := queueIndex(l, r); got != i {
			t.Errorf("a waiting request moved from queue %d to %d when queues were added", i, got)
		}
	}
	// Down to 2: nothing is dropped yet, new requests go to queues 0 or 1.
	if _, err := d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(2, 1, 10))}, t0); err != nil {
		t.Fatal(err)
	}
	if len(l.queues) != 8 {
		t.Fatalf("%d queues right after going to 2, want the 8 still (dropped as they go empty)", len(l.queues))
	}
	for i := range 8 {
		r, o, _ := arrive(t, d, "q", fmt.Sprint("g", i))
		if qi := queueIndex(l, r); o != Queued || qi > 1 {
			t.Fatalf("flow g%d: %v in queue %d, want queued in queue 0 or 1", i, o, qi)
		}
	}
	// Finishing what runs, one at a time, drains the level; more traffic
	// then takes the queues down to 2.
	now := t0
	running := []*Request{held}
	for len(running) > 0 {
		r := running[0]
		running = running[1:]
		now = now.Add(time.Millisecond)
		running = append(running, d.Finish(r, now)...)
	}
	if s := d.State("q"); s.InUse != 0 || s.Waiting != 0 || l.active != 0 || l.seatsRequested != 0 {
		t.Fatalf("after the drain: %+v, %d active queues, %d seats requested", s, l.active, l.seatsRequested)
	}
	if n := len(l.queues); n >= 8 || n < 2 {
		t.Fatalf("%d queues after the drain, want fewer than 8 and at least 2", n)
	}
	for i := 0; len(l.queues) > 2; i++ {
		if i == 1000 {
			t.Fatalf("%d queues after 1000 more requests, want 2", len(l.queues))
		}
		r, o, _ := arrive(t, d, "q", fmt.Sprint("h", i))
		if o != Executing {
			t.Fatalf("h%d: %v on an idle level", i, o)
		}
		now = now.Add(time.Millisecond)
		d.Finish(r, now)
	}
}

// TestDroppedQueueKeepsTheRobin: dropping a surplus queue moves the
// queues after it up one place and the robin index with them (as
// kube-apiserver's removeQueueIfEmptyLocked decrements robinIndex when it
// is at or after the removed queue's index), so that among queues whose
// oldest requests would finish at the same virtual time the one after the
// queue last dispatched from still goes first.
func TestDroppedQueueKeepsTheRobin(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		queues, configured, robin int // robin: the queue last dispatched from
		drop, wantRobin, wantNext int // indexes before the drop, but wantRobin
	}{
		{"a queue after the robin's", 4, 2, 2, 3, 2, 0},
		{"a queue before the robin's", 4, 2, 2, 0, 1, 3},
		{"the robin's queue", 3, 1, 1, 1, 0, 2},
		{"the robin's queue, the first", 3, 1, 0, 0, -1, 1},
	} {
		qs := make([]*queue, tc.queues)
		for i := range qs {
			qs[i] = &queue{}
		}
		l := &level{queues: slices.Clone(qs), numQueues: tc.configured, fairState: fairState{robin: tc.robin}}
		l.dropSurplusQueue(qs[tc.drop])
		if len(l.queues) != tc.queues-1 || l.robin != tc.wantRobin {
			t.Errorf("%s: %d queues, robin %d; want %d, %d", tc.name, len(l.queues), l.robin, tc.queues-1, tc.wantRobin)
			continue
		}
		// One request waiting in each queue, all finishing at the same
		// virtual time: the one after the robin's goes first.
		for _, q := range l.queues {
			q.waiting = []*Request{{estimate: 1}}
		}
		if got := l.queues[l.fairest()]; got != qs[tc.wantNext] {
			t.Errorf("%s: queue %d of before dispatched next, want %d", tc.name, slices.Index(qs, got), tc.wantNext)
		}
	}
}

// TestSurplusQueueDroppedAtASeatRelease: as kube-apiserver's queue sets
// (removeQueueIfEmptyLocked, called only where a request gives its seats
// back), a surplus queue is not dropped when a waiting request leaves it
// empty; it is the queue of the request that gives its seats back that
// goes, the first one here.
func TestSurplusQueueDroppedAtASeatRelease(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(2, 1, 10))}, 1)
	l := d.byName["q"]
	// flowTo is a flow dealt queue qi of 2.
	flowTo := func(qi int) string {
		for i := range 100 {
			if flow := fmt.Sprint("f", i); deal(flowHash("fs", flow), 2, 1, nil)[0] == qi {
				return flow
			}
		}
		t.Fatalf("no flow dealt queue %d of 2", qi)
		return ""
	}
	held, o, _ := arrive(t, d, "q", flowTo(0))
	if o != Executing || queueIndex(l, held) != 0 {
		t.Fatalf("held: %v in queue %d, want executing from queue 0", o, queueIndex(l, held))
	}
	waiting, o, _ := arrive(t, d, "q", flowTo(1))
	if o != Queued || queueIndex(l, waiting) != 1 {
		t.Fatalf("waiting: %v in queue %d, want queued in queue 1", o, queueIndex(l, waiting))
	}
	heldQ, waitingQ := held.queue, waiting.queue
	if _, err := d.Reconfigure([]*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(1, 1, 10))}, t0); err != nil {
		t.Fatal(err)
	}
	if left, _ := d.Leave(waiting, t0); !left || len(l.queues) != 2 {
		t.Fatalf("after the waiting request left: left %v, %d queues, want 2 (nothing gave seats back)", left, len(l.queues))
	}
	d.Finish(held, t0.Add(time.Millisecond))
	if len(l.queues) != 1 || l.queues[0] != waitingQ || !heldQ.dropped {
		t.Fatalf("after the executing request finished: %d queues (its own dropped: %v), want only the other one", len(l.queues), heldQ.dropped)
	}
}
