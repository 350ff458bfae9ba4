package request

import (
	"context"
	"sync"
	"time"
)

// SweepInterval bounds how late a request context's Done channel closes
// after its deadline passes or its parent ends: the sweeper looks at the
// contexts someone waits on every SweepInterval. Err and Done see an
// expired deadline or an ended parent at once when they are called; only a
// goroutine already blocked on Done waits up to SweepInterval (plus
// scheduling delay) longer than with context.WithTimeout. Against the
// request timeouts (a minute by default) and the etcd server's own
// request timeout (seconds) that lateness does not change an answer.
const SweepInterval = 50 * time.Millisecond

// deadline is the request timeout kept in the request's context node
// (stateCtx) in place of context.WithTimeout's timerCtx: no runtime timer
// and no registration in the parent's children map per request. Until
// someone asks for Done (or derives a cancelable context, which asks for
// it) nothing is registered anywhere; after that the context is in the
// sweeper's set until it ends.
type deadline struct {
	at time.Time // set once by WithTimeout, before the context is shared

	mu     sync.Mutex
	done   chan struct{} // made by the first Done; closed when the context ends
	err    error         // non-nil once the context ended
	afters []func()      // AfterFunc callbacks to run when it ends; nil: stopped
	swept  bool          // in the sweeper's set

	slot int // index in the sweeper's set; under the sweeper's lock
}

func (c *stateCtx) Deadline() (time.Time, bool) {
	if !c.timed {
		return c.Context.Deadline()
	}
	return c.dl.at, true
}

func (c *stateCtx) Done() <-chan struct{} {
	if !c.timed {
		return c.Context.Done()
	}
	d := &c.dl
	d.mu.Lock()
	if d.done == nil {
		d.done = make(chan struct{})
		if d.err == nil {
			d.err = c.endedNow()
		}
		if d.err != nil {
			close(d.done)
		} else {
			d.swept = true
			sweep.add(c)
		}
	}
	done := d.done
	d.mu.Unlock()
	return done
}

func (c *stateCtx) Err() error {
	if !c.timed {
		return c.Context.Err()
	}
	d := &c.dl
	d.mu.Lock()
	if d.err != nil {
		err := d.err
		d.mu.Unlock()
		return err
	}
	d.mu.Unlock()
	if err := c.endedNow(); err != nil {
		c.end(err)
	}
	d.mu.Lock()
	err := d.err
	d.mu.Unlock()
	return err
}

// endedNow is why c should end now (its parent ended or its deadline
// passed), or nil.
func (c *stateCtx) endedNow() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.dl.at) {
		return context.DeadlineExceeded
	}
	return nil
}

// AfterFunc lets contexts derived from c (context.WithCancel and the like
// find it through this method) end with c without a goroutine each: f runs
// once c ends, unless stop was called first.
func (c *stateCtx) AfterFunc(f func()) (stop func() bool) {
	if !c.timed {
		return context.AfterFunc(c.Context, f)
	}
	c.Done() // registers c with the sweeper, or finds it ended
	d := &c.dl
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	i := len(d.afters)
	d.afters = append(d.afters, f)
	d.mu.Unlock()
	return func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.err != nil || d.afters[i] == nil {
			return false
		}
		d.afters[i] = nil
		return true
	}
}

// end ends c with err unless it already ended: Err returns err from now
// on, Done closes, the AfterFunc callbacks run and c leaves the sweeper's
// set.
func (c *stateCtx) end(err error) {
	d := &c.dl
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		return
	}
	d.err = err
	if d.done != nil {
		close(d.done)
	}
	afters := d.afters
	d.afters = nil
	if d.swept {
		d.swept = false
		sweep.remove(c)
	}
	d.mu.Unlock()
	for _, f := range afters {
		if f != nil {
			f()
		}
	}
}

// cancel is the CancelFunc of WithTimeout.
func (c *stateCtx) cancel() { c.end(context.Canceled) }

// sweeper closes the Done channels of the request contexts in its set
// whose deadline passed or whose parent ended. Its goroutine runs while
// the set is not empty and exits once it is.
type sweeper struct {
	mu      sync.Mutex
	live    []*stateCtx
	running bool
}

var sweep sweeper

// add puts c in the set; c's deadline lock is held.
func (s *sweeper) add(c *stateCtx) {
	s.mu.Lock()
	c.dl.slot = len(s.live)
	s.live = append(s.live, c)
	if !s.running {
		s.running = true
		go s.run()
	}
	s.mu.Unlock()
}

// remove takes c out of the set; c's deadline lock is held.
func (s *sweeper) remove(c *stateCtx) {
	s.mu.Lock()
	i, last := c.dl.slot, len(s.live)-1
	s.live[i] = s.live[last]
	s.live[i].dl.slot = i
	s.live[last] = nil
	s.live = s.live[:last]
	s.mu.Unlock()
}

func (s *sweeper) run() {
	var ending []*stateCtx
	for {
		time.Sleep(SweepInterval)
		s.mu.Lock()
		if len(s.live) == 0 {
			s.running = false
			s.live = nil
			s.mu.Unlock()
			return
		}
		now := time.Now()
		for _, c := range s.live {
			if !now.Before(c.dl.at) || c.Context.Err() != nil {
				ending = append(ending, c)
			}
		}
		s.mu.Unlock()
		// Ended outside the sweeper's lock: end takes the context's lock
		// first, then the sweeper's.
		for i, c := range ending {
			if err := c.endedNow(); err != nil {
				c.end(err)
			}
			ending[i] = nil
		}
		ending = ending[:0]
	}
}
