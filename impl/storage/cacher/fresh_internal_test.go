package cacher

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// progressStore answers a progress request by advancing the cache to rv
// a while later, as etcd's progress notification does.
type progressStore struct {
	Upstream
	c  *Cacher
	rv int64
}

func (s progressStore) RequestWatchProgress(context.Context) error {
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.c.mu.Lock()
		s.c.advanceLocked(s.rv)
		s.c.mu.Unlock()
	}()
	return nil
}

// countingContext counts how often its Done channel is asked for: once per
// turn of a wait loop that selects on it.
type countingContext struct {
	context.Context
	turns *atomic.Int64
}

func (c countingContext) Done() <-chan struct{} {
	c.turns.Add(1)
	return c.Context.Done()
}

// A ready cache that is behind the revision a request needs waits for its
// progress without spinning: a handful of turns of its wait loop, not one
// per microsecond.
func TestWaitUntilFreshDoesNotSpinWhileReady(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	c := &Cacher{ready: true, readyCh: ready, rv: 5, progressCh: make(chan struct{}),
		stopped: make(chan struct{}), tooLarge: 10 * time.Second}
	c.store = progressStore{c: c, rv: 9}
	var turns atomic.Int64
	if err := c.waitUntilFresh(countingContext{context.Background(), &turns}, "/k", 9); err != nil {
		t.Fatal(err)
	}
	if n := turns.Load(); n > 20 {
		t.Fatalf("waiting 100 ms for progress took %d turns of the wait loop: it spins", n)
	}
}
