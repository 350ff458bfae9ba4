package flowcontrol

import (
	"fmt"
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

func TestDealIsDeterministicAndDistinct(t *testing.T) {
	for _, tc := range []struct{ deck, hand int }{{64, 6}, {128, 6}, {16, 4}, {8, 8}, {1, 1}} {
		seen := map[string]bool{}
		for i := range 2000 {
			h := flowHash("fs", fmt.Sprint("user-", i))
			a := deal(h, tc.deck, tc.hand, nil)
			if b := deal(h, tc.deck, tc.hand, nil); !slices.Equal(a, b) {
				t.Fatalf("deck %d hand %d: hash %x dealt %v then %v", tc.deck, tc.hand, h, a, b)
			}
			if len(a) != tc.hand {
				t.Fatalf("deck %d hand %d: dealt %v", tc.deck, tc.hand, a)
			}
			sorted := slices.Sorted(slices.Values(a))
			if len(slices.Compact(slices.Clone(sorted))) != tc.hand {
				t.Fatalf("deck %d hand %d: dealt %v, not distinct", tc.deck, tc.hand, a)
			}
			for _, c := range a {
				if c < 0 || c >= tc.deck {
					t.Fatalf("deck %d hand %d: dealt %v, out of the deck", tc.deck, tc.hand, a)
				}
			}
			seen[fmt.Sprint(sorted)] = true
		}
		// Different flows get different hands (when the deck allows more
		// than one).
		if tc.deck > tc.hand && len(seen) < 2 {
			t.Errorf("deck %d hand %d: every flow got the same hand", tc.deck, tc.hand)
		}
	}
	// Every card of the deck is dealt to some flow.
	dealt := map[int]bool{}
	for i := range 500 {
		for _, c := range deal(flowHash("fs", fmt.Sprint(i)), 64, 6, nil) {
			dealt[c] = true
		}
	}
	if len(dealt) != 64 {
		t.Errorf("500 flows were dealt %d of 64 queues", len(dealt))
	}
}

// testLevels: "q" queues (2 seats, 4 queues, hand 2, 3 per queue), "r"
// rejects (1 seat), "x" is exempt; nothing lendable unless lendQ.
func testLevels(lendQ int32) []*flowcontrolv1.PriorityLevelConfiguration {
	return []*flowcontrolv1.PriorityLevelConfiguration{
		limitedLevel("q", 2, lendQ, queuing(4, 2, 3)),
		limitedLevel("r", 1, 0, nil),
		priorityLevel("x", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}),
	}
}

func mustDispatcher(t *testing.T, plcs []*flowcontrolv1.PriorityLevelConfiguration, total int) *Dispatcher {
	t.Helper()
	d, err := NewDispatcher(plcs, total)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func arrive(t *testing.T, d *Dispatcher, level, flow string) (*Request, Outcome, RejectReason) {
	t.Helper()
	r, err := d.NewRequest(level, flowHash("fs", flow), WorkEstimate{})
	if err != nil {
		t.Fatal(err)
	}
	o, reason, _ := d.Arrive(r, t0)
	return r, o, reason
}

func TestQueueFullRejects(t *testing.T) {
	d := mustDispatcher(t, testLevels(0), 3) // q: 2 seats, r: 1
	for i := range 2 {
		if _, o, _ := arrive(t, d, "q", "flood"); o != Executing {
			t.Fatalf("request %d with seats free: outcome %v", i, o)
		}
	}
	// One flow fills its hand of 2 queues, 3 each: 6 wait, the 7th is
	// turned away.
	for i := range 6 {
		if _, o, _ := arrive(t, d, "q", "flood"); o != Queued {
			t.Fatalf("waiting request %d: outcome %v, want queued", i, o)
		}
	}
	if _, o, reason := arrive(t, d, "q", "flood"); o != Rejected || reason != ReasonQueueFull {
		t.Fatalf("over the queue length limit: %v %q, want rejected queue-full", o, reason)
	}
	if s := d.State("q"); s.InUse != 2 || s.Waiting != 6 {
		t.Errorf("state %+v, want 2 in use, 6 waiting", s)
	}
}

// TestQueueFullOnlyWithSeatsTaken: as kube-apiserver, a full queue turns
// a request away only when its level's seats are all taken; with seats
// free (a wide request waits for more) it takes one more.
func TestQueueFullOnlyWithSeatsTaken(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("w", 1, 0, queuing(1, 1, 1))}, 4)
	arriveW := func(name string, seats int) (*Request, Outcome, RejectReason) {
		r, err := d.NewRequest("w", flowHash("fs", name), WorkEstimate{InitialSeats: seats})
		if err != nil {
			t.Fatal(err)
		}
		o, reason, _ := d.Arrive(r, t0)
		return r, o, reason
	}
	a, _, _ := arriveW("a", 3)
	if _, o, _ := arriveW("big", 2); o != Queued {
		t.Fatalf("2 seats with 1 free: %v, want queued", o)
	}
	// The queue is at its length limit (1), one seat is free: it takes
	// more.
	for _, name := range []string{"c", "e"} {
		if _, o, reason := arriveW(name, 1); o != Queued {
			t.Fatalf("%s: full queue with a seat free: %v %q, want queued", name, o, reason)
		}
	}
	if got := len(d.Finish(a, t0)); got != 3 {
		t.Errorf("a's seats freed: %d dispatched, want big, c and e", got)
	}
	// Now every seat is taken: a full queue rejects.
	if _, o, _ := arriveW("f", 1); o != Queued {
		t.Fatalf("f: %v, want queued", o)
	}
	if _, o, reason := arriveW("g", 1); o != Rejected || reason != ReasonQueueFull {
		t.Fatalf("full queue, every seat taken: %v %q, want rejected queue-full", o, reason)
	}
}

// TestArrivalOvertakesAWideHead: with a wide request waiting for seats,
// a request of another flow whose queue fair queuing picks first starts
// at once if it fits, as kube-apiserver dispatches after every arrival.
func TestArrivalOvertakesAWideHead(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("w", 1, 0, queuing(128, 1, 50))}, 4)
	arriveW := func(name string, seats int) Outcome {
		r, err := d.NewRequest("w", flowHash("fs", name), WorkEstimate{InitialSeats: seats})
		if err != nil {
			t.Fatal(err)
		}
		o, _, _ := d.Arrive(r, t0)
		return o
	}
	for range 3 {
		arriveW("a", 1)
	}
	if o := arriveW("b", 2); o != Queued {
		t.Fatalf("2 seats with 1 free: %v, want queued", o)
	}
	// c's queue finishes a 1-seat request before b's its 2-seat one.
	if o := arriveW("c", 1); o != Executing {
		t.Fatalf("a 1-seat request picked before the waiting 2-seat one, with a seat free: %v, want executing", o)
	}
	if s := d.State("w"); s.InUse != 4 || s.Waiting != 1 {
		t.Errorf("state %+v, want 4 seats in use and b waiting", s)
	}
}

// TestLeaveDispatchesNothing: a wide request waiting for seats holds
// back the narrower one behind it; when it leaves its queue, nothing
// starts until the level's next arrival or finish, as kube-apiserver's
// queue sets (the next arrival dispatches the held-back one first).
func TestLeaveDispatchesNothing(t *testing.T) {
	for _, next := range []string{"arrival", "finish", "finish at another level"} {
		t.Run(next, func(t *testing.T) {
			d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{
				limitedLevel("w", 1, 0, queuing(1, 1, 50)),
				limitedLevel("o", 1, 0, queuing(1, 1, 50)),
			}, 4) // 2 seats each
			var reqs []*Request
			for _, seats := range []int{1, 2, 1} {
				r, err := d.NewRequest("w", flowHash("fs", "a"), WorkEstimate{InitialSeats: seats})
				if err != nil {
					t.Fatal(err)
				}
				d.Arrive(r, t0)
				reqs = append(reqs, r)
			}
			other, _, _ := arrive(t, d, "o", "a")
			if s := d.State("w"); s.InUse != 1 || s.Waiting != 2 {
				t.Fatalf("state %+v, want 1 seat in use and 2 waiting", s)
			}
			if left, woken := d.Leave(reqs[1], t0); !left || len(woken) != 0 {
				t.Fatalf("the wide request left (%v): started %d, want none", left, len(woken))
			}
			var woken []*Request
			switch next {
			case "arrival":
				r, err := d.NewRequest("w", flowHash("fs", "a"), WorkEstimate{})
				if err != nil {
					t.Fatal(err)
				}
				var o Outcome
				if o, _, woken = d.Arrive(r, t0); o != Queued {
					t.Fatalf("the next arrival: %v, want queued behind the held-back one (2 seats in use)", o)
				}
			case "finish":
				woken = d.Finish(reqs[0], t0)
			case "finish at another level":
				if woken = d.Finish(other, t0); len(woken) != 0 {
					t.Fatalf("a finish at another level started %d of w's requests", len(woken))
				}
				woken = d.Finish(reqs[0], t0)
			}
			if len(woken) != 1 || woken[0] != reqs[2] {
				t.Fatalf("the next %s started %d requests, want the held-back one", next, len(woken))
			}
		})
	}
}

func TestRejectLevelDoesNotQueue(t *testing.T) {
	d := mustDispatcher(t, testLevels(0), 3)
	first, o, _ := arrive(t, d, "r", "a")
	if o != Executing {
		t.Fatalf("first: %v", o)
	}
	if _, o, reason := arrive(t, d, "r", "a"); o != Rejected || reason != ReasonConcurrencyLimit {
		t.Fatalf("second: %v %q, want rejected concurrency-limit", o, reason)
	}
	d.Finish(first, t0)
	if _, o, _ := arrive(t, d, "r", "a"); o != Executing {
		t.Fatalf("after the first finished: %v", o)
	}
}

func TestExemptNeverWaits(t *testing.T) {
	d := mustDispatcher(t, testLevels(0), 3)
	for i := range 1000 {
		if _, o, _ := arrive(t, d, "x", "admin"); o != Executing {
			t.Fatalf("exempt request %d: %v", i, o)
		}
	}
	// The limited levels' seats are untouched.
	if _, o, _ := arrive(t, d, "q", "a"); o != Executing {
		t.Fatalf("limited level after exempt load: %v", o)
	}
}

// TestFloodingFlowDoesNotStarveAnother: one flow keeps its queues full;
// a second flow's request in the same level is dispatched within one
// round of the non-empty queues, not after the flood.
func TestFloodingFlowDoesNotStarveAnother(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("q", 1, 0, queuing(64, 6, 50))}, 1)
	var executing []*Request
	first, _, _ := arrive(t, d, "q", "flood")
	executing = append(executing, first)
	for range 100 {
		if _, o, _ := arrive(t, d, "q", "flood"); o != Queued {
			t.Fatalf("flood: %v", o)
		}
	}
	victim, o, _ := arrive(t, d, "q", "victim")
	if o != Queued {
		t.Fatalf("victim: %v", o)
	}
	// The flood's hand is 6 queues, all non-empty; the victim's queue is
	// one more (shortest in its hand). It goes within 7 dispatches.
	for i := range 7 {
		woken := d.Finish(executing[len(executing)-1], t0)
		if len(woken) != 1 {
			t.Fatalf("dispatch %d woke %d", i, len(woken))
		}
		if woken[0] == victim {
			return
		}
		executing = append(executing, woken[0])
	}
	t.Fatal("the victim was not dispatched within a round of the flood's queues")
}

func TestLeave(t *testing.T) {
	d := mustDispatcher(t, testLevels(0), 3)
	a, _, _ := arrive(t, d, "q", "a")
	arrive(t, d, "q", "a")
	w, o, _ := arrive(t, d, "q", "b")
	if o != Queued {
		t.Fatalf("third: %v", o)
	}
	if left, _ := d.Leave(w, t0); !left {
		t.Fatal("a queued request could not leave")
	}
	if left, _ := d.Leave(w, t0); left {
		t.Fatal("left twice")
	}
	if s := d.State("q"); s.Waiting != 0 {
		t.Errorf("waiting %d after it left", s.Waiting)
	}
	// Nothing to dispatch for it any more.
	if woken := d.Finish(a, t0); len(woken) != 0 {
		t.Errorf("finishing woke %d, want none", len(woken))
	}
	// A dispatched request cannot leave; it must be finished.
	x, _, _ := arrive(t, d, "q", "c")
	y, o, _ := arrive(t, d, "q", "c")
	if o != Queued {
		t.Fatalf("y: %v", o)
	}
	if woken := d.Finish(x, t0); len(woken) != 1 || woken[0] != y {
		t.Fatalf("finishing x woke %v", woken)
	}
	if left, _ := d.Leave(y, t0); left {
		t.Error("a dispatched request left its queue")
	}
	if d.Finish(y, t0); d.State("q").InUse != 1 {
		t.Errorf("in use %d, want 1", d.State("q").InUse)
	}
	// Finishing twice changes nothing.
	d.Finish(y, t0)
	if d.State("q").InUse != 1 {
		t.Errorf("in use %d after a second finish, want 1", d.State("q").InUse)
	}
}

// TestBorrowing: at an adjustment a busy level borrows the lendable seats
// of an idle one; the lender gets them back at the next adjustment once
// its own demand comes back.
func TestBorrowing(t *testing.T) {
	plcs := []*flowcontrolv1.PriorityLevelConfiguration{
		limitedLevel("busy", 1, 0, queuing(8, 2, 50)),
		limitedLevel("lender", 1, 50, queuing(8, 2, 50)),
	}
	d := mustDispatcher(t, plcs, 8) // 4 seats each; the lender lends 2
	for range 8 {
		if _, o, _ := arrive(t, d, "busy", "b"); o == Rejected {
			t.Fatal("busy: rejected")
		}
	}
	// Ten seconds of the busy level wanting 8 seats and the lender none:
	// the busy level's target is 8, the lender's its lower limit 2, and
	// the 8 seats go 6 and 2.
	d.AdjustBorrowing(t0.Add(BorrowingAdjustmentPeriod))
	if s, lim := d.State("busy"), limitsOf(d, "busy"); s.InUse != 6 || s.Waiting != 2 || lim.Current != 6 {
		t.Fatalf("busy after an adjustment: %+v, current limit %d; want 6 in use of 6, 2 waiting", s, lim.Current)
	}
	if lim := limitsOf(d, "lender"); lim.Current != 2 || lim.Demand.HighWatermark != 0 {
		t.Fatalf("idle lender: %+v, want a current limit of 2", lim)
	}
	// The lender wants 4 seats: it has 2 now, and all 4 after the next
	// adjustment (its lower bound is then its nominal 4, the busy level's
	// too); the busy level starts nothing until it is back under 4.
	for range 4 {
		arrive(t, d, "lender", "l")
	}
	if s := d.State("lender"); s.InUse != 2 || s.Waiting != 2 {
		t.Fatalf("lender before the next adjustment: %+v", s)
	}
	woken := d.AdjustBorrowing(t0.Add(2 * BorrowingAdjustmentPeriod))
	if len(woken) != 2 || woken[0].level.name != "lender" || woken[1].level.name != "lender" {
		t.Fatalf("the adjustment started %d requests, want the lender's 2", len(woken))
	}
	if b, l := limitsOf(d, "busy"), limitsOf(d, "lender"); b.Current != 4 || l.Current != 4 {
		t.Fatalf("current limits %d and %d, want 4 and 4", b.Current, l.Current)
	}
	if s := d.State("busy"); s.InUse != 6 {
		t.Fatalf("busy keeps what runs: %+v", s)
	}
}

func limitsOf(d *Dispatcher, name string) LevelLimits {
	for _, l := range d.Limits() {
		if l.Name == name {
			return l
		}
	}
	return LevelLimits{}
}

// TestBorrowingLimit: a level with borrowingLimitPercent gets at most
// round(nominal * percent / 100) seats beyond its nominal ones, however
// much another level lends; 0 keeps it to its nominal seats.
func TestBorrowingLimit(t *testing.T) {
	for _, tc := range []struct {
		percent int32
		want    int // seats the busy level gets
	}{{-1, 8}, {50, 6}, {0, 4}} {
		busy := limitedLevel("busy", 1, 0, queuing(8, 2, 50))
		if tc.percent >= 0 {
			busy.Spec.Limited.BorrowingLimitPercent = ptr(tc.percent)
		}
		d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{busy, limitedLevel("lender", 1, 100, queuing(8, 2, 50))}, 8)
		for range 10 {
			arrive(t, d, "busy", "b")
		}
		d.AdjustBorrowing(t0.Add(BorrowingAdjustmentPeriod))
		if got := d.State("busy").InUse; got != tc.want {
			t.Errorf("borrowingLimitPercent %d: %d seats executing, want %d (4 nominal, the idle lender lends all its 4)", tc.percent, got, tc.want)
		}
	}
}

func TestNewDispatcherRejectsBadConfig(t *testing.T) {
	for name, plcs := range map[string][]*flowcontrolv1.PriorityLevelConfiguration{
		"hand bigger than deck": {limitedLevel("a", 1, 0, queuing(2, 3, 1))},
		"no queues":             {limitedLevel("a", 1, 0, queuing(0, 1, 1))},
		"twice":                 {limitedLevel("a", 1, 0, nil), limitedLevel("a", 1, 0, nil)},
		"no shares":             {priorityLevel("x", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt})},
	} {
		if _, err := NewDispatcher(plcs, 10); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewDispatcher(DefaultPriorityLevels(), 0); err == nil {
		t.Error("no seats: no error")
	}
}

func TestRetryAfterAdapts(t *testing.T) {
	var h dropHistory
	if h.get() != 1 {
		t.Fatalf("start: %d", h.get())
	}
	// 3 rejections in second 100, then one in 101: the last second saw
	// >= 3*1, so it doubles.
	for range 3 {
		h.record(100)
	}
	h.record(101)
	if h.get() != 2 {
		t.Fatalf("after 3 drops in a second: %d, want 2", h.get())
	}
	// A burst every second keeps raising it, never above 32.
	for s := int64(102); s < 200; s++ {
		for range 200 {
			h.record(s)
		}
	}
	if h.get() != maxRetryAfter {
		t.Fatalf("under a long burst: %d, want %d", h.get(), maxRetryAfter)
	}
	// Quiet, then single drops: it comes down by one a time.
	h.record(300)
	h.record(400)
	if h.get() != maxRetryAfter-2 {
		t.Fatalf("after two quiet drops: %d, want %d", h.get(), maxRetryAfter-2)
	}
}

// flowHash is kube-apiserver's: the expected values are the first 8 bytes,
// little-endian, of SHA-256("<schema>\x00<distinguisher>") as Python's
// hashlib computes them.
func TestFlowHashIsKubeAPIServers(t *testing.T) {
	for _, tc := range []struct {
		schema, distinguisher string
		want                  uint64
	}{
		{"fs", "alice", 0x86c5a2998074cd0d},
		{"global-default", "system:serviceaccount:kube-system:x", 0x0718b87662eead88},
		{"catch-all", "", 0x6b546fa48f815ead},
	} {
		if got := flowHash(tc.schema, tc.distinguisher); got != tc.want {
			t.Errorf("flowHash(%q, %q) = %#x, want %#x", tc.schema, tc.distinguisher, got, tc.want)
		}
	}
}

// TestLevelThatLentEverything: a level whose current limit went to 0 (it
// lent every seat) starts nothing from its queues, and its virtual clock
// stands still, until an adjustment gives it seats for its demand, as
// kube-apiserver's queue sets dispatch only while the seats in use are
// under the limit; a level that does not queue admits one request at a
// time (one wider than a limit of 0 starts when nothing executes).
func TestLevelThatLentEverything(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{
		limitedLevel("busy", 1, 0, queuing(8, 2, 50)),
		limitedLevel("z", 1, 100, queuing(8, 2, 50)),
		limitedLevel("r", 1, 100, nil),
	}, 9) // 3 nominal seats each
	for range 9 {
		arrive(t, d, "busy", "b")
	}
	d.AdjustBorrowing(t0.Add(BorrowingAdjustmentPeriod))
	if z, r := limitsOf(d, "z"), limitsOf(d, "r"); z.Current != 0 || r.Current != 0 {
		t.Fatalf("idle lenders' current limits %d and %d, want 0 and 0", z.Current, r.Current)
	}
	at := t0.Add(BorrowingAdjustmentPeriod + time.Second)
	arriveAt := func(level string) Outcome {
		r, err := d.NewRequest(level, flowHash("fs", "a"), WorkEstimate{})
		if err != nil {
			t.Fatal(err)
		}
		o, _, _ := d.Arrive(r, at)
		return o
	}
	for _, step := range []struct {
		level string
		want  Outcome
	}{{"z", Queued}, {"z", Queued}, {"r", Executing}, {"r", Rejected}} {
		if o := arriveAt(step.level); o != step.want {
			t.Fatalf("%s at a current limit of 0: %v, want %v", step.level, o, step.want)
		}
	}
	vt := d.byName["z"].vt
	woken := d.AdjustBorrowing(at.Add(BorrowingAdjustmentPeriod))
	if got := d.byName["z"].vt; got != vt {
		t.Errorf("z's virtual clock moved from %g to %g at a limit of 0", vt, got)
	}
	if z := limitsOf(d, "z"); z.Current < 2 || len(woken) != 2 || woken[0].level.name != "z" {
		t.Fatalf("after an adjustment z has %d seats and %d of its requests started, want 2 and 2", z.Current, len(woken))
	}
}

// An exempt request with final seats holds them for its additional
// latency after it finishes, as every kube-apiserver queue set does (the
// exempt level's too), so that its level's demand counts them.
func TestExemptRequestLingers(t *testing.T) {
	d := mustDispatcher(t, testLevels(0), 3)
	r, err := d.NewRequest("x", flowHash("fs", "admin"), WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if o, _, _ := d.Arrive(r, t0); o != Executing {
		t.Fatalf("exempt request: %v", o)
	}
	d.Finish(r, t0.Add(time.Millisecond))
	if got := r.AdditionalLatency(); got != time.Second {
		t.Fatalf("a finished exempt request lingers %v, want 1s", got)
	}
	d.FinishLinger(r, t0.Add(time.Second+time.Millisecond))
	if got := r.AdditionalLatency(); got != 0 {
		t.Fatalf("after its linger: %v, want 0", got)
	}
}

// TestUpperLimitWithoutBorrowingLimit: a level without
// borrowingLimitPercent may borrow up to the server's total, so its upper
// limit (apiserver_flowcontrol_upper_limit_seats) is nominal + total, as
// kube-apiserver computes it (borrowingCL = serverConcurrencyLimit; the
// values are those a default kube-apiserver of 600 seats reports, in
// kubernetes/kubernetes#129086). Not nominal + the others' lendable seats:
// that is the unmerged proposal kubernetes/kubernetes#129087.
func TestUpperLimitWithoutBorrowingLimit(t *testing.T) {
	d := mustDispatcher(t, DefaultPriorityLevels(), 600)
	for name, want := range map[string]int{"exempt": 600, "catch-all": 613, "global-default": 649} {
		if l := limitsOf(d, name); l.Upper != want || l.Upper != l.Nominal+600 {
			t.Errorf("%s: nominal %d, upper %d; want upper %d (nominal + 600)", name, l.Nominal, l.Upper, want)
		}
	}
}
