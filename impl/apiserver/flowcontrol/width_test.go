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
		{"wider than the level: capped at its 4 seats", []widthStep{
			{arrive: "a", work: wide(10), want: Executing, inUse: 4},
			{arrive: "b", want: Queued, inUse: 4},
			{finish: "a", inUse: 1, dispatched: []string{"b"}},
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
					if o, _ := d.Arrive(r, t0); o != s.want {
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
