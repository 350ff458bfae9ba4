// Package eventrecorder records the scheduler's events (events.k8s.io/v1)
// the way client-go's events broadcaster does — same event names, fields,
// series of isomorphic events, retries — with bounded memory and a fixed
// number of goroutines.
//
// client-go's broadcaster keeps a copy of every event it recorded for six
// minutes (to notice repeats and build series) and starts a goroutine per
// event; at 1,000 bindings a second that is the largest part of the
// scheduler's heap. Here the memory of recent events is a least-recently-
// used table of at most Options.CacheSize entries, and a fixed pool of
// workers writes them from a bounded queue (a full queue drops the event, as
// client-go's does).
//
// Series, as in client-go: the second event isomorphic to a remembered one
// (same type, reason, action, reporting controller and instance, regarding
// and related object) turns it into a series (count 2, written as a patch
// of the first event; created if that is gone); later repeats only count,
// and the count is written when the series has been quiet for FinishAfter,
// every RefreshAfter while it goes on, and when the entry is evicted.
package eventrecorder

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
)

// Options tune a Broadcaster; zero values take the defaults.
type Options struct {
	// QueueSize bounds the writes waiting for a worker (default 1000, as
	// client-go's maxQueuedEvents); an event that finds it full is dropped.
	QueueSize int
	// Workers is the number of goroutines writing events (default 16).
	Workers int
	// CacheSize bounds the remembered recent events (default 4096).
	CacheSize int
	// FinishAfter: an entry quiet this long is forgotten, a series' final
	// count written first (default 6 minutes, as client-go).
	FinishAfter time.Duration
	// RefreshAfter: an ongoing series' count is written this often
	// (default 30 minutes, as client-go).
	RefreshAfter time.Duration
	// RetryInterval between attempts to write an event the server could not
	// take (default 10 s, as client-go; the first wait is randomized);
	// MaxTries attempts in all (default 12).
	RetryInterval time.Duration
	MaxTries      int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 4096
	}
	if o.FinishAfter <= 0 {
		o.FinishAfter = 6 * time.Minute
	}
	if o.RefreshAfter <= 0 {
		o.RefreshAfter = 30 * time.Minute
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 10 * time.Second
	}
	if o.MaxTries <= 0 {
		o.MaxTries = 12
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// key identifies isomorphic events (client-go's eventKey).
type key struct {
	eventType, action, reason              string
	reportingController, reportingInstance string
	regarding, related                     v1.ObjectReference
}

// entry is a remembered event: enough to patch its series or create it
// again.
type entry struct {
	key
	hash            uint64
	name, namespace string
	note            string
	eventTime       time.Time
	hasRelated      bool
	// series state: count 0 means a single event so far.
	count        int32
	written      int32 // the count last queued for writing
	lastObserved time.Time
	lastWrite    time.Time
}

// write is one request for a worker.
type write struct {
	event *eventsv1.Event
	// patch is set for a series update of an existing event.
	patch []byte
}

// Broadcaster writes the events of its recorders.
type Broadcaster struct {
	client eventsv1client.EventsV1Interface
	opts   Options
	queue  chan write

	mu sync.Mutex
	// entries indexes the LRU list by a hash of the entry's key (a full
	// key per map slot would double the memory of each entry); two keys
	// with one hash evict each other, which only forgets an entry early.
	entries map[uint64]*list.Element
	seed    maphash.Seed
	lru     *list.List // of *entry, most recent first
}

// New returns a Broadcaster writing through client. Nothing is written
// until Run.
func New(client eventsv1client.EventsV1Interface, opts Options) *Broadcaster {
	opts.setDefaults()
	return &Broadcaster{
		client:  client,
		opts:    opts,
		queue:   make(chan write, opts.QueueSize),
		entries: map[uint64]*list.Element{},
		seed:    maphash.MakeSeed(),
		lru:     list.New(),
	}
}

// Run writes events until ctx is done, then returns after its workers have
// stopped; events still queued are dropped.
func (b *Broadcaster) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range b.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case w := <-b.queue:
					b.attempt(ctx, w)
				}
			}
		}()
	}
	sweep := min(b.opts.FinishAfter, time.Minute)
	t := time.NewTicker(sweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			b.Sweep()
		}
	}
}

// Recorder records events as one reporting controller.
type Recorder struct {
	b        *Broadcaster
	scheme   *runtime.Scheme
	reporter string
	instance string
}

var _ events.EventRecorder = (*Recorder)(nil)

// NewRecorder returns a recorder for reportingController; the reporting
// instance is "<controller>-<hostname>", as client-go's.
func (b *Broadcaster) NewRecorder(scheme *runtime.Scheme, reportingController string) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{b: b, scheme: scheme, reporter: reportingController, instance: reportingController + "-" + host}
}

// Eventf implements events.EventRecorder.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	log := r.b.opts.Logger
	if eventtype != v1.EventTypeNormal && eventtype != v1.EventTypeWarning {
		log.Error("unsupported event type", "type", eventtype, "reason", reason)
		return
	}
	message := fmt.Sprintf(note, args...)
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		log.Error("could not construct reference; not reporting the event", "reason", reason, "err", err)
		return
	}
	k := key{eventType: eventtype, action: action, reason: reason, reportingController: r.reporter, reportingInstance: r.instance, regarding: *ref}
	hasRelated := false
	if related != nil {
		if rel, err := reference.GetReference(r.scheme, related); err == nil {
			k.related, hasRelated = *rel, true
		}
	}
	r.b.record(k, hasRelated, message)
}

// record remembers the event and queues what must be written.
func (b *Broadcaster) record(k key, hasRelated bool, note string) {
	now := b.opts.Now()
	h := maphash.Comparable(b.seed, k)
	b.mu.Lock()
	if el, ok := b.entries[h]; ok && el.Value.(*entry).key != k {
		// Another key with the same hash: forget it.
		if w, ok := b.removeLocked(el, now); ok {
			defer b.enqueue(w)
		}
	}
	if el, ok := b.entries[h]; ok {
		e := el.Value.(*entry)
		b.lru.MoveToFront(el)
		e.lastObserved = now
		if e.count > 0 {
			e.count++
			b.mu.Unlock()
			return
		}
		e.count = 2
		w := b.seriesWrite(e, now)
		b.mu.Unlock()
		b.enqueue(w)
		return
	}
	e := &entry{key: k, hash: h, hasRelated: hasRelated, note: note, eventTime: now, lastObserved: now,
		name: fmt.Sprintf("%v.%x", k.regarding.Name, now.UnixNano()), namespace: k.regarding.Namespace}
	if e.namespace == "" {
		e.namespace = metav1.NamespaceDefault
	}
	b.entries[h] = b.lru.PushFront(e)
	var evicted []write
	for b.lru.Len() > b.opts.CacheSize {
		if w, ok := b.removeLocked(b.lru.Back(), now); ok {
			evicted = append(evicted, w)
		}
	}
	ev := e.event()
	b.mu.Unlock()
	b.enqueue(write{event: ev})
	for _, w := range evicted {
		b.enqueue(w)
	}
}

// removeLocked forgets an entry, returning the final write of a series
// whose last count was not written yet.
func (b *Broadcaster) removeLocked(el *list.Element, now time.Time) (write, bool) {
	e := el.Value.(*entry)
	b.lru.Remove(el)
	delete(b.entries, e.hash)
	if e.count > 0 && e.count != e.written {
		return b.seriesWrite(e, now), true
	}
	return write{}, false
}

// seriesWrite is a patch of the event's series with the entry's count.
func (b *Broadcaster) seriesWrite(e *entry, now time.Time) write {
	e.written, e.lastWrite = e.count, now
	ev := e.event()
	ev.Series = &eventsv1.EventSeries{Count: e.count, LastObservedTime: metav1.NewMicroTime(e.lastObserved)}
	patch, _ := json.Marshal(map[string]any{"series": ev.Series})
	return write{event: ev, patch: patch}
}

// Sweep forgets entries quiet for FinishAfter (writing a series' final
// count) and writes the count of series unwritten for RefreshAfter. Run
// calls it every minute; tests call it directly.
func (b *Broadcaster) Sweep() {
	now := b.opts.Now()
	var writes []write
	b.mu.Lock()
	for el := b.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*entry)
		switch {
		case now.Sub(e.lastObserved) >= b.opts.FinishAfter:
			if w, ok := b.removeLocked(el, now); ok {
				writes = append(writes, w)
			}
		case e.count > 0 && now.Sub(e.lastWrite) >= b.opts.RefreshAfter:
			writes = append(writes, b.seriesWrite(e, now))
		}
		el = prev
	}
	b.mu.Unlock()
	for _, w := range writes {
		b.enqueue(w)
	}
}

// Len is the number of remembered events.
func (b *Broadcaster) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lru.Len()
}

func (b *Broadcaster) enqueue(w write) {
	select {
	case b.queue <- w:
	default:
		b.opts.Logger.Debug("event queue full; dropping event", "reason", w.event.Reason, "regarding", w.event.Regarding.Name)
	}
}

// event builds the Event the entry stands for.
func (e *entry) event() *eventsv1.Event {
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: e.name, Namespace: e.namespace},
		EventTime:           metav1.NewMicroTime(e.eventTime),
		ReportingController: e.reportingController,
		ReportingInstance:   e.reportingInstance,
		Action:              e.action,
		Reason:              e.reason,
		Regarding:           e.regarding,
		Note:                e.note,
		Type:                e.eventType,
	}
	if e.hasRelated {
		rel := e.related
		ev.Related = &rel
	}
	return ev
}

// attempt writes w, retrying as client-go does: errors of the connection
// are retried up to MaxTries times, RetryInterval apart (the first wait
// randomized); a server's refusal is not.
func (b *Broadcaster) attempt(ctx context.Context, w write) {
	for tries := 1; ; tries++ {
		retry := b.send(ctx, w)
		if !retry || ctx.Err() != nil {
			return
		}
		if tries >= b.opts.MaxTries {
			b.opts.Logger.Error("unable to write event (retry limit exceeded)", "reason", w.event.Reason, "regarding", w.event.Regarding.Name)
			return
		}
		delay := b.opts.RetryInterval
		if tries == 1 {
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// send makes one attempt; it reports whether to try again.
func (b *Broadcaster) send(ctx context.Context, w write) bool {
	c := b.client.Events(w.event.Namespace)
	var err error
	if w.patch != nil {
		_, err = c.Patch(ctx, w.event.Name, types.StrategicMergePatchType, w.patch, metav1.PatchOptions{})
	}
	if w.patch == nil || apierrors.IsNotFound(err) {
		_, err = c.Create(ctx, w.event, metav1.CreateOptions{})
	}
	if err == nil {
		return false
	}
	switch err.(type) {
	case *rest.RequestConstructionError:
		b.opts.Logger.Error("unable to construct event (will not retry)", "reason", w.event.Reason, "err", err)
		return false
	case *apierrors.StatusError:
		if apierrors.IsAlreadyExists(err) && w.patch != nil {
			// The first event was being created as its series was
			// patched: the patch can now succeed.
			return true
		}
		b.opts.Logger.Info("server rejected event (will not retry)", "reason", w.event.Reason, "err", err)
		return false
	}
	b.opts.Logger.Info("unable to write event (may retry)", "reason", w.event.Reason, "err", err)
	return true
}
