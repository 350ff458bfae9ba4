// Package cacher is the watch cache: per resource, it lists and watches
// etcd into memory (the current objects plus a ring buffer of recent
// events), serves watches from any resourceVersion still in the ring and
// lists/gets with resourceVersion "0" or "not older than N" from memory, and
// passes writes, quorum reads ("") and exact-revision or continued lists to
// the etcd3 store behind it.
//
// Spec properties: STORE-1 (resourceVersions are etcd revisions, also from
// memory), STORE-6 (watch selector transitions). A watcher that cannot keep
// up is closed rather than allowed to block the others; its client
// re-watches from the last resourceVersion it saw.
package cacher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/btree"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// Upstream is what the cache lists and watches and writes through: an
// *etcd3.Store.
type Upstream interface {
	storage.Interface
	// RequestWatchProgress makes etcd send its watches a progress
	// notification now.
	RequestWatchProgress(ctx context.Context) error
	// CurrentRevision is etcd's revision now (a quorum read).
	CurrentRevision(ctx context.Context) (int64, error)
	// PathPrefix is the etcd key prefix of every key ("/registry").
	PathPrefix() string
	// Stats counts the resource's keys in etcd (without their sizes).
	storage.StatsReporter
}

var _ Upstream = (*etcd3.Store)(nil)

// Config configures the watch cache of one resource.
type Config struct {
	// Store is the etcd store the cache reads from and writes through.
	Store Upstream
	// Resource describes the resource.
	Resource storage.ResourceConfig
	// EventBufferSize is how many recent events are kept for watches that
	// start in the past; 0 means 1024.
	EventBufferSize int
	// WatcherBufferSize is how many events a watcher may fall behind before
	// it is closed; 0 means 256.
	WatcherBufferSize int
	// AllEventsWatcherBufferSize is the same for a watcher of a resource
	// with an IndexField whose selector does not pin the field (the
	// scheduler's, the controllers' and the Node authorizer's watches of
	// every pod): it is offered every event of the resource, so it falls
	// behind by more events in the same pause than a node's watch does.
	// 0 means 1,000, or WatcherBufferSize if that is larger. As
	// kube-apiserver's cacher, which gives such watchers 1,000 slots
	// against 10 for the rest, because there are few of them and closing
	// one makes its client list everything again.
	AllEventsWatcherBufferSize int
	// IndexField, if set (e.g. "spec.nodeName" for pods), indexes watchers
	// whose field selector requires an exact value of it, so an event only
	// costs the watchers of its value.
	IndexField string
	// TooLargeResourceVersionWait is how long a read waits for the cache to
	// reach a requested resourceVersion; 0 means 3 seconds.
	TooLargeResourceVersionWait time.Duration
	// ReadyWait is how long a watch waits for the cache to (re)initialize;
	// 0 means 30 seconds.
	ReadyWait time.Duration
	// BookmarkFrequency is how often a watcher that allows bookmarks gets
	// one (and so its client a fresh resourceVersion to resume from); 0
	// means one minute, as upstream's cacher.
	BookmarkFrequency time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// TerminatedWatchers, if set, counts the watchers closed because they
	// could not keep up (kube-apiserver's apiserver_terminated_watchers_total
	// for this resource). Each such close makes a client watch again from
	// its last resourceVersion, or list everything if that is gone.
	TerminatedWatchers prometheus.Counter
}

// Cacher is storage.Interface with a watch cache.
type Cacher struct {
	store      Upstream
	res        storage.ResourceConfig
	getAttrs   storage.AttrFunc
	indexField string
	ringCap    int
	watchBuf   int
	tooLarge   time.Duration
	readyWait  time.Duration
	bookmarks  time.Duration // BookmarkFrequency
	log        *slog.Logger
	terminated prometheus.Counter // Config.TerminatedWatchers; may be nil
	intern     *interner          // the reflector's
	probe      cachedObject       // the reflector's: the key it looks up (reflectorCached)
	keyScratch []byte             // the reflector's: the key of the object it wraps (newCached)

	// watchBufAll is the input buffer of an unindexed watcher of an
	// indexed resource (Config.AllEventsWatcherBufferSize).
	watchBufAll int

	// storedBytes is the sum of the etcd values' lengths of the objects
	// at the revision the cache's etcd watch has reached: set from its
	// list, then changed by each event the watch reads (on the etcd
	// store's watch goroutine: storage.WithValueSizes). averageSize is
	// the last average Stats computed while ready.
	storedBytes atomic.Int64
	averageSize atomic.Int64

	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	wg      sync.WaitGroup // watcher goroutines
	stopped chan struct{}
	stopOne sync.Once

	mu          sync.RWMutex
	ready       bool
	readyCh     chan struct{} // closed while ready
	rv          int64         // the revision the cache reflects
	progressCh  chan struct{} // closed and replaced when rv advances
	items       *btree.BTreeG[*cachedObject]
	ring        []*cacheEvent
	ringStart   int
	ringLen     int
	windowStart int64 // the cache has every event after this revision
	bookmarkRV  int64 // the highest bookmark of the current etcd watch
	nextID      int64
	unindexed   map[int64]*cacheWatcher
	indexed     map[string]map[int64]*cacheWatcher
	considered  int64 // watcher checks made while dispatching (for tests)
}

var _ storage.Interface = (*Cacher)(nil)

// cachedObject is an object in the cache with its selectable attributes.
type cachedObject struct {
	key    string
	obj    runtime.Object
	labels labels.Set
	fields fieldList
}

func lessKey(a, b *cachedObject) bool { return a.key < b.key }

// cacheEvent is one change of the cache.
type cacheEvent struct {
	typ  watch.EventType // Added, Modified, Deleted or Bookmark
	key  string
	rv   int64
	cur  *cachedObject // nil for Deleted
	prev *cachedObject // the state before (for Deleted: the deleted object at rv)

	prevAtRVOnce sync.Once
	prevAtRV     runtime.Object // prev stamped with rv, for "left the selector"
}

// New starts the watch cache of cfg.Resource; Stop stops it.
func New(cfg Config) (*Cacher, error) {
	if cfg.Store == nil {
		return nil, errors.New("cacher: Store is required")
	}
	c := &Cacher{
		store:      cfg.Store,
		res:        cfg.Resource,
		getAttrs:   cfg.Resource.GetAttrs,
		indexField: cfg.IndexField,
		intern:     newInterner(),
		ringCap:    cfg.EventBufferSize,
		watchBuf:   cfg.WatcherBufferSize,
		tooLarge:   cfg.TooLargeResourceVersionWait,
		readyWait:  cfg.ReadyWait,
		bookmarks:  cfg.BookmarkFrequency,
		log:        cfg.Logger,
		terminated: cfg.TerminatedWatchers,
		done:       make(chan struct{}),
		stopped:    make(chan struct{}),
		readyCh:    make(chan struct{}),
		progressCh: make(chan struct{}),
		items:      btree.NewG(32, lessKey),
		unindexed:  map[int64]*cacheWatcher{},
		indexed:    map[string]map[int64]*cacheWatcher{},
	}
	if c.getAttrs == nil {
		c.getAttrs = storage.DefaultAttrs
	}
	if c.ringCap <= 0 {
		c.ringCap = 1024
	}
	if c.watchBuf <= 0 {
		c.watchBuf = 256
	}
	if c.watchBufAll = cfg.AllEventsWatcherBufferSize; c.watchBufAll <= 0 {
		c.watchBufAll = max(1000, c.watchBuf)
	}
	if c.tooLarge <= 0 {
		c.tooLarge = 3 * time.Second
	}
	if c.readyWait <= 0 {
		c.readyWait = 30 * time.Second
	}
	if c.bookmarks <= 0 {
		c.bookmarks = defaultBookmarkFrequency
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.ring = make([]*cacheEvent, c.ringCap)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.reflect()
	return c, nil
}

// Stop stops the cache and ends every watch it serves.
func (c *Cacher) Stop() {
	c.stopOne.Do(func() {
		c.cancel()
		<-c.done
		close(c.stopped)
		c.mu.Lock()
		c.terminateAllLocked()
		c.mu.Unlock()
		c.wg.Wait()
	})
}

// newCached wraps obj, which etcd just gave the reflector, for the cache.
// Its repeated values are shared (interner) with the objects already
// cached, the version the cache holds of its key (nil if none) among them.
// Only the reflector's goroutine calls it: the one that changes c.items,
// so it reads them without c.mu (a relist too: c.items stays the
// previous state until the new one replaces it).
//
// Every cached object costs the collector its heap objects in each cycle,
// so the wrapper adds as few as it can: a new version keeps the key
// string of the version it replaces (its key is looked up without a
// string of its own), the object's name is the end of that
// key (the decode's own copy of the name goes), and the wrapper and its
// field list are one allocation (newCachedObject).
func (c *Cacher) newCached(obj runtime.Object) (*cachedObject, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	// obj's storage key, built in the reflector's scratch buffer: a key
	// the cache holds is looked up through a view of it, and only a new
	// key is copied into a string.
	c.keyScratch = append(c.keyScratch[:0], c.res.ResourcePrefix...)
	c.keyScratch = append(c.keyScratch, '/')
	if c.res.Namespaced {
		c.keyScratch = append(append(c.keyScratch, m.GetNamespace()...), '/')
	}
	c.keyScratch = append(c.keyScratch, m.GetName()...)
	var key string
	var priorObj runtime.Object
	if old := c.reflectorCached(unsafe.String(unsafe.SliceData(c.keyScratch), len(c.keyScratch))); old != nil {
		priorObj = old.obj
		key = old.key // equal: one copy for all versions of the key
	} else {
		key = string(c.keyScratch)
	}
	c.intern.object(obj, priorObj)
	if name := m.GetName(); strings.HasSuffix(key, name) {
		m.SetName(key[len(key)-len(name):])
	}
	if c.res.ObjectMetaFieldsOnly {
		// What GetAttrs would give, in key order, without its map.
		co := newCachedObject(smallFields)
		co.key, co.obj, co.labels = key, obj, labels.Set(m.GetLabels())
		co.fields = append(co.fields, "metadata.name", m.GetName(), "metadata.namespace", m.GetNamespace())
		return co, nil
	}
	l, f, err := c.getAttrs(obj)
	if err != nil {
		return nil, err
	}
	co := newCachedObject(2 * len(f))
	co.key, co.obj, co.labels = key, obj, l
	co.fields = appendFields(co.fields, f)
	return co, nil
}

// reflect keeps the cache in sync with etcd: list, then watch from the
// list's revision; on any watch error (compaction included) relist.
func (c *Cacher) reflect() {
	defer close(c.done)
	backoff := 50 * time.Millisecond
	for c.ctx.Err() == nil {
		start := time.Now()
		err := c.listAndWatch()
		c.becomeUnready()
		if c.ctx.Err() != nil {
			return
		}
		c.log.Debug("watch cache relisting", "resource", c.res.GroupResource.String(), "err", err)
		if time.Since(start) > 10*time.Second {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (c *Cacher) listAndWatch() error {
	list := c.res.NewListFunc()
	var listed int64 // the listed values' bytes
	lctx := storage.WithValueSizes(c.ctx, func(added, removed int) { listed += int64(added - removed) })
	err := c.store.GetList(lctx, c.res.ResourcePrefix,
		storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, list)
	if err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	tree := btree.NewG(32, lessKey)
	for _, o := range objs {
		co, err := c.newCached(o)
		if err != nil {
			return err
		}
		tree.ReplaceOrInsert(co)
	}
	listRV, err := strconv.ParseInt(lm.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("list resourceVersion %q: %w", lm.GetResourceVersion(), err)
	}
	pred := storage.Everything()
	pred.AllowWatchBookmarks = true
	// The previous watch has ended (its Stop waits for its goroutine): the
	// sum starts at the list's and follows this watch's events only.
	c.storedBytes.Store(listed)
	wctx := storage.WithValueSizes(c.ctx, func(added, removed int) { c.storedBytes.Add(int64(added - removed)) })
	w, err := c.store.Watch(wctx, c.res.ResourcePrefix, storage.ListOptions{
		ResourceVersion: lm.GetResourceVersion(), Recursive: true, Predicate: pred})
	if err != nil {
		return fmt.Errorf("watching: %w", err)
	}
	defer w.Stop()
	c.replace(tree, listRV)
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return fmt.Errorf("watch error: %v", ev.Object)
		case watch.Bookmark:
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				return err
			}
			rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
			if err != nil {
				return err
			}
			c.processBookmark(rv)
		default:
			if err := c.processEvent(ev); err != nil {
				return err
			}
		}
	}
	return errors.New("etcd watch ended")
}

// replace installs a fresh list as the cache's state.
func (c *Cacher) replace(tree *btree.BTreeG[*cachedObject], rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = tree
	for i := range c.ring {
		c.ring[i] = nil
	}
	c.ringStart, c.ringLen = 0, 0
	c.windowStart = rv
	c.bookmarkRV = 0
	c.advanceLocked(rv)
	c.ready = true
	close(c.readyCh)
}

// becomeUnready marks the cache as re-initializing and closes every watch:
// their clients re-watch once the cache has relisted (as upstream does).
func (c *Cacher) becomeUnready() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready {
		c.ready = false
		c.readyCh = make(chan struct{})
	}
	c.terminateAllLocked()
}

func (c *Cacher) advanceLocked(rv int64) {
	if rv > c.rv {
		c.rv = rv
		close(c.progressCh)
		c.progressCh = make(chan struct{})
	}
}

// requestBookmark gives one watcher a bookmark at the revision the cache
// has reached. It is queued under the cache lock, behind every event the
// dispatcher already queued for the watcher, so it never claims a revision
// whose events the watcher has yet to receive (bookmarkable).
func (c *Cacher) requestBookmark(w *cacheWatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.offerBookmark(&cacheEvent{typ: watch.Bookmark, rv: c.rv})
}

// processBookmark takes etcd's word that the cache's watch has every event
// up to rv: the cache is now current at rv (waitUntilFresh's readers go on).
// It sends the watchers nothing. Each watcher gets its bookmarks from its
// own timer (requestBookmark: about once a minute, and shortly before its
// deadline), as upstream's cacher gives them only to watchers whose
// bookmark time has come. Passing every progress notification on to every
// watcher, as this did until session 12, multiplied bookmarks: progress
// notifications come whenever any store asks (every store each minute, any
// read waiting for freshness every 100 ms), the etcd client broadcasts each
// to every watch on its stream, and a resource with 1,000 watchers (each
// kubelet's ConfigMap watch) sent 1,000 bookmarks for each.
func (c *Cacher) processBookmark(rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bookmarkRV = max(c.bookmarkRV, rv)
	c.advanceLocked(rv)
}

// reflectorCached is the cached object at key, or nil. Only the reflector, the
// one goroutine that changes c.items, calls it: it reads c.items without
// c.mu and looks key up through its own probe (a new one per call would be
// a heap object per event: the btree hands it to its less function).
func (c *Cacher) reflectorCached(key string) *cachedObject {
	c.probe.key = key
	co, _ := c.items.Get(&c.probe)
	c.probe.key = ""
	return co
}

func (c *Cacher) processEvent(ev watch.Event) error {
	co, err := c.newCached(ev.Object)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return err
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rv <= c.bookmarkRV {
		// etcd's watch broke its promise that a progress notification
		// comes after every event up to its revision; the cache and its
		// watchers already claimed that revision. Relist rather than go on
		// with a state that skipped this event.
		c.log.Warn("watch cache: etcd sent an event below a revision its watch had already confirmed; relisting",
			"resource", c.res.GroupResource.String(), "event", rv, "confirmed", c.bookmarkRV)
		return fmt.Errorf("etcd watch event at revision %d after a bookmark at %d", rv, c.bookmarkRV)
	}
	ce := &cacheEvent{typ: ev.Type, key: co.key, rv: rv}
	prev, hadPrev := c.items.Get(co)
	if ev.Type == watch.Deleted {
		c.items.Delete(co)
		ce.prev = co
	} else {
		c.items.ReplaceOrInsert(co)
		ce.cur = co
		if hadPrev {
			ce.prev = prev
		}
	}
	c.appendLocked(ce)
	c.advanceLocked(rv)
	c.dispatchLocked(ce)
	return nil
}

func (c *Cacher) appendLocked(ce *cacheEvent) {
	if c.ringLen == len(c.ring) {
		oldest := c.ring[c.ringStart]
		c.windowStart = oldest.rv
		c.ring[c.ringStart] = nil
		c.ringStart = (c.ringStart + 1) % len(c.ring)
		c.ringLen--
	}
	c.ring[(c.ringStart+c.ringLen)%len(c.ring)] = ce
	c.ringLen++
}

// eventsAfterLocked returns the buffered events with revision > rv.
func (c *Cacher) eventsAfterLocked(rv int64) []*cacheEvent {
	// Binary search the first event after rv.
	lo, hi := 0, c.ringLen
	for lo < hi {
		mid := (lo + hi) / 2
		if c.ring[(c.ringStart+mid)%len(c.ring)].rv <= rv {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	out := make([]*cacheEvent, 0, c.ringLen-lo)
	for i := lo; i < c.ringLen; i++ {
		out = append(out, c.ring[(c.ringStart+i)%len(c.ring)])
	}
	return out
}

// dispatchLocked offers ce to the watchers that may care about it.
func (c *Cacher) dispatchLocked(ce *cacheEvent) {
	for _, w := range c.unindexed {
		c.offerLocked(w, ce)
	}
	if c.indexField == "" || len(c.indexed) == 0 {
		return
	}
	var curVal, prevVal string
	curOK, prevOK := false, false
	if ce.cur != nil {
		curVal, curOK = ce.cur.fields.Get(c.indexField), true
	}
	if ce.prev != nil {
		prevVal, prevOK = ce.prev.fields.Get(c.indexField), true
	}
	if curOK {
		for _, w := range c.indexed[curVal] {
			c.offerLocked(w, ce)
		}
	}
	if prevOK && (!curOK || prevVal != curVal) {
		for _, w := range c.indexed[prevVal] {
			c.offerLocked(w, ce)
		}
	}
}

func (c *Cacher) offerLocked(w *cacheWatcher, ce *cacheEvent) {
	c.considered++
	if !w.interested(ce) {
		return
	}
	select {
	case w.input <- ce:
	default:
		// Too slow: close it instead of blocking everyone else.
		c.log.Debug("closing watcher that cannot keep up", "resource", c.res.GroupResource.String())
		if c.terminated != nil {
			c.terminated.Inc()
		}
		c.terminateLocked(w)
	}
}

func (c *Cacher) terminateLocked(w *cacheWatcher) {
	if w.terminated {
		return
	}
	w.terminated = true
	if w.indexed {
		set := c.indexed[w.indexValue]
		delete(set, w.id)
		if len(set) == 0 {
			delete(c.indexed, w.indexValue)
		}
	} else {
		delete(c.unindexed, w.id)
	}
	close(w.input)
}

func (c *Cacher) terminateAllLocked() {
	for _, w := range c.unindexed {
		c.terminateLocked(w)
	}
	for _, set := range c.indexed {
		for _, w := range set {
			c.terminateLocked(w)
		}
	}
}

// errNotReady is waitUntilFresh's answer to a read that may go to etcd
// instead (orEtcd) when the cache is not ready.
var errNotReady = errors.New("watch cache not ready")

// waitUntilFresh waits until the cache is ready and reflects revision
// minRV, asking etcd for a progress notification so a quiet resource learns
// about writes to others. With orEtcd, a cache that is not ready (it is
// relisting: its watch broke or fell behind a compaction) answers
// errNotReady at once: a read serves from etcd rather than wait for the
// relist, which at tens of thousands of objects under load can outlast the
// wait and turn the read into a 500, as kube-apiserver's reads go to etcd
// while its cache (re)initializes.
func (c *Cacher) waitUntilFresh(ctx context.Context, key string, minRV int64, orEtcd bool) error {
	deadline := time.Now().Add(c.tooLarge)
	var lastRequest time.Time
	for {
		c.mu.RLock()
		ready, cur, ch, readyCh := c.ready, c.rv, c.progressCh, c.readyCh
		c.mu.RUnlock()
		if ready && cur >= minRV {
			return nil
		}
		if !ready && orEtcd {
			return errNotReady
		}
		now := time.Now()
		if now.After(deadline) {
			if !ready {
				return storage.NewError(storage.ErrCodeUnreachable, key, minRV, "storage is (re)initializing", nil)
			}
			return storage.NewError(storage.ErrCodeTooLargeResourceVersion, key, minRV,
				fmt.Sprintf("Too large resource version: %d, current: %d", minRV, cur), nil)
		}
		if ready && now.Sub(lastRequest) > 100*time.Millisecond {
			lastRequest = now
			_ = c.store.RequestWatchProgress(ctx)
		}
		// readyCh stays closed while the cache is ready: waiting on it
		// then would spin. A nil channel never fires.
		var becameReady <-chan struct{}
		if !ready {
			becameReady = readyCh
		}
		wait := min(time.Until(deadline), 100*time.Millisecond)
		select {
		case <-ctx.Done():
			return storage.NewError(storage.ErrCodeUnreachable, key, minRV, "waiting for the watch cache", ctx.Err())
		case <-c.stopped:
			return storage.NewError(storage.ErrCodeUnreachable, key, minRV, "watch cache stopped", nil)
		case <-ch:
		case <-becameReady:
		case <-time.After(wait):
		}
	}
}

// waitReady waits until the cache has listed.
func (c *Cacher) waitReady(ctx context.Context, key string) error {
	c.mu.RLock()
	ready, ch := c.ready, c.readyCh
	c.mu.RUnlock()
	if ready {
		return nil
	}
	t := time.NewTimer(c.readyWait)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return storage.NewError(storage.ErrCodeUnreachable, key, 0, "waiting for the watch cache", ctx.Err())
	case <-c.stopped:
		return storage.NewError(storage.ErrCodeUnreachable, key, 0, "watch cache stopped", nil)
	case <-t.C:
		return storage.NewError(storage.ErrCodeUnreachable, key, 0, "storage is (re)initializing", nil)
	}
}

// isReady reports whether the cache serves reads.
func (c *Cacher) isReady() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// keyPrefix returns the key range a recursive read or watch of key covers.
func keyPrefix(key string, recursive bool) string {
	if recursive && !strings.HasSuffix(key, "/") {
		return key + "/"
	}
	return key
}

// WaitReady waits until the cache has listed from etcd and serves reads.
func (c *Cacher) WaitReady(ctx context.Context) error {
	return c.waitReady(ctx, c.res.ResourcePrefix)
}

var _ storage.StatsReporter = (*Cacher)(nil)

// Stats are the resource's objects while the cache is ready, without an
// etcd request: their number is the size of the cache's tree, their
// average size the bytes of their etcd values (as its etcd watch last
// read them) over that number. kube-apiserver's etcd3 store keeps each
// key's last seen size for this, fed by the lists and watches of its
// watch cache, and averages the sizes of the keys the cache holds; the
// running sum here is the same number once every key's size has been
// seen, without an entry per key. It would drift only if etcd sent an
// update without its previous value (one compacted away as the watch
// started); the next relist resets it. While the cache is not ready
// (relisting) the count is etcd's and the average the last one computed
// while ready (0 if none), as kube-apiserver's poll keeps its last
// stats while the cache cannot answer.
func (c *Cacher) Stats(ctx context.Context) (storage.Stats, error) {
	c.mu.RLock()
	ready, n := c.ready, int64(c.items.Len())
	c.mu.RUnlock()
	if !ready {
		st, err := c.store.Stats(ctx)
		if err == nil && st.EstimatedAverageObjectSizeBytes == 0 {
			st.EstimatedAverageObjectSizeBytes = c.averageSize.Load()
		}
		return st, err
	}
	st := storage.Stats{ObjectCount: n}
	if n > 0 {
		st.EstimatedAverageObjectSizeBytes = max(0, c.storedBytes.Load()) / n
		c.averageSize.Store(st.EstimatedAverageObjectSizeBytes)
	}
	return st, nil
}
