package audit

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// BatchConfig configures a batch-mode backend (--audit-webhook-batch-*,
// --audit-log-batch-*).
type BatchConfig struct {
	// BufferSize is how many events wait to be sent; when the buffer is
	// full new events are dropped (counted as plugin "buffered" errors).
	BufferSize int
	// MaxBatchSize is the most events sent at once.
	MaxBatchSize int
	// MaxBatchWait sends a smaller batch once this long has passed since
	// the batch was started; 0 (or less) sends each event with those
	// queued behind it. Not used when MaxBatchSize is 1.
	MaxBatchWait time.Duration
	// ThrottleEnable limits the batches sent to ThrottleQPS per second
	// with bursts of ThrottleBurst.
	ThrottleEnable bool
	ThrottleQPS    float32
	ThrottleBurst  int
	// AsyncDelegate sends each batch in its own goroutine (the webhook);
	// otherwise batches are sent one after the other (the log).
	AsyncDelegate bool
}

// Batch defaults, as kube-apiserver's.
const (
	DefaultBatchBufferSize    = 10000
	DefaultBatchMaxSize       = 400
	DefaultBatchMaxWait       = 30 * time.Second
	DefaultBatchThrottleQPS   = 10
	DefaultBatchThrottleBurst = 15
)

// DefaultWebhookBatchConfig is the webhook backend's batch mode default.
func DefaultWebhookBatchConfig() BatchConfig {
	return BatchConfig{BufferSize: DefaultBatchBufferSize, MaxBatchSize: DefaultBatchMaxSize, MaxBatchWait: DefaultBatchMaxWait,
		ThrottleEnable: true, ThrottleQPS: DefaultBatchThrottleQPS, ThrottleBurst: DefaultBatchThrottleBurst, AsyncDelegate: true}
}

// DefaultLogBatchConfig is the log backend's batch mode default: events
// written one by one, in order, unthrottled.
func DefaultLogBatchConfig() BatchConfig {
	return BatchConfig{BufferSize: DefaultBatchBufferSize, MaxBatchSize: 1}
}

// BatchBackend is a Backend that takes several events at once (the
// webhook: one request per batch). ctx ends when the sender is stopped
// for good.
type BatchBackend interface {
	Backend
	ProcessEvents(ctx context.Context, events []*Event) bool
}

// Buffered is a batch-mode backend: ProcessEvent only queues the event
// and returns; one goroutine collects batches and hands them to the
// delegate. Shutdown (or Close) stops it, sending every event queued.
type Buffered struct {
	delegate BatchBackend
	cfg      BatchConfig
	clock    clock.Clock
	metrics  *Metrics
	throttle *tokenBucket

	buffer chan *Event
	// mu guards stopped against ProcessEvent racing Shutdown.
	mu      sync.RWMutex
	stopped bool
	stop    chan struct{}
	done    chan struct{}
	// sends counts batches being sent by AsyncDelegate goroutines.
	sends sync.WaitGroup
	// ctx is given to the delegate; cancel ends its retries when a
	// Shutdown's context ends first.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

// NewBuffered starts a batch-mode backend in front of delegate. clk nil
// is the real clock.
func NewBuffered(delegate BatchBackend, cfg BatchConfig, m *Metrics, clk clock.Clock) *Buffered {
	if clk == nil {
		clk = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Buffered{delegate: delegate, cfg: cfg, clock: clk, metrics: m,
		buffer: make(chan *Event, cfg.BufferSize), stop: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel}
	if cfg.ThrottleEnable {
		b.throttle = newTokenBucket(cfg.ThrottleQPS, cfg.ThrottleBurst)
	}
	go b.run()
	return b
}

// ProcessEvent implements Backend: the event is queued, or dropped (and
// counted, plugin "buffered") when the buffer is full or the backend
// stopped. It never fails the request.
func (b *Buffered) ProcessEvent(ev *Event) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.stopped {
		pluginError(b.metrics, PluginBuffered, errors.New("audit backend shut down"), ev)
		return true
	}
	select {
	case b.buffer <- ev:
	default:
		pluginError(b.metrics, PluginBuffered, errors.New("audit buffer queue blocked"), ev)
	}
	return true
}

// Shutdown stops taking events and sends every queued one, waiting for
// the batches being sent. When ctx ends first the delegate's context is
// cancelled (a webhook stops retrying), the remaining events fail, and
// Shutdown returns ctx's error once every goroutine has ended.
func (b *Buffered) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if !b.stopped {
		b.stopped = true
		close(b.stop)
	}
	b.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		<-b.done
		b.sends.Wait()
		close(finished)
	}()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		b.cancel()
		<-finished
		err = ctx.Err()
	}
	b.cancel()
	b.closeOnce.Do(func() {
		if c, ok := b.delegate.(io.Closer); ok {
			err = errors.Join(err, c.Close())
		}
	})
	return err
}

// Close is Shutdown without a deadline.
func (b *Buffered) Close() error { return b.Shutdown(context.Background()) }

// run collects and sends batches until stopped, then sends what is left.
func (b *Buffered) run() {
	defer close(b.done)
	for {
		batch, stopped := b.collect()
		b.send(batch)
		if stopped {
			break
		}
	}
	// No event is queued after stop (ProcessEvent checks stopped under
	// the lock Shutdown took): drain the buffer.
	for {
		batch := b.drain()
		if len(batch) == 0 {
			return
		}
		b.send(batch)
	}
}

// collect gathers one batch: it ends at MaxBatchSize events, when
// MaxBatchWait has passed since it began, or at stop. Batches of more
// than one event with no positive MaxBatchWait (kube-apiserver's timer
// then ends at once) take the first event and what is queued with it.
func (b *Buffered) collect() (batch []*Event, stopped bool) {
	if b.cfg.MaxBatchSize > 1 && b.cfg.MaxBatchWait <= 0 {
		select {
		case ev := <-b.buffer:
			return append([]*Event{ev}, b.drainUpTo(b.cfg.MaxBatchSize-1)...), false
		case <-b.stop:
			return nil, true
		}
	}
	var expired <-chan time.Time
	if b.cfg.MaxBatchSize > 1 {
		t := b.clock.NewTimer(b.cfg.MaxBatchWait)
		defer t.Stop()
		expired = t.C()
	}
	for len(batch) < b.cfg.MaxBatchSize {
		select {
		case ev := <-b.buffer:
			batch = append(batch, ev)
		case <-expired:
			return batch, false
		case <-b.stop:
			return batch, true
		}
	}
	return batch, false
}

// drain takes up to MaxBatchSize queued events without waiting.
func (b *Buffered) drain() []*Event { return b.drainUpTo(b.cfg.MaxBatchSize) }

// drainUpTo takes up to n queued events without waiting.
func (b *Buffered) drainUpTo(n int) []*Event {
	var batch []*Event
	for len(batch) < n {
		select {
		case ev := <-b.buffer:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// send waits for the throttle, then hands batch to the delegate (in a
// goroutine when AsyncDelegate).
func (b *Buffered) send(batch []*Event) {
	if len(batch) == 0 {
		return
	}
	if b.throttle != nil {
		if wait := b.throttle.reserve(b.clock.Now()); wait > 0 {
			select {
			case <-b.clock.After(wait):
			case <-b.ctx.Done():
			}
		}
	}
	if !b.cfg.AsyncDelegate {
		b.delegate.ProcessEvents(b.ctx, batch)
		return
	}
	b.sends.Add(1)
	go func() {
		defer b.sends.Done()
		b.delegate.ProcessEvents(b.ctx, batch)
	}()
}

// eachEvent makes a Backend a BatchBackend that handles a batch event by
// event (the log).
type eachEvent struct{ Backend }

func (e eachEvent) ProcessEvents(_ context.Context, events []*Event) bool {
	ok := true
	for _, ev := range events {
		ok = e.ProcessEvent(ev) && ok
	}
	return ok
}

// Close closes the backend when it is an io.Closer.
func (e eachEvent) Close() error {
	if c, ok := e.Backend.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
