package etcd3

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// InitialEventsEndAnnotation marks the BOOKMARK that ends the initial events
// of a watch-list (sendInitialEvents=true).
const InitialEventsEndAnnotation = metav1.InitialEventsAnnotationKey

// resultBuffer is how many events a watch holds before its reader takes them.
const resultBuffer = 100

// Watch implements storage.Interface: an etcd watch with previous values
// from resourceVersion+1, translated to API watch events (STORE-6).
func (s *Store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	k, err := s.prepareKey(key)
	if err != nil {
		return nil, err
	}
	if opts.Recursive && !strings.HasSuffix(k, "/") {
		k += "/"
	}
	rv, err := storage.ParseResourceVersion(key, opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	pred := opts.Predicate
	if pred.GetAttrs == nil {
		pred.GetAttrs = s.getAttrs
	}
	sendInitial := (opts.SendInitialEvents == nil && rv == 0) ||
		(opts.SendInitialEvents != nil && *opts.SendInitialEvents)

	w := &watchStream{
		store:     s,
		key:       k,
		recursive: opts.Recursive,
		pred:      pred,
		bookmarks: pred.AllowWatchBookmarks,
		etcd:      s.newWatcher(),
		result:    make(chan watch.Event, resultBuffer),
		done:      make(chan struct{}),
	}
	var initial []runtime.Object
	startRev := rv
	if sendInitial {
		// Synthetic ADDED events for the state at a revision not older than
		// rv, then changes after it.
		initial, startRev, err = s.currentState(ctx, key, k, opts.Recursive, rv, pred)
		if err != nil {
			_ = w.etcd.Close()
			return nil, err
		}
		w.initialEnd = opts.SendInitialEvents != nil && *opts.SendInitialEvents && pred.AllowWatchBookmarks
	} else if rv == 0 {
		// From now, without the current state.
		start := time.Now()
		resp, err := s.client.KV.Get(ctx, k, clientv3.WithCountOnly())
		s.metrics.observe(ctx, "get", s.mlabels, start, err)
		if err != nil {
			_ = w.etcd.Close()
			return nil, s.etcdError(key, "watch", err)
		}
		startRev = resp.Header.Revision
	}
	w.startRev = startRev
	w.ctx, w.cancel = context.WithCancel(ctx)
	go w.run(initial)
	// Whether the watch has caught up is not known here (its initial
	// events are sent in the background): initialized at once, as
	// kube-apiserver's etcd3 store does.
	storage.WatchInitialized(ctx)
	return w, nil
}

// currentState lists the objects under k that match pred, at a revision not
// older than minRV, and returns them with that revision.
func (s *Store) currentState(ctx context.Context, key, k string, recursive bool, minRV int64,
	pred storage.SelectionPredicate) ([]runtime.Object, int64, error) {
	var ops []clientv3.OpOption
	if recursive {
		ops = append(ops, clientv3.WithPrefix())
	}
	resp, err := s.getAtLeast(ctx, key, "list", minRV, func() (*clientv3.GetResponse, error) {
		return s.client.KV.Get(ctx, k, ops...)
	})
	if err != nil {
		return nil, 0, err
	}
	objs := make([]runtime.Object, 0, len(resp.Kvs))
	sizes := storage.ValueSizesFrom(ctx)
	for _, kv := range resp.Kvs {
		if sizes != nil {
			sizes(len(kv.Value), 0)
		}
		obj, err := s.decodeNew(key, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, 0, err
		}
		if ok, _ := pred.Matches(obj); ok {
			objs = append(objs, obj)
		}
	}
	return objs, resp.Header.Revision, nil
}

// watchStream is one watch on etcd.
//
// Each watchStream has an etcd watch stream of its own (its own
// clientv3.Watcher from Config.NewWatcher: one gRPC stream on the shared
// connection, or one in-process stream on an embedded etcd). etcd answers
// a progress request with one notification for all the watches of a stream,
// and the client hands it to every watch it knows of on that stream when it
// arrives. On a stream shared with other watches, a watch created just then
// can be handed a notification that etcd generated before the watch existed,
// at a revision whose events etcd is about to send it (the server may send
// the watch's "created" response ahead of notifications it queued earlier):
// a bookmark ahead of the watch's own events, which made the watch cache
// skip them. Alone on its stream, a watch only gets notifications etcd
// generated after checking that the watch had been sent every event up to
// their revision.
type watchStream struct {
	store      *Store
	key        string
	recursive  bool
	pred       storage.SelectionPredicate
	bookmarks  bool
	initialEnd bool
	startRev   int64 // events strictly after this revision
	etcd       clientv3.Watcher

	ctx    context.Context
	cancel context.CancelFunc
	result chan watch.Event
	done   chan struct{}
}

// Stop ends the watch and waits until its goroutine has exited.
func (w *watchStream) Stop() {
	w.cancel()
	<-w.done
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *watchStream) ResultChan() <-chan watch.Event { return w.result }

func (w *watchStream) run(initial []runtime.Object) {
	defer close(w.done)
	defer close(w.result)
	defer func() { _ = w.etcd.Close() }()
	defer w.cancel()
	w.store.shared.watchStarted(w)
	defer w.store.shared.watchEnded(w)
	for _, obj := range initial {
		if !w.send(watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	if w.initialEnd {
		if !w.send(watch.Event{Type: watch.Bookmark, Object: w.bookmark(w.startRev, true)}) {
			return
		}
	}

	ops := []clientv3.OpOption{clientv3.WithRev(w.startRev + 1), clientv3.WithPrevKV()}
	if w.recursive {
		ops = append(ops, clientv3.WithPrefix())
	}
	if w.bookmarks {
		ops = append(ops, clientv3.WithProgressNotify())
		release := w.store.bookmarks.add(w)
		defer release()
	}
	wctx := clientv3.WithRequireLeader(w.ctx)
	lastRev := w.startRev
	sizes := storage.ValueSizesFrom(w.ctx)
	for wr := range w.etcd.Watch(wctx, w.key, ops...) {
		if wr.CompactRevision != 0 {
			w.sendError(apierrors.NewResourceExpired(
				fmt.Sprintf("too old resource version: %d (%d)", w.startRev, wr.CompactRevision)))
			return
		}
		if err := wr.Err(); err != nil {
			if w.ctx.Err() == nil {
				w.store.log.Debug("etcd watch failed", "key", w.key, "err", err)
				w.sendError(apierrors.NewInternalError(fmt.Errorf("etcd watch on %s: %w", w.key, err)))
			}
			return
		}
		if wr.IsProgressNotify() {
			if w.bookmarks && wr.Header.Revision >= lastRev {
				lastRev = wr.Header.Revision
				if !w.send(watch.Event{Type: watch.Bookmark, Object: w.bookmark(lastRev, false)}) {
					return
				}
			}
			continue
		}
		for _, ev := range wr.Events {
			if ev.PrevKv == nil && !ev.IsCreate() {
				w.fillPrevious(ev)
			}
			if sizes != nil {
				sizes(eventValueSizes(ev))
			}
			e, ok, err := w.translate(ev)
			if err != nil {
				w.sendError(apierrors.NewInternalError(err))
				return
			}
			lastRev = ev.Kv.ModRevision
			if ok && !w.send(e) {
				return
			}
		}
	}
}

// fillPrevious reads the previous value of an update or delete that etcd
// sent without one, at the revision before the event, as etcd itself reads
// it for a watch that asks for previous values. etcd leaves it out when that
// read fails (the revision is compacted) and also, with no compaction at
// all, for events it handles while it is still registering a new watch: its
// watch server starts the watch before it records that the watch wants
// previous values, so an event written at that moment goes out without one.
// That race ended a selector watch with a 500 right after it started (the
// TestSuite/WatchSelectorTransitions flake). If the read fails too, the event
// stays without a previous value and translate decides as before.
func (w *watchStream) fillPrevious(ev *clientv3.Event) {
	s := w.store
	start := time.Now()
	resp, err := s.client.KV.Get(w.ctx, string(ev.Kv.Key), clientv3.WithRev(ev.Kv.ModRevision-1))
	s.metrics.observe(w.ctx, "get", s.mlabels, start, err)
	if err != nil {
		if w.ctx.Err() == nil {
			s.log.Debug("etcd watch event without previous value, which could not be read",
				"key", string(ev.Kv.Key), "modRevision", ev.Kv.ModRevision, "err", err)
		}
		return
	}
	if len(resp.Kvs) == 1 && string(resp.Kvs[0].Key) == string(ev.Kv.Key) {
		ev.PrevKv = resp.Kvs[0]
	}
}

// translate turns an etcd event into the API event this watcher sees, if
// any: an object that starts matching the selector is ADDED for it, one that
// stops matching is DELETED (with the revision of the change).
func (w *watchStream) translate(ev *clientv3.Event) (watch.Event, bool, error) {
	s := w.store
	rev := ev.Kv.ModRevision
	var cur, prev runtime.Object
	var err error
	if ev.Type == clientv3.EventTypePut {
		key := string(ev.Kv.Key)
		// The Create that made this write may have decoded it already
		// (see sharedDecodes); if it is still running, it may take ours.
		taken, creating := s.shared.forWatch(key, rev)
		if cur = taken; cur == nil {
			if cur, err = s.decodeNew(key, ev.Kv.Value, rev); err != nil {
				return watch.Event{}, false, err
			}
			if creating != nil {
				s.shared.decoded(key, creating, rev, cur)
			}
		}
	}
	needPrev := ev.Type == clientv3.EventTypeDelete || !w.pred.Empty()
	if needPrev && ev.PrevKv == nil && (ev.Type == clientv3.EventTypeDelete || !ev.IsCreate()) {
		// Neither etcd nor fillPrevious could give the previous value (it
		// was compacted away: the watch started just below the compaction
		// revision). Guessing
		// would turn an update into an ADDED or lose a DELETED; like
		// kube-apiserver, end the watch with an error so the client relists.
		return watch.Event{}, false, fmt.Errorf("etcd event received with PrevKv=nil (key=%q, modRevision=%d, type=%s)",
			string(ev.Kv.Key), ev.Kv.ModRevision, ev.Type)
	}
	if needPrev && ev.PrevKv != nil {
		// The previous state is reported with this event's revision.
		if prev, err = s.decodeNew(string(ev.PrevKv.Key), ev.PrevKv.Value, rev); err != nil {
			return watch.Event{}, false, err
		}
	}
	curMatch := cur != nil && w.matches(cur)
	prevMatch := prev != nil && w.matches(prev)
	switch {
	case cur != nil && curMatch:
		created := ev.IsCreate() || (!w.pred.Empty() && !prevMatch)
		if created {
			return watch.Event{Type: watch.Added, Object: cur}, true, nil
		}
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	case prevMatch:
		return watch.Event{Type: watch.Deleted, Object: prev}, true, nil
	}
	return watch.Event{}, false, nil
}

// eventValueSizes are the lengths of the value an etcd event writes (0
// for a delete) and of the one it replaces or deletes (0 when etcd gave
// none: a create, or a previous value compacted away).
func eventValueSizes(ev *clientv3.Event) (added, removed int) {
	if ev.Type == clientv3.EventTypePut {
		added = len(ev.Kv.Value)
	}
	if ev.PrevKv != nil {
		removed = len(ev.PrevKv.Value)
	}
	return added, removed
}

func (w *watchStream) matches(obj runtime.Object) bool {
	ok, err := w.pred.Matches(obj)
	return err == nil && ok
}

// bookmark returns an empty object of the resource carrying only rev.
func (w *watchStream) bookmark(rev int64, initialEventsEnd bool) runtime.Object {
	obj := w.store.newFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEventsEnd {
			m.SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true"})
		}
	}
	return obj
}

func (w *watchStream) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *watchStream) sendError(err *apierrors.StatusError) {
	status := err.ErrStatus
	w.send(watch.Event{Type: watch.Error, Object: &status})
}

// requestProgress asks etcd for a progress notification on this watch's
// stream. After the watch has ended it does nothing (the closed Watcher
// refuses, rather than opening a new stream).
func (w *watchStream) requestProgress(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, progressRequestTimeout)
	defer cancel()
	// The same stream key as the watch (both require a leader).
	return w.etcd.RequestProgress(clientv3.WithRequireLeader(ctx))
}

// progressRequestTimeout bounds how long a progress request waits for a
// watch stream that is still (re)connecting.
const progressRequestTimeout = time.Second

// progressRequester keeps the store's watches that want bookmarks and asks
// etcd for progress notifications on each of them every interval, so
// bookmarks do not depend on the etcd server's own (by default ten-minute)
// progress interval.
type progressRequester struct {
	interval time.Duration

	mu      sync.Mutex
	watches map[*watchStream]struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

func newProgressRequester(interval time.Duration) *progressRequester {
	return &progressRequester{interval: interval, watches: map[*watchStream]struct{}{}}
}

// add registers a watch that wants bookmarks; the returned func unregisters.
func (p *progressRequester) add(w *watchStream) (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watches[w] = struct{}{}
	if p.cancel == nil && !p.stopped {
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		p.done = make(chan struct{})
		go p.loop(ctx, p.done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.watches, w)
			var cancel context.CancelFunc
			var done chan struct{}
			if len(p.watches) == 0 && p.cancel != nil {
				cancel, done = p.cancel, p.done
				p.cancel, p.done = nil, nil
			}
			p.mu.Unlock()
			if cancel != nil {
				cancel()
				<-done
			}
		})
	}
}

// requestAll asks for a progress notification on every registered watch.
func (p *progressRequester) requestAll(ctx context.Context) error {
	p.mu.Lock()
	watches := make([]*watchStream, 0, len(p.watches))
	for w := range p.watches {
		watches = append(watches, w)
	}
	p.mu.Unlock()
	var errs []error
	for _, w := range watches {
		if err := w.requestProgress(ctx); err != nil && w.ctx.Err() == nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *progressRequester) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = p.requestAll(ctx)
		}
	}
}

func (p *progressRequester) stop() {
	p.mu.Lock()
	p.stopped = true
	cancel, done := p.cancel, p.done
	p.cancel, p.done = nil, nil
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// RequestWatchProgress asks etcd to send a progress notification now to each
// of the store's watches that allow bookmarks; they turn it into a BOOKMARK
// at the revision etcd has sent them every event up to. The watch cache uses
// it to learn quickly that it is up to date with a revision a reader asks
// for.
func (s *Store) RequestWatchProgress(ctx context.Context) error {
	return s.bookmarks.requestAll(ctx)
}

// CurrentRevision returns etcd's current revision (a quorum read).
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	start := time.Now()
	resp, err := s.client.KV.Get(ctx, s.pathPrefix+s.resource.ResourcePrefix, clientv3.WithCountOnly())
	s.metrics.observe(ctx, "getCurrentResourceVersion", s.mlabels, start, err)
	if err != nil {
		return 0, s.etcdError(s.resource.ResourcePrefix, "get", err)
	}
	return resp.Header.Revision, nil
}
