package request

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitDone fails the test when ctx's Done has not closed after a long
// time (the sweeper's bound is SweepInterval; this only guards a hang).
func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Done never closed", what)
	}
}

// The request deadline kept in the WithInfo node ends the request as
// context.WithTimeout's would: the deadline, the parent's end and cancel
// each close Done and set Err, for waiters and for derived contexts.
func TestRequestDeadlineEndsTheRequest(t *testing.T) {
	info := &Info{Verb: "create"}
	t.Run("the deadline closes Done for a waiter and ends derived contexts", func(t *testing.T) {
		ctx, cancel := WithTimeout(WithInfo(context.Background(), info), 20*time.Millisecond)
		defer cancel()
		if _, ok := ctx.(*stateCtx); !ok {
			t.Fatalf("got %T, want the WithInfo node", ctx)
		}
		child, cancelChild := context.WithTimeout(ctx, time.Hour) // as the etcd server does
		defer cancelChild()
		waitDone(t, ctx, "request")
		waitDone(t, child, "derived")
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Fatalf("err %v, derived %v; want DeadlineExceeded", ctx.Err(), child.Err())
		}
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) || !errors.Is(context.Cause(child), context.DeadlineExceeded) {
			t.Fatalf("cause %v, derived %v; want DeadlineExceeded", context.Cause(ctx), context.Cause(child))
		}
	})
	t.Run("Err sees a passed deadline at once, without the sweeper", func(t *testing.T) {
		ctx, cancel := WithTimeout(WithInfo(context.Background(), info), -time.Second)
		defer cancel()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("err %v, want DeadlineExceeded", ctx.Err())
		}
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Err is set but Done is open")
		}
	})
	t.Run("the parent's end closes Done", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := WithTimeout(WithInfo(parent, info), time.Hour)
		defer cancel()
		done := ctx.Done()
		cancelParent()
		waitDone(t, ctx, "request")
		if ctx.Err() != context.Canceled {
			t.Fatalf("err %v, want Canceled", ctx.Err())
		}
		if ctx.Done() != done {
			t.Fatal("Done returned another channel")
		}
	})
	t.Run("cancel ends it and what was derived, at once", func(t *testing.T) {
		ctx, cancel := WithTimeout(WithInfo(context.Background(), info), time.Hour)
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		cancel()
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Done open after cancel")
		}
		select {
		case <-child.Done():
		default:
			t.Fatal("a derived context is not done after cancel")
		}
		<-ran
		if ctx.Err() != context.Canceled || child.Err() != context.Canceled {
			t.Fatalf("err %v, derived %v; want Canceled", ctx.Err(), child.Err())
		}
		cancel() // twice is harmless
		if ctx.Err() != context.Canceled {
			t.Fatal("a second cancel changed Err")
		}
	})
	t.Run("a derived context stopped first is not ended with it", func(t *testing.T) {
		ctx, cancel := WithTimeout(WithInfo(context.Background(), info), time.Hour)
		child, cancelChild := context.WithCancel(ctx)
		cancelChild()
		cancel()
		if !errors.Is(context.Cause(child), context.Canceled) || child.Err() != context.Canceled {
			t.Fatalf("derived: err %v", child.Err())
		}
		// After the end, AfterFunc runs f (in its own goroutine, as
		// context.AfterFunc does) and there is nothing left to stop.
		ran := make(chan struct{})
		stop := ctx.(*stateCtx).AfterFunc(func() { close(ran) })
		if stop() {
			t.Fatal("stop after the end reported it stopped f")
		}
		<-ran
	})
	t.Run("an earlier deadline of the parent wins", func(t *testing.T) {
		parent, cancelParent := context.WithTimeout(context.Background(), time.Minute)
		defer cancelParent()
		base := WithInfo(parent, info)
		ctx, cancel := WithTimeout(base, time.Hour)
		defer cancel()
		dl, _ := ctx.Deadline()
		want, _ := parent.Deadline()
		if !dl.Equal(want) || InfoFrom(ctx) != info {
			t.Fatalf("deadline %v, want the parent's %v", dl, want)
		}
	})
}

// Contexts derived from the request's (the etcd server derives one per
// call) do not cost a goroutine each, and the sweeper's goroutine is gone
// once no request context is waited on.
func TestRequestDeadlineNeedsNoGoroutinePerRequest(t *testing.T) {
	info := &Info{Verb: "create"}
	before := runtime.NumGoroutine()
	const n = 200
	cancels := make([]context.CancelFunc, 0, 2*n)
	for range n {
		ctx, cancel := WithTimeout(WithInfo(context.Background(), info), time.Hour)
		_, cancelChild := context.WithTimeout(ctx, time.Hour)
		cancels = append(cancels, cancelChild, cancel)
	}
	if g := runtime.NumGoroutine(); g > before+n/2 {
		t.Fatalf("%d goroutines with %d request contexts and derived ones, %d before", g, n, before)
	}
	for _, cancel := range cancels {
		cancel()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sweep.mu.Lock()
		running, live := sweep.running, len(sweep.live)
		sweep.mu.Unlock()
		if live != 0 {
			t.Fatalf("%d contexts left in the sweeper's set after all ended", live)
		}
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper's goroutine still runs with nothing to sweep")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRequestDeadlineAfterFuncStopped(t *testing.T) {
	ctx, cancel := WithTimeout(WithInfo(context.Background(), &Info{}), time.Hour)
	stop := ctx.(*stateCtx).AfterFunc(func() { t.Error("a stopped AfterFunc ran") })
	if !stop() {
		t.Fatal("stop before the end did not report it stopped f")
	}
	if stop() {
		t.Fatal("a second stop reported it stopped f")
	}
	cancel()
}

// BenchmarkRequestDeadline is a request's deadline as the create path uses
// it: x/net's stream context, the request-info node with the timeout, a
// context the etcd server derives (WithTimeout) and waits on, then the
// ends. "stdlib" is the node over context.WithTimeout, as before the
// deadline moved into the node.
func BenchmarkRequestDeadline(b *testing.B) {
	info := &Info{Verb: "create"}
	for _, tc := range []struct {
		name    string
		timeout func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"stdlib", func(stream context.Context) (context.Context, context.CancelFunc) {
			timed, cancel := context.WithTimeout(stream, time.Minute)
			return WithInfo(timed, info), cancel
		}},
		{"node", func(stream context.Context) (context.Context, context.CancelFunc) {
			return WithTimeout(WithInfo(stream, info), time.Minute)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				stream, cancelStream := context.WithCancel(context.Background())
				ctx, cancel := tc.timeout(stream)
				call, cancelCall := context.WithTimeout(ctx, 7*time.Second)
				select {
				case <-call.Done():
					b.Fatal("done")
				default:
				}
				cancelCall()
				cancel()
				cancelStream()
			}
		})
	}
}

// Requests start and end concurrently while the sweeper runs: under -race
// this checks the sweeper's set is only touched under its lock.
func TestRequestDeadlinesOfConcurrentRequests(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				d := time.Hour
				if i%10 == g%10 {
					d = time.Millisecond // some end by their deadline
				}
				ctx, cancel := WithTimeout(WithInfo(context.Background(), &Info{}), d)
				child, cancelChild := context.WithCancel(ctx)
				if d == time.Millisecond {
					waitDone(t, child, "derived")
				}
				cancelChild()
				cancel()
			}
		}()
	}
	wg.Wait()
}
