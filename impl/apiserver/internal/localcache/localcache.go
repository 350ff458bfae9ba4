// Package localcache keeps an in-memory copy of one resource of the API
// server's own storage, the way a client-go reflector feeds an informer:
// load the whole state (a list, or a watch's initial events), follow a
// watch from there, resume the watch from the last resourceVersion it
// delivered when the server ends it, and load again when the watch
// reports an error (410 Expired after a compaction) or cannot be opened. It is the one loop behind the
// server's internal caches: admission plugins' caches, the authorizers'
// caches (auth/rbac/objcache) and the namespace cache of NamespaceLifecycle.
//
// What differs between those caches is said in Config, not hidden in
// copies of the loop: how the state is loaded (Load), whether the cache
// still answers while it reloads (KeepWhileReloading), and who hears of
// each change (OnChange).
//
// A Cache is eventually consistent: it answers with the state it last
// saw. Cached objects are shared; callers must not modify them.
package localcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Load is how a Cache loads the whole state of its resource.
type Load int

const (
	// ListThenWatch lists with a quorum read (Config.NewList makes the
	// list object), then watches from the list's resourceVersion.
	ListThenWatch Load = iota
	// WatchList opens one watch with sendInitialEvents=true: the events
	// up to the bookmark annotated k8s.io/initial-events-end are the
	// state, and the watch goes on from there (a streaming list).
	WatchList
)

// DefaultRetryDelay is the pause before loading again after the watch ends.
const DefaultRetryDelay = 200 * time.Millisecond

// Config says what a Cache mirrors and how it behaves between loads.
type Config struct {
	// Store is the resource's storage.
	Store storage.Interface
	// Key is the recursive list/watch key of every object (e.g. "/pods/").
	Key string
	// Load says how the state is loaded (ListThenWatch by default).
	Load Load
	// NewList makes an empty list object (e.g. &corev1.PodList{}); it is
	// required by ListThenWatch.
	NewList func() runtime.Object
	// KeepWhileReloading keeps the cache answering from its last state
	// after its watch ends, until the next load replaces it (what a reader
	// without a fallback needs, like the authorizers). Without it the
	// cache reports itself not synced from the end of a watch until the
	// next load completes, so its readers go to the store meanwhile.
	KeepWhileReloading bool
	// OnChange (may be nil) hears every change: old is nil for an
	// addition, cur is nil for a deletion. After a load it hears a
	// deletion for every object that is gone and (old, cur) for every
	// object of the new state (old nil if it is new). It is called in
	// event order from Run's goroutine, with the cache's lock not held.
	OnChange func(old, cur runtime.Object)
	// RetryDelay is the pause before loading again (0: DefaultRetryDelay).
	RetryDelay time.Duration
}

// Cache is the in-memory copy of one resource. Its zero value is not
// usable; make one with New.
type Cache struct {
	cfg Config

	mu sync.RWMutex
	// items holds namespace → name → object ("" namespace: cluster-scoped).
	items  map[string]map[string]runtime.Object
	synced bool
	// rev is the resourceVersion the state reflects: the load's, then
	// each event's and bookmark's (0 before the first load).
	rev int64
	// loaded is closed when the first load completes.
	loaded chan struct{}
}

// New returns a cache of cfg; Run keeps it current.
func New(cfg Config) *Cache {
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = DefaultRetryDelay
	}
	return &Cache{cfg: cfg, items: map[string]map[string]runtime.Object{}, loaded: make(chan struct{})}
}

// Key is the cache's list/watch key.
func (c *Cache) Key() string { return c.cfg.Key }

// Get returns the object namespace/name ("" namespace for cluster-scoped
// ones). synced says whether the cache is loaded (see
// Config.KeepWhileReloading); when it is not, found is false.
func (c *Cache) Get(namespace, name string) (obj runtime.Object, found, synced bool) {
	return c.GetAt(namespace, name, 0)
}

// GetAt is Get answering only from a state at least as new as
// resourceVersion minRev: ok is false (and found false) when the cache
// is not synced or has not yet reached minRev.
func (c *Cache) GetAt(namespace, name string, minRev int64) (obj runtime.Object, found, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced || c.rev < minRev {
		return nil, false, false
	}
	obj, found = c.items[namespace][name]
	return obj, found, true
}

// List returns the objects of a namespace ("" for every object), in no
// particular order. synced says whether the cache is loaded; when it is
// not, objs is nil.
func (c *Cache) List(namespace string) (objs []runtime.Object, synced bool) {
	return c.ListAt(namespace, 0)
}

// ListAt is List answering only from a state at least as new as
// resourceVersion minRev: ok is false (and objs nil) when the cache is
// not synced or has not yet reached minRev.
func (c *Cache) ListAt(namespace string, minRev int64) (objs []runtime.Object, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced || c.rev < minRev {
		return nil, false
	}
	if namespace != "" {
		objs = make([]runtime.Object, 0, len(c.items[namespace]))
		for _, o := range c.items[namespace] {
			objs = append(objs, o)
		}
		return objs, true
	}
	n := 0
	for _, ns := range c.items {
		n += len(ns)
	}
	objs = make([]runtime.Object, 0, n)
	for _, ns := range c.items {
		for _, o := range ns {
			objs = append(objs, o)
		}
	}
	return objs, true
}

// Synced reports whether the cache answers now.
func (c *Cache) Synced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.synced
}

// HasLoaded reports whether the first load has completed.
func (c *Cache) HasLoaded() bool {
	select {
	case <-c.loaded:
		return true
	default:
		return false
	}
}

// WaitLoaded returns nil once the first load has completed, or ctx's error.
func (c *Cache) WaitLoaded(ctx context.Context) error {
	select {
	case <-c.loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the first list of %s: %w", c.cfg.Key, ctx.Err())
	}
}

// Run keeps the cache current until ctx ends: it loads, follows the
// watch, and after the watch ends waits RetryDelay and goes on. A watch
// whose channel closed without an error (the server ended it: a timeout,
// or the watch cache closed a watcher that fell behind) is resumed from
// the last resourceVersion it delivered, as client-go's reflector does,
// and the cache keeps its state and stays synced meanwhile: the events
// since then come from the watch cache's history. Only a watch that
// failed (an error event such as 410 Expired, or a failed request) or a
// load that did not finish leads to loading everything again.
func (c *Cache) Run(ctx context.Context) {
	resume := ""
	for ctx.Err() == nil {
		last, err := c.loadAndWatch(ctx, resume)
		resume = resumeFrom(err, last)
		if resume == "" && !c.cfg.KeepWhileReloading {
			c.mu.Lock()
			c.synced = false
			c.mu.Unlock()
		}
		if ctx.Err() != nil {
			return
		}
		slog.Debug("localcache: watch ended", "key", c.cfg.Key, "err", err, "resume", resume)
		t := time.NewTimer(c.cfg.RetryDelay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// resumeFrom is where the next watch starts after loadAndWatch returned
// err having followed the loaded state up to resourceVersion last ("" if
// it never completed a load): last if the watch channel merely closed,
// "" (load again) otherwise.
func resumeFrom(err error, last string) string {
	if errors.Is(err, errWatchEnded) {
		return last
	}
	return ""
}

// errWatchEnded is returned when the watch channel closes.
var errWatchEnded = errors.New("watch ended")

// loadAndWatch loads the state — or, if resume is a resourceVersion,
// keeps the state it has and watches from there — and follows one watch
// until it ends (an error saying why) or ctx ends (nil). It returns the
// last resourceVersion of the loaded state it followed ("" if no load
// completed): the list's, then each event's and bookmark's.
func (c *Cache) loadAndWatch(ctx context.Context, resume string) (last string, err error) {
	pred := storage.Everything()
	pred.AllowWatchBookmarks = true
	opts := storage.ListOptions{Recursive: true, Predicate: pred}
	var pending map[string]map[string]runtime.Object // the state being loaded from initial events
	switch {
	case resume != "":
		opts.ResourceVersion = resume
		last = resume
	case c.cfg.Load == ListThenWatch:
		list := c.cfg.NewList()
		if err := c.cfg.Store.GetList(ctx, c.cfg.Key, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, list); err != nil {
			return "", fmt.Errorf("listing %s: %w", c.cfg.Key, err)
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			return "", fmt.Errorf("reading list of %s: %w", c.cfg.Key, err)
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			return "", fmt.Errorf("reading list of %s: %w", c.cfg.Key, err)
		}
		fresh := map[string]map[string]runtime.Object{}
		for _, o := range objs {
			putObject(fresh, o)
		}
		c.replace(fresh, lm.GetResourceVersion())
		opts.ResourceVersion = lm.GetResourceVersion()
		last = opts.ResourceVersion
	case c.cfg.Load == WatchList:
		yes := true
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		opts.SendInitialEvents = &yes
		pending = map[string]map[string]runtime.Object{}
	default:
		return "", fmt.Errorf("localcache: unknown load mode %d", c.cfg.Load)
	}
	w, err := c.cfg.Store.Watch(ctx, c.cfg.Key, opts)
	if err != nil {
		return "", fmt.Errorf("watching %s: %w", c.cfg.Key, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				if pending != nil {
					return "", errWatchEnded // the load did not finish
				}
				return last, errWatchEnded
			}
			switch ev.Type {
			case watch.Error:
				return "", fmt.Errorf("watch of %s: %v", c.cfg.Key, ev.Object)
			case watch.Bookmark:
				if pending != nil && isInitialEventsEnd(ev.Object) {
					c.replace(pending, resourceVersion(ev.Object))
					pending = nil
				} else if pending == nil {
					c.advance(resourceVersion(ev.Object))
				}
			case watch.Added, watch.Modified:
				if pending != nil {
					putObject(pending, ev.Object)
				} else {
					c.set(ev.Object)
				}
			case watch.Deleted:
				if pending != nil {
					deleteObject(pending, ev.Object)
				} else {
					c.remove(ev.Object)
				}
			}
			if pending == nil {
				if rv := resourceVersion(ev.Object); rv != "" {
					last = rv
				}
			}
		}
	}
}

// resourceVersion is obj's resourceVersion, "" if it has none.
func resourceVersion(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func isInitialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// putObject stores o in items; objects without metadata are skipped.
func putObject(items map[string]map[string]runtime.Object, o runtime.Object) (old runtime.Object) {
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	ns := items[m.GetNamespace()]
	if ns == nil {
		ns = map[string]runtime.Object{}
		items[m.GetNamespace()] = ns
	}
	old = ns[m.GetName()]
	ns[m.GetName()] = o
	return old
}

// deleteObject deletes o's namespace/name from items, returning what was there.
func deleteObject(items map[string]map[string]runtime.Object, o runtime.Object) (old runtime.Object) {
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	ns := items[m.GetNamespace()]
	old = ns[m.GetName()]
	delete(ns, m.GetName())
	if len(ns) == 0 {
		delete(items, m.GetNamespace())
	}
	return old
}

// parseRV is a resourceVersion as a number (0 if it is not one).
func parseRV(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// RV is an object's resourceVersion as a number (0 if it has none), the
// unit of GetAt's and ListAt's minRev.
func RV(obj runtime.Object) int64 { return parseRV(resourceVersion(obj)) }

// advance records that the state reflects resourceVersion rv (a
// bookmark's).
func (c *Cache) advance(rv string) {
	if n := parseRV(rv); n > 0 {
		c.mu.Lock()
		c.rev = max(c.rev, n)
		c.mu.Unlock()
	}
}

// replace installs a freshly loaded state of resourceVersion rv and marks
// the cache synced, telling OnChange what changed since the previous state.
func (c *Cache) replace(fresh map[string]map[string]runtime.Object, rv string) {
	c.mu.Lock()
	old := c.items
	c.items, c.synced, c.rev = fresh, true, parseRV(rv)
	c.mu.Unlock()
	if h := c.cfg.OnChange; h != nil {
		for ns, objs := range old {
			for name, o := range objs {
				if _, ok := fresh[ns][name]; !ok {
					h(o, nil)
				}
			}
		}
		for ns, objs := range fresh {
			for name, o := range objs {
				h(old[ns][name], o)
			}
		}
	}
	if !c.HasLoaded() {
		close(c.loaded)
	}
}

func (c *Cache) set(o runtime.Object) {
	if _, err := meta.Accessor(o); err != nil {
		return
	}
	c.mu.Lock()
	old := putObject(c.items, o)
	c.rev = max(c.rev, RV(o))
	c.mu.Unlock()
	if c.cfg.OnChange != nil {
		c.cfg.OnChange(old, o)
	}
}

func (c *Cache) remove(o runtime.Object) {
	c.mu.Lock()
	old := deleteObject(c.items, o)
	c.rev = max(c.rev, RV(o))
	c.mu.Unlock()
	if old != nil && c.cfg.OnChange != nil {
		c.cfg.OnChange(old, nil)
	}
}
