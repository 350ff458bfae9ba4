package cacher_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// A watch from the cache says it is initialized (for API Priority and
// Fairness) only once its reader has every initial event: not while the
// reader has not taken them, and at once when there are none.
func TestWatchInitializedAfterTheInitialEvents(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	const n = 5
	var last int64
	for i := range n {
		last = create(t, c, res, cm(fmt.Sprintf("cm%d", i), nil, "x"))
	}
	// The cache has them all (its initial events are these n).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, err := c.Stats(context.Background()); err == nil && st.ObjectCount == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never held the objects")
		}
	}
	watchFrom := func(rv string, sendInitial *bool) (watch.Interface, *atomic.Int32) {
		var calls atomic.Int32
		ctx := storage.WithWatchInitialized(context.Background(), func() { calls.Add(1) })
		opts := storage.ListOptions{Recursive: true, ResourceVersion: rv, Predicate: everything(true), SendInitialEvents: sendInitial}
		if sendInitial != nil {
			opts.ResourceVersionMatch = "NotOlderThan"
		}
		w, err := c.Watch(ctx, res.ResourcePrefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		return w, &calls
	}
	settle := func() { time.Sleep(50 * time.Millisecond) }
	yes := true

	for _, tc := range []struct {
		name        string
		rv          string
		sendInitial *bool
		initial     int // events before the watch is initialized
	}{
		{"from resourceVersion 0", "0", nil, n},
		{"a watch-list", "", &yes, n + 1}, // and the end-of-initial-events bookmark
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, calls := watchFrom(tc.rv, tc.sendInitial)
			defer w.Stop()
			for i := range tc.initial {
				settle()
				if got := calls.Load(); got != 0 {
					t.Fatalf("initialized after %d of %d initial events", i, tc.initial)
				}
				select {
				case <-w.ResultChan():
				case <-time.After(5 * time.Second):
					t.Fatalf("initial event %d did not come", i)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for calls.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := calls.Load(); got != 1 {
				t.Fatalf("after the initial events: initialized %d times, want 1", got)
			}
		})
	}

	t.Run("from a resourceVersion: no initial events", func(t *testing.T) {
		w, calls := watchFrom(fmt.Sprint(last), nil)
		defer w.Stop()
		deadline := time.Now().Add(5 * time.Second)
		for calls.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := calls.Load(); got != 1 {
			t.Fatalf("initialized %d times, want 1", got)
		}
	})

	t.Run("a reader that goes away", func(t *testing.T) {
		w, calls := watchFrom("0", nil)
		<-w.ResultChan()
		w.Stop() // with initial events still unsent
		if got := calls.Load(); got != 0 {
			t.Fatalf("a watch stopped during its initial events says it is initialized (%d)", got)
		}
	})
}
