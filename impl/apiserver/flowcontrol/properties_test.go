package flowcontrol

import (
	"fmt"
	"slices"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"pgregory.net/rapid"
)

// TestDispatcherProperties drives two levels that lend half their seats
// with random arrivals (flows, widths, final seats), finishes, linger
// ends, departures, borrowing adjustments, changes of a level's number of
// queues and clock steps, and checks
// after every step that no seat is over-allocated and the books add up;
// at the end, finishing everything dispatches every request still queued.
func TestDispatcherProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		levels := func(queues int32) []*flowcontrolv1.PriorityLevelConfiguration {
			return []*flowcontrolv1.PriorityLevelConfiguration{
				limitedLevel("a", 1, 50, queuing(queues, min(queues, 2), 4)),
				limitedLevel("b", 1, 50, queuing(4, 1, 2)),
			}
		}
		d, err := NewDispatcher(levels(8), 6)
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		var queued, executing, lingering []*Request
		// started: the levels where the step started a request.
		started := map[*level]bool{}
		// collect moves the requests a call dispatched to executing.
		collect := func(woken []*Request) {
			for _, r := range woken {
				started[r.level] = true
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
			switch op := rapid.IntRange(0, 6).Draw(rt, "op"); {
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
				o, _, woken := d.Arrive(r, now)
				switch o {
				case Executing:
					started[r.level] = true
					executing = append(executing, r)
				case Queued:
					queued = append(queued, r)
				}
				collect(woken)
			case op == 2 && len(executing) > 0:
				r := takeOne(&executing, "finish")
				collect(d.Finish(r, now))
				if r.AdditionalLatency() > 0 {
					lingering = append(lingering, r)
				}
			case op == 3 && len(lingering) > 0:
				collect(d.FinishLinger(takeOne(&lingering, "linger"), now))
			case op == 4 && len(queued) > 0:
				left, woken := d.Leave(takeOne(&queued, "leave"), now)
				if !left {
					rt.Fatal("a queued request could not leave")
				}
				collect(woken)
			case op == 5:
				collect(d.AdjustBorrowing(now))
			case op == 6:
				woken, err := d.Reconfigure(levels(int32(rapid.IntRange(1, 8).Draw(rt, "queues"))), now)
				if err != nil {
					rt.Fatal(err)
				}
				collect(woken)
			}
			checkBooks(rt, d, executing, lingering, queued, started)
			clear(started)
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
			checkBooks(rt, d, executing, lingering, queued, started)
			clear(started)
		}
		if len(queued) > 0 {
			rt.Fatalf("%d requests still queued with every seat free", len(queued))
		}
	})
}

// checkBooks: every level holds the seats of its executing and lingering
// requests; a level where a request started is within its current limit
// unless that request alone executes (one wider than the limit starts
// once nothing of its level executes, lingering seats aside); the current
// limits share out the nominal ones, each within its bounds; the queues'
// counts match the requests in them, and a level has at least the queues
// configured, none dropped, and those its requests wait in or execute
// from.
func checkBooks(rt *rapid.T, d *Dispatcher, executing, lingering, queued []*Request, started map[*level]bool) {
	held := map[*level]int{}
	holders := map[*level]int{}
	waiting := map[*level]int{}
	for _, r := range slices.Concat(executing, lingering) {
		held[r.level] += r.seats
	}
	for _, r := range executing {
		holders[r.level]++
		if r.queue != nil && !slices.Contains(r.level.queues, r.queue) {
			rt.Fatalf("level %s: a request executes from a queue it no longer has", r.level.name)
		}
	}
	for _, r := range queued {
		waiting[r.level]++
		if !slices.Contains(r.level.queues, r.queue) {
			rt.Fatalf("level %s: a request waits in a queue it no longer has", r.level.name)
		}
	}
	currentSum := 0
	for _, l := range d.levels {
		if l.inUse != held[l] {
			rt.Fatalf("level %s: %d seats in use, its requests hold %d", l.name, l.inUse, held[l])
		}
		// An adjustment may lower a limit below what is in use; then
		// nothing starts until the level is back within it.
		if started[l] && l.inUse > l.current && holders[l] > 1 {
			rt.Fatalf("level %s: a start made %d executing requests hold %d seats, over its current limit %d", l.name, holders[l], l.inUse, l.current)
		}
		if l.current < l.lowerLimit() || l.current > l.upperLimit() {
			rt.Fatalf("level %s: current limit %d outside [%d, %d]", l.name, l.current, l.lowerLimit(), l.upperLimit())
		}
		currentSum += l.current
		if l.waiting != waiting[l] {
			rt.Fatalf("level %s: %d waiting, %d queued", l.name, l.waiting, waiting[l])
		}
		if len(l.queues) < l.numQueues {
			rt.Fatalf("level %s: %d queues, %d configured", l.name, len(l.queues), l.numQueues)
		}
		active, requested, inQueues, waitingSeats := 0, 0, 0, 0
		for i := range l.queues {
			q := l.queues[i]
			if q.dropped {
				rt.Fatalf("level %s: queue %d is dropped", l.name, i)
			}
			if q.active() {
				active++
			}
			requested += q.seatsInUse + q.waitingSeats
			inQueues += len(q.waiting)
			waitingSeats += q.waitingSeats
		}
		if active != l.active || requested != l.seatsRequested || inQueues != l.waiting || waitingSeats != l.waitingSeats {
			rt.Fatalf("level %s: counted %d active queues, %d seats requested, %d waiting (%d seats); the queues say %d, %d, %d (%d)",
				l.name, l.active, l.seatsRequested, l.waiting, l.waitingSeats, active, requested, inQueues, waitingSeats)
		}
	}
	// Each level's share is rounded: the sum may be off by one per level.
	if diff := currentSum - d.nominalSum; diff > len(d.levels) || -diff > len(d.levels) {
		rt.Fatalf("current limits sum to %d, the nominal ones to %d", currentSum, d.nominalSum)
	}
}
