package workloop

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
