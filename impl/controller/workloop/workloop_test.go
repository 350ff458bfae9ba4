package workloop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestRunRetriesFailuresAndStopsCleanly(t *testing.T) {
	before := runtime.NumGoroutine()
	q := NewQueue("test")
	var calls atomic.Int32
	synced := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		Run(ctx, "test", q, 2, func(_ context.Context, key string) error {
			if calls.Add(1) < 3 {
				return errors.New("transient")
			}
			synced <- key
			return nil
		})
	}()
	q.Add("ns/a")
	select {
	case key := <-synced:
		if key != "ns/a" || calls.Load() != 3 {
			t.Fatalf("key %q after %d calls, want ns/a after 3", key, calls.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a failing key was not retried until it succeeded")
	}
	if q.NumRequeues("ns/a") != 0 {
		t.Fatal("a successful sync must forget the key's failures")
	}
	cancel()
	wg.Wait()
	if !q.ShuttingDown() {
		t.Fatal("Run must shut its queue down")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+1 {
		t.Fatalf("%d goroutines after Run returned, %d before", n, before)
	}
}

// TestRunWithMaxRetriesDropsTheKey: a key that always fails is synced
// once and retried maxRetries times, then dropped (forgotten, not queued).
func TestRunWithMaxRetriesDropsTheKey(t *testing.T) {
	// No back-off delay, so the retries follow one another at once.
	q := workqueue.NewTypedRateLimitingQueue[string](workqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0))
	const maxRetries = 4
	var calls int // one worker
	verdict := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		RunWithMaxRetries(ctx, "test", q, 1, maxRetries, func(_ context.Context, key string) error {
			if key == "check" {
				// Queued by the last allowed attempt, before the worker
				// decided about it: a retry would be queued behind it.
				verdict <- fmt.Sprintf("calls=%d queued=%d requeues=%d", calls, q.Len(), q.NumRequeues("ns/a"))
				return nil
			}
			calls++
			if calls == maxRetries+1 {
				q.Add("check")
			}
			return errors.New("always")
		})
	}()
	q.Add("ns/a")
	select {
	case got := <-verdict:
		if want := fmt.Sprintf("calls=%d queued=0 requeues=0", maxRetries+1); got != want {
			t.Errorf("%s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failing key was not retried")
	}
	cancel()
	wg.Wait()
}
