package audit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// batchRecorder is a BatchBackend handing each batch to the test.
type batchRecorder struct {
	batches chan []*Event
	// block, when set, is waited on (or ctx) before a batch is taken.
	block   chan struct{}
	mu      sync.Mutex
	ctxErrs []error
}

func newBatchRecorder() *batchRecorder { return &batchRecorder{batches: make(chan []*Event, 100)} }

func (r *batchRecorder) ProcessEvent(ev *Event) bool {
	return r.ProcessEvents(context.Background(), []*Event{ev})
}

func (r *batchRecorder) ProcessEvents(ctx context.Context, evs []*Event) bool {
	if r.block != nil {
		select {
		case <-r.block:
		case <-ctx.Done():
			r.mu.Lock()
			r.ctxErrs = append(r.ctxErrs, ctx.Err())
			r.mu.Unlock()
			return false
		}
	}
	r.batches <- evs
	return true
}

// next is the next batch sent; a batch that never comes fails the test
// (the bound only guards against a hang).
func (r *batchRecorder) next(t *testing.T) []*Event {
	t.Helper()
	select {
	case b := <-r.batches:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no batch sent")
		return nil
	}
}

func (r *batchRecorder) none(t *testing.T) {
	t.Helper()
	select {
	case b := <-r.batches:
		t.Fatalf("unexpected batch of %d: %v", len(b), ids(b))
	default:
	}
}

func ids(evs []*Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.AuditID)
	}
	return out
}

func events(from, to int) []*Event {
	var out []*Event
	for i := from; i <= to; i++ {
		out = append(out, &Event{AuditID: types.UID(fmt.Sprintf("e%d", i))})
	}
	return out
}

// waitEmpty waits until the backend's goroutine took every queued event.
func waitEmpty(t *testing.T, b *Buffered) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(b.buffer) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the backend never took the queued events")
		}
		runtime.Gosched()
	}
}

// waitTimer waits until the backend's goroutine waits on the fake clock.
func waitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the backend never waited on the clock")
		}
		runtime.Gosched()
	}
}

// TestBufferedSendsFullBatchesThenOnMaxWait: a batch goes as soon as it
// holds MaxBatchSize events; a smaller one once MaxBatchWait has passed
// since the batch began (kube-apiserver's batch mode).
func TestBufferedSendsFullBatchesThenOnMaxWait(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := newBatchRecorder()
	b := NewBuffered(rec, BatchConfig{BufferSize: 100, MaxBatchSize: 3, MaxBatchWait: time.Minute}, nil, clk)
	defer b.Close()
	for _, ev := range events(1, 7) {
		if !b.ProcessEvent(ev) {
			t.Fatal("batch mode failed an event")
		}
	}
	got := [][]string{ids(rec.next(t)), ids(rec.next(t))}
	if fmt.Sprint(got) != "[[e1 e2 e3] [e4 e5 e6]]" {
		t.Fatalf("full batches %v", got)
	}
	// e7 is taken into the batch the timer ends.
	waitEmpty(t, b)
	waitTimer(t, clk)
	rec.none(t)
	clk.Step(time.Minute)
	if got := ids(rec.next(t)); fmt.Sprint(got) != "[e7]" {
		t.Errorf("batch after max wait %v, want [e7]", got)
	}
}

// TestBufferedDropsWhenBufferFull: with the sender stuck, events beyond
// the buffer are dropped, counted as plugin "buffered" errors, and the
// request still goes on (ProcessEvent true).
func TestBufferedDropsWhenBufferFull(t *testing.T) {
	rec := newBatchRecorder()
	rec.block = make(chan struct{})
	m := NewMetrics()
	b := NewBuffered(rec, BatchConfig{BufferSize: 2, MaxBatchSize: 1}, m, clocktesting.NewFakeClock(time.Now()))
	evs := events(1, 5)
	b.ProcessEvent(evs[0])
	// e1 is taken by the sender, which blocks.
	waitEmpty(t, b)
	for _, ev := range evs[1:] {
		if !b.ProcessEvent(ev) {
			t.Fatal("a full buffer failed the request")
		}
	}
	if n := counterValue(t, m.errors.WithLabelValues(PluginBuffered)); n != 2 {
		t.Errorf("apiserver_audit_error_total{plugin=buffered} = %v, want 2 (e4, e5)", n)
	}
	close(rec.block)
	var got []string
	for range 3 {
		got = append(got, ids(rec.next(t))...)
	}
	if fmt.Sprint(got) != "[e1 e2 e3]" {
		t.Errorf("sent %v, want [e1 e2 e3]", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBufferedThrottle: with the throttle on, a batch beyond the burst
// waits for the clock.
func TestBufferedThrottle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := newBatchRecorder()
	b := NewBuffered(rec, BatchConfig{BufferSize: 10, MaxBatchSize: 1, ThrottleEnable: true, ThrottleQPS: 1, ThrottleBurst: 1}, nil, clk)
	defer b.Close()
	for _, ev := range events(1, 2) {
		b.ProcessEvent(ev)
	}
	if got := ids(rec.next(t)); fmt.Sprint(got) != "[e1]" {
		t.Fatalf("first batch %v", got)
	}
	waitTimer(t, clk)
	rec.none(t)
	clk.Step(999 * time.Millisecond)
	rec.none(t)
	clk.Step(time.Millisecond)
	if got := ids(rec.next(t)); fmt.Sprint(got) != "[e2]" {
		t.Fatalf("throttled batch %v", got)
	}
}

// TestBufferedShutdownFlushes: Shutdown sends every queued event (in
// batches of MaxBatchSize, without waiting for MaxBatchWait), waits for
// the sends, leaves no goroutine behind, and later events are dropped
// without failing requests.
func TestBufferedShutdownFlushes(t *testing.T) {
	before := runtime.NumGoroutine()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := newBatchRecorder()
	m := NewMetrics()
	b := NewBuffered(rec, BatchConfig{BufferSize: 100, MaxBatchSize: 4, MaxBatchWait: time.Hour, AsyncDelegate: true}, m, clk)
	for _, ev := range events(1, 6) {
		b.ProcessEvent(ev)
	}
	if got := ids(rec.next(t)); fmt.Sprint(got) != "[e1 e2 e3 e4]" {
		t.Fatalf("first batch %v", got)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ids(rec.next(t)); fmt.Sprint(got) != "[e5 e6]" {
		t.Fatalf("flushed %v, want [e5 e6]", got)
	}
	if !b.ProcessEvent(&Event{AuditID: "late"}) {
		t.Error("an event after shutdown failed the request")
	}
	if n := counterValue(t, m.errors.WithLabelValues(PluginBuffered)); n != 1 {
		t.Errorf("events dropped after shutdown counted %v, want 1", n)
	}
	rec.none(t)
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitGoroutines(t, before)
}

// TestBufferedShutdownDeadline: when Shutdown's context ends while a
// batch is still being sent, the delegate's context is cancelled (a
// webhook stops retrying), and Shutdown returns once every goroutine
// ended.
func TestBufferedShutdownDeadline(t *testing.T) {
	before := runtime.NumGoroutine()
	rec := newBatchRecorder()
	rec.block = make(chan struct{}) // never closed
	b := NewBuffered(rec, BatchConfig{BufferSize: 10, MaxBatchSize: 1, AsyncDelegate: true}, nil, clocktesting.NewFakeClock(time.Now()))
	for _, ev := range events(1, 2) {
		b.ProcessEvent(ev)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	rec.mu.Lock()
	n := len(rec.ctxErrs)
	rec.mu.Unlock()
	if n != 2 {
		t.Errorf("%d sends saw their context cancelled, want 2", n)
	}
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestBufferedNoMaxWaitSendsWhatIsQueued: with MaxBatchSize above one and
// no MaxBatchWait (the log backend's --audit-log-batch-max-wait default,
// 0), kube-apiserver's batch timer ends at once, so an event is sent
// with whatever else is queued instead of waiting for a full batch.
func TestBufferedNoMaxWaitSendsWhatIsQueued(t *testing.T) {
	for _, wait := range []time.Duration{0, -time.Second} {
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		rec := newBatchRecorder()
		b := NewBuffered(rec, BatchConfig{BufferSize: 10, MaxBatchSize: 5, MaxBatchWait: wait}, nil, clk)
		b.ProcessEvent(&Event{AuditID: "e1"})
		if got := ids(rec.next(t)); fmt.Sprint(got) != "[e1]" {
			t.Errorf("max wait %v: batch %v, want [e1]", wait, got)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
