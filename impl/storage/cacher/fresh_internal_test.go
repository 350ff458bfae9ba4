package cacher

import (
	"context"
	"runtime"
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

// A ready cache that is behind the revision a request needs waits for its
// progress without spinning: a handful of wake-ups, not one per
// microsecond (each spin allocates a timer, which is what is counted).
func TestWaitUntilFreshDoesNotSpinWhileReady(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	c := &Cacher{ready: true, readyCh: ready, rv: 5, progressCh: make(chan struct{}),
		stopped: make(chan struct{}), tooLarge: 10 * time.Second}
	c.store = progressStore{c: c, rv: 9}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := c.waitUntilFresh(context.Background(), "/k", 9); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 500 {
		t.Fatalf("waiting 100 ms for progress took %d allocations: the wait spins", n)
	}
}
