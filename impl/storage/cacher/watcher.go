package cacher

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// cacheWatcher is one client watch served from the cache. Its input is
// filled by the dispatcher (under the cache lock, never blocking); its
// goroutine turns cache events into API events and hands them to the client.
type cacheWatcher struct {
	c          *Cacher
	id         int64
	key        string // exact key, or a prefix ending in "/"
	recursive  bool
	pred       storage.SelectionPredicate
	bookmarks  bool
	indexed    bool
	indexValue string

	input      chan *cacheEvent
	terminated bool // guarded by c.mu

	ctx      context.Context
	result   chan watch.Event
	stopCh   chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func (w *cacheWatcher) keyMatches(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

// interested reports whether ce means an event for this watcher.
func (w *cacheWatcher) interested(ce *cacheEvent) bool {
	if !w.keyMatches(ce.key) {
		return false
	}
	return (ce.cur != nil && w.pred.MatchesAttrs(ce.cur.labels, &ce.cur.fields)) ||
		(ce.prev != nil && w.pred.MatchesAttrs(ce.prev.labels, &ce.prev.fields))
}

// offerBookmark passes a bookmark on if there is room; bookmarks are never
// a reason to close a watcher.
func (w *cacheWatcher) offerBookmark(ce *cacheEvent) {
	if !w.bookmarks || w.terminated {
		return
	}
	select {
	case w.input <- ce:
	default:
	}
}

// translate is the API event ce is for this watcher, if any (STORE-6).
func (w *cacheWatcher) translate(ce *cacheEvent) (watch.Event, bool) {
	if !w.keyMatches(ce.key) {
		return watch.Event{}, false
	}
	curMatch := ce.cur != nil && w.pred.MatchesAttrs(ce.cur.labels, &ce.cur.fields)
	prevMatch := ce.prev != nil && w.pred.MatchesAttrs(ce.prev.labels, &ce.prev.fields)
	switch {
	case ce.typ == watch.Deleted:
		if prevMatch {
			return watch.Event{Type: watch.Deleted, Object: ce.prev.obj}, true
		}
	case curMatch && prevMatch:
		return watch.Event{Type: watch.Modified, Object: ce.cur.obj}, true
	case curMatch:
		return watch.Event{Type: watch.Added, Object: ce.cur.obj}, true
	case prevMatch:
		return watch.Event{Type: watch.Deleted, Object: ce.prevStamped()}, true
	}
	return watch.Event{}, false
}

// prevStamped is the previous object with the event's revision: what a
// watcher whose selector the object left receives as DELETED.
func (ce *cacheEvent) prevStamped() runtime.Object {
	ce.prevAtRVOnce.Do(func() {
		obj := ce.prev.obj.DeepCopyObject()
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(strconv.FormatInt(ce.rv, 10))
		}
		ce.prevAtRV = obj
	})
	return ce.prevAtRV
}

// Stop ends the watch and waits for its goroutine.
func (w *cacheWatcher) Stop() {
	w.stopOnce.Do(func() { close(w.stopCh) })
	<-w.done
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

func (w *cacheWatcher) run(initial []*cachedObject, initialEnd bool, startRV int64, replay []*cacheEvent) {
	defer w.c.wg.Done()
	defer close(w.done)
	defer close(w.result)
	defer w.c.removeWatcher(w)
	lastRV := startRV
	for _, co := range initial {
		if !w.send(watch.Event{Type: watch.Added, Object: co.obj}) {
			return
		}
	}
	if initialEnd {
		if !w.send(watch.Event{Type: watch.Bookmark, Object: w.bookmark(startRV, true)}) {
			return
		}
	}
	for _, ce := range replay {
		if e, ok := w.translate(ce); ok {
			if !w.send(e) {
				return
			}
		}
		lastRV = ce.rv
	}
	// The initial events are with the reader: the request's seat in API
	// Priority and Fairness can go (as kube-apiserver's cacher signals
	// once its watcher has sent the events of its initial interval).
	storage.WatchInitialized(w.ctx)
	bookmarkTimer := w.newBookmarkTimer()
	defer bookmarkTimer.Stop()
	for {
		select {
		case <-bookmarkTimer.C:
			w.c.requestBookmark(w)
			bookmarkTimer.Reset(w.c.bookmarks)
		case ce, ok := <-w.input:
			if !ok {
				return
			}
			if ce.typ == watch.Bookmark {
				if ce.rv >= lastRV {
					lastRV = ce.rv
					if !w.send(watch.Event{Type: watch.Bookmark, Object: w.bookmark(ce.rv, false)}) {
						return
					}
				}
				continue
			}
			if ce.rv <= lastRV {
				continue // already delivered by the replay
			}
			lastRV = ce.rv
			if e, ok := w.translate(ce); ok {
				if !w.send(e) {
					return
				}
			}
		case <-w.stopCh:
			return
		case <-w.ctx.Done():
			return
		case <-w.c.stopped:
			return
		}
	}
}

// objectWatcherBufferSize is the buffer of a watcher of one object by
// name (fieldSelector metadata.name=...: a kubelet's watch of each
// ConfigMap and Secret its pods use, one per node and object): it is only
// offered that object's events, so kube-apiserver's smallest watcher
// buffer, 10 events, is enough where WatcherBufferSize's 256 would hold 2
// KiB per watch. One that falls behind by more is closed, as any watcher,
// and its client resumes from the last resourceVersion it saw.
const objectWatcherBufferSize = 10

// defaultBookmarkFrequency is how often a watcher that allows bookmarks
// gets one from the cache unless Config says otherwise, as upstream's
// cacher does (about once a minute).
const defaultBookmarkFrequency = time.Minute

// bookmarkBeforeDeadline: a watch with a deadline (the request's
// timeoutSeconds) gets a bookmark this long before it ends, so the client
// can resume from a fresh resourceVersion.
const bookmarkBeforeDeadline = 2 * time.Second

// newBookmarkTimer schedules the watcher's first cache bookmark: shortly
// before its deadline when that comes first, else after the cache's
// bookmark frequency.
// A watcher that does not allow bookmarks gets a timer that never fires.
func (w *cacheWatcher) newBookmarkTimer() *time.Timer {
	if !w.bookmarks {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	next := w.c.bookmarks
	if deadline, ok := w.ctx.Deadline(); ok {
		if d := time.Until(deadline) - bookmarkBeforeDeadline; d > 0 && d < next {
			next = d
		}
	}
	return time.NewTimer(next)
}

func (w *cacheWatcher) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.stopCh:
	case <-w.ctx.Done():
	case <-w.c.stopped:
	}
	return false
}

func (w *cacheWatcher) bookmark(rv int64, initialEventsEnd bool) runtime.Object {
	obj := w.c.res.NewFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rv, 10))
		if initialEventsEnd {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return obj
}

func (c *Cacher) removeWatcher(w *cacheWatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.terminateLocked(w)
}

// Watch implements storage.Interface from the cache.
func (c *Cacher) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	rv, err := storage.ParseResourceVersion(key, opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, key); err != nil {
		return nil, err
	}
	pred := opts.Predicate
	if pred.GetAttrs == nil {
		pred.GetAttrs = c.getAttrs
	}
	sendInitial := (opts.SendInitialEvents == nil && rv == 0) ||
		(opts.SendInitialEvents != nil && *opts.SendInitialEvents)
	minRV := rv
	if sendInitial && opts.ResourceVersion == "" {
		// The current state, consistently: at least etcd's revision now.
		if minRV, err = c.store.CurrentRevision(ctx); err != nil {
			return nil, err
		}
	}
	if minRV > 0 {
		if err := c.waitUntilFresh(ctx, key, minRV, false); err != nil {
			return nil, err
		}
	}

	w := &cacheWatcher{
		c:         c,
		key:       keyPrefix(key, opts.Recursive),
		recursive: opts.Recursive,
		pred:      pred,
		bookmarks: pred.AllowWatchBookmarks,
		ctx:       ctx,
		result:    make(chan watch.Event),
		stopCh:    make(chan struct{}),
		done:      make(chan struct{}),
	}
	if c.indexField != "" && pred.Field != nil {
		if v, ok := pred.Field.RequiresExactMatch(c.indexField); ok {
			w.indexed, w.indexValue = true, v
		}
	}
	buf := c.watchBuf
	if c.indexField != "" && !w.indexed {
		buf = c.watchBufAll
	}
	if pred.Field != nil {
		if _, ok := pred.Field.RequiresExactMatch("metadata.name"); ok {
			buf = min(buf, objectWatcherBufferSize)
		}
	}
	w.input = make(chan *cacheEvent, buf)

	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return nil, storage.NewError(storage.ErrCodeUnreachable, key, rv, "storage is (re)initializing", nil)
	}
	var (
		initial []*cachedObject
		replay  []*cacheEvent
		startRV int64
	)
	switch {
	case sendInitial:
		initial = c.snapshotLocked(w.key, opts.Recursive, pred)
		startRV = c.rv
	case rv == 0:
		startRV = c.rv
	default:
		if rv < c.windowStart {
			window := c.windowStart
			c.mu.Unlock()
			storage.WatchInitialized(ctx) // nothing more to send but the error
			return errorWatch(apierrors.NewResourceExpired(
				fmt.Sprintf("too old resource version: %d (%d)", rv, window))), nil
		}
		replay = c.eventsAfterLocked(rv)
		if faults.Enabled(faults.WatchResumeSkipsEvent) { // mutation: the first event after rv is lost (STORE-1)
			replay = faults.DropFirst(replay, func(ce *cacheEvent) bool { _, ok := w.translate(ce); return ok })
		}
		startRV = rv
	}
	c.nextID++
	w.id = c.nextID
	if w.indexed {
		set := c.indexed[w.indexValue]
		if set == nil {
			set = map[int64]*cacheWatcher{}
			c.indexed[w.indexValue] = set
		}
		set[w.id] = w
	} else {
		c.unindexed[w.id] = w
	}
	c.wg.Add(1)
	c.mu.Unlock()
	initialEnd := opts.SendInitialEvents != nil && *opts.SendInitialEvents && pred.AllowWatchBookmarks
	go w.run(initial, initialEnd, startRV, replay)
	return w, nil
}

// snapshotLocked returns the cached objects under key that match pred, in
// key order.
func (c *Cacher) snapshotLocked(key string, recursive bool, pred storage.SelectionPredicate) []*cachedObject {
	var out []*cachedObject
	if !recursive {
		if co, ok := c.items.Get(&cachedObject{key: key}); ok && pred.MatchesAttrs(co.labels, &co.fields) {
			out = append(out, co)
		}
		return out
	}
	c.items.AscendGreaterOrEqual(&cachedObject{key: key}, func(co *cachedObject) bool {
		if !strings.HasPrefix(co.key, key) {
			return false
		}
		if pred.MatchesAttrs(co.labels, &co.fields) {
			out = append(out, co)
		}
		return true
	})
	return out
}

// errorWatch is a watch that reports one error and ends.
func errorWatch(err *apierrors.StatusError) watch.Interface {
	ch := make(chan watch.Event, 1)
	status := err.ErrStatus
	ch <- watch.Event{Type: watch.Error, Object: &status}
	close(ch)
	return errWatch{ch}
}

type errWatch struct{ ch chan watch.Event }

func (e errWatch) Stop()                          {}
func (e errWatch) ResultChan() <-chan watch.Event { return e.ch }
