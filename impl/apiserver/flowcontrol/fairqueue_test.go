package flowcontrol

import (
	"fmt"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// t0 is the time the Dispatcher tests start at.
var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// fairRun is a level of seats seats with many queues (so that flows
// rarely share one), fed and drained on a clock that each Finish moves on
// by the finished request's execution time.
type fairRun struct {
	t       *testing.T
	d       *Dispatcher
	now     time.Time
	flowOf  map[*Request]string
	running []*Request // oldest first
	order   []string   // flows in the order their queued requests were dispatched
}

func newFairRun(t *testing.T, seats int) *fairRun {
	t.Helper()
	d := mustDispatcher(t, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("f", 1, 0, queuing(128, 1, 1000))}, seats)
	return &fairRun{t: t, d: d, now: t0, flowOf: map[*Request]string{}}
}

func (f *fairRun) arrive(flow string, work WorkEstimate, n int) {
	f.t.Helper()
	for range n {
		r, err := f.d.NewRequest("f", flowHash("fs", flow), work)
		if err != nil {
			f.t.Fatal(err)
		}
		f.flowOf[r] = flow
		switch o, reason, _ := f.d.Arrive(r, f.now); o {
		case Executing:
			f.running = append(f.running, r)
		case Rejected:
			f.t.Fatalf("%s rejected: %s", flow, reason)
		}
	}
}

// finishOldest ends the oldest running request after it executed for took,
// and keeps what that dispatched running.
func (f *fairRun) finishOldest(took time.Duration) {
	f.t.Helper()
	if len(f.running) == 0 {
		f.t.Fatal("nothing running")
	}
	r := f.running[0]
	f.running = f.running[1:]
	f.now = f.now.Add(took)
	for _, w := range f.d.Finish(r, f.now) {
		f.order = append(f.order, f.flowOf[w])
		f.running = append(f.running, w)
	}
}

// count is how many of the first n dispatches went to flow.
func (f *fairRun) count(flow string, n int) int {
	c := 0
	for _, o := range f.order[:min(n, len(f.order))] {
		if o == flow {
			c++
		}
	}
	return c
}

func TestFairQueuing(t *testing.T) {
	one := WorkEstimate{}
	for _, tc := range []struct {
		name  string
		seats int
		run   func(f *fairRun)
		check func(t *testing.T, f *fairRun)
	}{{
		name: "equal flows alternate", seats: 1,
		run: func(f *fairRun) {
			f.arrive("hold", one, 1)
			f.arrive("a", one, 5)
			f.arrive("b", one, 5)
			for range 10 {
				f.finishOldest(100 * time.Millisecond)
			}
		},
		check: func(t *testing.T, f *fairRun) {
			if got := strings.Join(f.order, ""); got != "ababababab" && got != "babababababa"[:10] {
				t.Errorf("dispatch order %s, want a and b alternating", got)
			}
		},
	}, {
		name: "a flood and a trickle share the seats equally", seats: 2,
		run: func(f *fairRun) {
			f.arrive("hold", one, 2)
			f.arrive("flood", one, 200)
			f.arrive("trickle", one, 20)
			for range 40 {
				f.finishOldest(50 * time.Millisecond)
			}
		},
		check: func(t *testing.T, f *fairRun) {
			if n := f.count("trickle", 40); n < 19 || n > 20 {
				t.Errorf("the trickle got %d of the first 40 dispatches, want about half (%v)", n, f.order)
			}
		},
	}, {
		name: "a flow arriving late is not behind the flood's backlog", seats: 1,
		run: func(f *fairRun) {
			f.arrive("hold", one, 1)
			f.arrive("flood", one, 100)
			for range 30 {
				f.finishOldest(time.Second)
			}
			f.arrive("late", one, 3)
			for range 6 {
				f.finishOldest(time.Second)
			}
		},
		check: func(t *testing.T, f *fairRun) {
			if got := f.order[30:]; fmt.Sprint(got) != "[late flood late flood late flood]" && fmt.Sprint(got) != "[flood late flood late flood late]" {
				t.Errorf("after the late flow arrived: %v, want it every other dispatch", got)
			}
		},
	}, {
		name: "a wide request is not starved by narrow ones", seats: 4,
		run: func(f *fairRun) {
			f.arrive("narrow", one, 4)
			f.arrive("narrow", one, 100)
			f.arrive("wide", WorkEstimate{InitialSeats: 4}, 1)
			// (Narrow requests much shorter than estimated would earn
			// their queue credit and go first for longer: the wide one
			// waits until their queue's virtual time passes its own.)
			for range 12 {
				f.finishOldest(time.Second)
			}
		},
		check: func(t *testing.T, f *fairRun) {
			if f.count("wide", 12) != 1 {
				t.Errorf("the wide request was not dispatched: %v", f.order)
			}
		},
	}, {
		// kube-apiserver's queue sets estimate 3 ms of execution: a
		// queue is charged that much for a request in flight, and what
		// it really took when it finishes.
		name: "a request in flight is charged the 3 ms estimate until it finishes", seats: 2,
		run: func(f *fairRun) {
			f.arrive("a", one, 1)
			f.arrive("b", one, 1)
			f.arrive("a", one, 1)
			f.arrive("b", one, 1)
			// a's first request took 100 ms; b's still runs, charged 3 ms.
			f.finishOldest(100 * time.Millisecond)
		},
		check: func(t *testing.T, f *fairRun) {
			if fmt.Sprint(f.order) != "[b]" {
				t.Errorf("dispatched %v when a's first request finished, want b's (less charged)", f.order)
			}
		},
	}, {
		name: "a flow of long requests gets fewer dispatches than one of short ones", seats: 1,
		run: func(f *fairRun) {
			f.arrive("hold", one, 1)
			// Both flows' requests are estimated alike; a request's
			// real duration corrects its queue's virtual time when
			// it ends.
			f.arrive("slow", one, 30)
			f.arrive("fast", one, 30)
			for range 30 {
				took := 10 * time.Millisecond
				if f.flowOf[f.running[0]] == "slow" {
					took = 2 * time.Second
				}
				f.finishOldest(took)
			}
		},
		check: func(t *testing.T, f *fairRun) {
			if slow, fast := f.count("slow", 30), f.count("fast", 30); slow >= fast {
				t.Errorf("slow %d, fast %d dispatches: the slow flow's longer service was not charged", slow, fast)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFairRun(t, tc.seats)
			tc.run(f)
			tc.check(t, f)
		})
	}
}
