package flowcontrol

import (
	"context"
	"fmt"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// widthStep is one step of a width scenario on a level "w" of 4 seats with
// one queue: a request arrives (named, with its work), finishes executing,
// or ends its linger; then the level's seats in use, and the requests
// the step dispatched from the queue, are checked.
type widthStep struct {
	arrive, finish, linger string
	work                   WorkEstimate
	want                   Outcome // of an arrival
	inUse                  int
	dispatched             []string
}

func TestRequestWidth(t *testing.T) {
	wide := func(n int) WorkEstimate { return WorkEstimate{InitialSeats: n} }
	write := WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: time.Second}
	for _, tc := range []struct {
		name  string
		steps []widthStep
	}{
		{"the zero estimate is one seat", []widthStep{
			{arrive: "a", want: Executing, inUse: 1},
			{finish: "a", inUse: 0},
		}},
		{"a wide request takes its seats", []widthStep{
			{arrive: "a", work: wide(3), want: Executing, inUse: 3},
			{arrive: "b", work: wide(2), want: Queued, inUse: 3},
			{arrive: "c", want: Queued, inUse: 3},
			{finish: "a", inUse: 3, dispatched: []string{"b", "c"}},
		}},
		{"wider than the level: starts alone and holds all its seats", []widthStep{
			{arrive: "a", work: wide(10), want: Executing, inUse: 10},
			{arrive: "b", want: Queued, inUse: 10},
			{finish: "a", inUse: 1, dispatched: []string{"b"}},
		}},
		{"wider than the level: waits until nothing executes", []widthStep{
			{arrive: "a", want: Executing, inUse: 1},
			{arrive: "big", work: wide(6), want: Queued, inUse: 1},
			{finish: "a", inUse: 6, dispatched: []string{"big"}},
		}},
		{"wider than the level: lingering seats under the limit do not hold it back", []widthStep{
			{arrive: "w", work: WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: time.Second}, want: Executing, inUse: 1},
			{finish: "w", inUse: 1},
			{arrive: "big", work: wide(6), want: Executing, inUse: 7},
		}},
		{"wider than the level: lingering seats at the limit hold it back", []widthStep{
			{arrive: "w", work: WorkEstimate{InitialSeats: 1, FinalSeats: 4, AdditionalLatency: time.Second}, want: Executing, inUse: 4},
			{finish: "w", inUse: 4},
			{arrive: "big", work: wide(6), want: Queued, inUse: 4},
			{linger: "w", inUse: 6, dispatched: []string{"big"}},
		}},
		{"a wide head waits for its seats, and those behind it wait too", []widthStep{
			{arrive: "a", want: Executing, inUse: 1},
			{arrive: "b", want: Executing, inUse: 2},
			{arrive: "c", want: Executing, inUse: 3},
			{arrive: "big", work: wide(3), want: Queued, inUse: 3},
			{arrive: "d", want: Queued, inUse: 3},
			{finish: "a", inUse: 2},
			{finish: "b", inUse: 4, dispatched: []string{"big"}},
			{finish: "c", inUse: 4, dispatched: []string{"d"}},
		}},
		{"final seats are held from dispatch until the linger ends", []widthStep{
			{arrive: "w", work: write, want: Executing, inUse: 3},
			{arrive: "a", work: wide(2), want: Queued, inUse: 3},
			{finish: "w", inUse: 3},
			{linger: "w", inUse: 2, dispatched: []string{"a"}},
		}},
		{"final seats without additional latency do not linger", []widthStep{
			{arrive: "w", work: WorkEstimate{FinalSeats: 2}, want: Executing, inUse: 2},
			{finish: "w", inUse: 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("w", 1, 0, queuing(1, 1, 50))}, 4)
			reqs := map[string]*Request{}
			names := map[*Request]string{}
			for i, s := range tc.steps {
				var woken []*Request
				switch {
				case s.arrive != "":
					r, err := d.NewRequest("w", flowHash("fs", s.arrive), s.work)
					if err != nil {
						t.Fatal(err)
					}
					reqs[s.arrive], names[r] = r, s.arrive
					if o, _, _ := d.Arrive(r, t0); o != s.want {
						t.Fatalf("step %d: %s arrived %v, want %v", i, s.arrive, o, s.want)
					}
				case s.finish != "":
					woken = d.Finish(reqs[s.finish], t0)
				case s.linger != "":
					woken = d.FinishLinger(reqs[s.linger], t0)
				}
				var got []string
				for _, r := range woken {
					got = append(got, names[r])
				}
				if fmt.Sprint(got) != fmt.Sprint(s.dispatched) {
					t.Errorf("step %d: dispatched %v, want %v", i, got, s.dispatched)
				}
				if n := d.State("w").InUse; n != s.inUse {
					t.Errorf("step %d: %d seats in use, want %d", i, n, s.inUse)
				}
			}
		})
	}
}

// TestRejectLevelWidth: at a level that does not queue, as at
// kube-apiserver's queue sets without queues, a request wider than the
// limit is admitted when none of the level's requests executes (seats
// lingering count only for requests that fit), and its final seats are
// held as they are, not capped at the limit.
func TestRejectLevelWidth(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("r", 1, 0, nil)}, 4)
	arriveR := func(work WorkEstimate, want Outcome) *Request {
		t.Helper()
		r, err := d.NewRequest("r", flowHash("fs", "a"), work)
		if err != nil {
			t.Fatal(err)
		}
		if o, _, _ := d.Arrive(r, t0); o != want {
			t.Fatalf("%+v arrived %v, want %v", work, o, want)
		}
		return r
	}
	w := arriveR(WorkEstimate{InitialSeats: 1, FinalSeats: 4, AdditionalLatency: time.Second}, Executing)
	d.Finish(w, t0) // lingers on the level's 4 seats
	arriveR(WorkEstimate{}, Rejected)
	big := arriveR(WorkEstimate{InitialSeats: 6}, Executing)
	if big.Seats() != 6 || d.State("r").InUse != 10 {
		t.Errorf("the wide request holds %d seats, the level %d; want 6 and 10", big.Seats(), d.State("r").InUse)
	}
	arriveR(WorkEstimate{InitialSeats: 6}, Rejected) // big executes
	d.Finish(big, t0)
	d.FinishLinger(w, t0)
	final := arriveR(WorkEstimate{InitialSeats: 1, FinalSeats: 6, AdditionalLatency: time.Second}, Executing)
	d.Finish(final, t0)
	if final.Seats() != 6 || final.AdditionalLatency() != time.Second {
		t.Errorf("6 final seats over 1 s at a 4-seat Reject level: %d seats for %v, want 6 for 1s", final.Seats(), final.AdditionalLatency())
	}
}

// TestFinalSeatsBeyondTheLimitLingerLonger: final seats more than the
// level's limit are capped at it and held proportionally longer, keeping
// their seat-seconds, as kube-apiserver's queue sets do.
func TestFinalSeatsBeyondTheLimitLingerLonger(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("w", 1, 0, queuing(1, 1, 50))}, 4)
	for _, tc := range []struct {
		final int
		want  time.Duration
	}{{3, time.Second}, {4, time.Second}, {6, 1500 * time.Millisecond}, {10, 2500 * time.Millisecond}} {
		r, err := d.NewRequest("w", flowHash("fs", "a"), WorkEstimate{InitialSeats: 1, FinalSeats: tc.final, AdditionalLatency: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if o, _, _ := d.Arrive(r, t0); o != Executing {
			t.Fatalf("%d final seats: %v", tc.final, o)
		}
		d.Finish(r, t0)
		if got := r.AdditionalLatency(); r.Seats() != min(tc.final, 4) || got != tc.want {
			t.Errorf("%d final seats over 1 s at a 4-seat level: %d seats for %v, want %d for %v", tc.final, r.Seats(), got, min(tc.final, 4), tc.want)
		}
		d.FinishLinger(r, t0)
	}
}

// TestLingeringFinishDispatches: a request that finishes and lingers
// keeps its seats, but its queue is charged what it really took, which
// can make another queue's request the next pick; one that fits starts
// then, as kube-apiserver dispatches after every finish.
func TestLingeringFinishDispatches(t *testing.T) {
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("w", 1, 0, queuing(128, 1, 50))}, 3)
	arriveW := func(flow string, work WorkEstimate, want Outcome) *Request {
		t.Helper()
		r, err := d.NewRequest("w", flowHash("fs", flow), work)
		if err != nil {
			t.Fatal(err)
		}
		if o, _, _ := d.Arrive(r, t0); o != want {
			t.Fatalf("%s %+v: %v, want %v", flow, work, o, want)
		}
		return r
	}
	a1 := arriveW("a", WorkEstimate{InitialSeats: 2, FinalSeats: 1, AdditionalLatency: time.Millisecond}, Executing)
	b1 := arriveW("b", WorkEstimate{}, Executing)
	arriveW("b", WorkEstimate{InitialSeats: 2}, Queued) // the next pick: it waits for 2 seats
	a2 := arriveW("a", WorkEstimate{}, Queued)
	if woken := d.Finish(b1, t0); len(woken) != 0 {
		t.Fatalf("b1 done: started %d, want none (b2 needs 2 seats, 1 is free)", len(woken))
	}
	// a1 took no time, not the 3 ms its queue was charged: a2 is now
	// picked before b2, and fits in the free seat.
	if woken := d.Finish(a1, t0); len(woken) != 1 || woken[0] != a2 {
		t.Fatalf("a1 done, lingering: started %d requests, want a2", len(woken))
	}
}

// TestLingeringIsGivenBack: a request with final seats keeps them after
// Release for its additional latency, and the Controller's timer gives
// them back; once Run's context ends they are given back at once.
func TestLingeringIsGivenBack(t *testing.T) {
	noLeak(t)
	c, _ := oneSeat(t, time.Minute)
	short := WorkEstimate{FinalSeats: 1, AdditionalLatency: 20 * time.Millisecond}
	r, err := c.WaitFor(context.Background(), classifyGet(c, "a"), short)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(r)
	if s := c.state(); s.InUse != 1 {
		t.Fatalf("right after Release: %d seats in use, want the final one", s.InUse)
	}
	waitFor(t, func() bool { return c.state().InUse == 0 })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	long := WorkEstimate{FinalSeats: 1, AdditionalLatency: time.Hour}
	r, err = c.WaitFor(context.Background(), classifyGet(c, "a"), long)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(r)
	if s := c.state(); s.InUse != 1 {
		t.Fatalf("lingering for an hour: %d seats in use, want 1", s.InUse)
	}
	cancel()
	<-done
	if s := c.state(); s.InUse != 0 {
		t.Fatalf("after Run ended: %d seats in use, want 0", s.InUse)
	}
	// From now on, nothing lingers.
	r, err = c.WaitFor(context.Background(), classifyGet(c, "a"), long)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(r)
	if s := c.state(); s.InUse != 0 {
		t.Fatalf("released after Run ended: %d seats in use, want 0", s.InUse)
	}
}
