package flowcontrol

import (
	"fmt"
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"pgregory.net/rapid"
)

// TestDispatcherProperties drives two levels that lend each other half
// their seats with random arrivals (flows, widths, final seats), finishes,
// linger ends, departures and clock steps, and checks after every step
// that no seat is over-allocated and the books add up; at the end,
// finishing everything dispatches every request still queued.
func TestDispatcherProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d, err := NewDispatcher([]*flowcontrolv1.PriorityLevelConfiguration{
			limitedLevel("a", 1, 50, queuing(8, 2, 4)),
			limitedLevel("b", 1, 50, queuing(4, 1, 2)),
		}, 6)
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		var queued, executing, lingering []*Request
		// collect moves the requests a call dispatched to executing.
		collect := func(woken []*Request) {
			for _, r := range woken {
				i := slices.Index(queued, r)
				if i < 0 {
					rt.Fatalf("dispatched a request that was not queued")
				}
				queued = slices.Delete(queued, i, i+1)
				executing = append(executing, r)
			}
		}
		takeOne := func(rs *[]*Request, label string) *Request {
			i := rapid.IntRange(0, len(*rs)-1).Draw(rt, label)
			r := (*rs)[i]
			*rs = slices.Delete(*rs, i, i+1)
			return r
		}
		steps := rapid.IntRange(1, 200).Draw(rt, "steps")
		for range steps {
			now = now.Add(time.Duration(rapid.IntRange(0, 2000).Draw(rt, "ms")) * time.Millisecond)
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); {
			case op <= 1:
				work := WorkEstimate{InitialSeats: rapid.IntRange(0, 4).Draw(rt, "initial")}
				if rapid.Bool().Draw(rt, "final") {
					work.FinalSeats = rapid.IntRange(1, 4).Draw(rt, "finalSeats")
					work.AdditionalLatency = time.Second
				}
				lv := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "level")
				flow := rapid.IntRange(0, 5).Draw(rt, "flow")
				r, err := d.NewRequest(lv, flowHash("fs", fmt.Sprint(flow)), work)
				if err != nil {
					rt.Fatal(err)
				}
				switch o, _ := d.Arrive(r, now); o {
				case Executing:
					executing = append(executing, r)
				case Queued:
					queued = append(queued, r)
				}
			case op == 2 && len(executing) > 0:
				r := takeOne(&executing, "finish")
				collect(d.Finish(r, now))
				if r.AdditionalLatency() > 0 {
					lingering = append(lingering, r)
				}
			case op == 3 && len(lingering) > 0:
				collect(d.FinishLinger(takeOne(&lingering, "linger"), now))
			case op == 4 && len(queued) > 0:
				if !d.Leave(takeOne(&queued, "leave"), now) {
					rt.Fatal("a queued request could not leave")
				}
			}
			checkBooks(rt, d, executing, lingering, queued)
		}
		for len(executing)+len(lingering) > 0 {
			now = now.Add(time.Second)
			if len(lingering) > 0 {
				collect(d.FinishLinger(takeOne(&lingering, "drain-linger"), now))
				continue
			}
			r := takeOne(&executing, "drain")
			collect(d.Finish(r, now))
			if r.AdditionalLatency() > 0 {
				lingering = append(lingering, r)
			}
			checkBooks(rt, d, executing, lingering, queued)
		}
		if len(queued) > 0 {
			rt.Fatalf("%d requests still queued with every seat free", len(queued))
		}
	})
}

// checkBooks: every level holds the seats of its executing and lingering
// requests, within its reserved seats plus what the pool lends; the pool
// is not overdrawn; the queues' counts match the requests in them.
func checkBooks(rt *rapid.T, d *Dispatcher, executing, lingering, queued []*Request) {
	held := map[*level]int{}
	waiting := map[*level]int{}
	for _, r := range slices.Concat(executing, lingering) {
		held[r.level] += r.seats
	}
	for _, r := range queued {
		waiting[r.level]++
	}
	lent := 0
	for _, l := range d.levels {
		if l.inUse != held[l] {
			rt.Fatalf("level %s: %d seats in use, its requests hold %d", l.name, l.inUse, held[l])
		}
		if l.inUse > l.reserved()+d.pool {
			rt.Fatalf("level %s: %d seats in use, more than its %d reserved and the pool's %d", l.name, l.inUse, l.reserved(), d.pool)
		}
		if l.waiting != waiting[l] {
			rt.Fatalf("level %s: %d waiting, %d queued", l.name, l.waiting, waiting[l])
		}
		active, requested, inQueues := 0, 0, 0
		for i := range l.queues {
			q := &l.queues[i]
			if q.active() {
				active++
			}
			requested += q.seatsInUse + q.waitingSeats
			inQueues += len(q.waiting)
		}
		if active != l.active || requested != l.seatsRequested || inQueues != l.waiting {
			rt.Fatalf("level %s: counted %d active queues, %d seats requested, %d waiting; the queues say %d, %d, %d",
				l.name, l.active, l.seatsRequested, l.waiting, active, requested, inQueues)
		}
		lent += l.borrowed(l.inUse)
	}
	if lent != d.lent || lent > d.pool {
		rt.Fatalf("%d seats lent (the Dispatcher counts %d), pool %d", lent, d.lent, d.pool)
	}
}
