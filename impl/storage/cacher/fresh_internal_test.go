package cacher

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
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
	if err := c.waitUntilFresh(countingContext{context.Background(), &turns}, "/k", 9, false); err != nil {
		t.Fatal(err)
	}
	if n := turns.Load(); n > 20 {
		t.Fatalf("waiting 100 ms for progress took %d turns of the wait loop: it spins", n)
	}
}

// relistingStore answers a progress request by taking the cache out of
// ready a while later, as a relist does (its watch broke or fell behind a
// compaction), and counts the reads that came to it.
type relistingStore struct {
	Upstream
	c     *Cacher
	gets  atomic.Int32
	lists atomic.Int32
}

func (s *relistingStore) RequestWatchProgress(context.Context) error {
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.c.mu.Lock()
		s.c.ready = false
		s.c.mu.Unlock()
	}()
	return nil
}

func (s *relistingStore) Get(context.Context, string, storage.GetOptions, runtime.Object) error {
	s.gets.Add(1)
	return nil
}

func (s *relistingStore) GetList(context.Context, string, storage.ListOptions, runtime.Object) error {
	s.lists.Add(1)
	return nil
}

// A read waiting for the cache to catch up that finds it relisting reads
// etcd instead of waiting for the relist: no error after the wait (which
// became a 500 under load), the read served by the store.
func TestReadsGoToEtcdWhileTheCacheRelists(t *testing.T) {
	for _, tc := range []struct {
		name string
		read func(c *Cacher) error
		n    func(s *relistingStore) int32
	}{
		{"get", func(c *Cacher) error {
			return c.Get(context.Background(), "/k", storage.GetOptions{ResourceVersion: "9"}, &corev1.Pod{})
		}, func(s *relistingStore) int32 { return s.gets.Load() }},
		{"list", func(c *Cacher) error {
			return c.GetList(context.Background(), "/k", storage.ListOptions{ResourceVersion: "9", Recursive: true, Predicate: storage.Everything()}, &corev1.PodList{})
		}, func(s *relistingStore) int32 { return s.lists.Load() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := make(chan struct{})
			close(ready)
			c := &Cacher{ready: true, readyCh: ready, rv: 5, progressCh: make(chan struct{}),
				stopped: make(chan struct{}), tooLarge: time.Minute}
			s := &relistingStore{c: c}
			c.store = s
			done := make(chan error, 1)
			go func() { done <- tc.read(c) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("read while the cache relists: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the read waited for the relist instead of reading etcd")
			}
			if n := tc.n(s); n != 1 {
				t.Fatalf("reads served by etcd: %d, want 1", n)
			}
		})
	}
}
