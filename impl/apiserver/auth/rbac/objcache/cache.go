// Package objcache keeps an in-memory copy of one resource's objects, fed
// by the API server's own storage: list, then watch from the list's
// resourceVersion, and list again whenever the watch ends or reports an
// error (410 Expired after a compaction). It is the informer the
// authorizers (RBAC, Node) read from, as kube-apiserver's authorizers read
// from shared informers over its loopback client.
//
// Constructor: New(Source, Handler). Run(ctx) keeps it current until ctx
// ends; WaitSynced(ctx) returns once the first list has been loaded.
package objcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Stores is the part of the API server's StoreGetter the caches need:
// apiserver.Server implements it.
type Stores interface {
	// Store is the storage of a served resource.
	Store(gr schema.GroupResource) (storage.Interface, bool)
	// ObjectKey is the key of one object.
	ObjectKey(gr schema.GroupResource, namespace, name string) string
	// ListKey is the key prefix of a list or watch ("" namespace: all).
	ListKey(gr schema.GroupResource, namespace string) string
}

// Source says where a cache reads from.
type Source struct {
	// Store is the resource's storage.
	Store storage.Interface
	// Key is the recursive list/watch key (e.g. "/pods/").
	Key string
	// NewList makes an empty list object (e.g. &corev1.PodList{}).
	NewList func() runtime.Object
}

// SourceFor builds the Source of resource gr from stores.
func SourceFor(stores Stores, gr schema.GroupResource, newList func() runtime.Object) (Source, error) {
	s, ok := stores.Store(gr)
	if !ok {
		return Source{}, fmt.Errorf("objcache: resource %s is not served", gr)
	}
	return Source{Store: s, Key: stores.ListKey(gr, ""), NewList: newList}, nil
}

// Handler observes changes: old is nil for an addition, cur is nil for a
// deletion. It is called with the cache's lock not held, in event order,
// from the cache's Run goroutine.
type Handler func(old, cur runtime.Object)

// Cache is the in-memory copy of one resource.
type Cache struct {
	src     Source
	handler Handler
	log     *slog.Logger
	// RetryDelay is the pause before listing again after a failure.
	retryDelay time.Duration

	mu     sync.RWMutex
	items  map[string]runtime.Object
	synced bool
	ready  chan struct{}
}

// New returns a cache of src; handler (may be nil) observes every change.
func New(src Source, handler Handler) *Cache {
	return &Cache{src: src, handler: handler, log: slog.Default(), retryDelay: 200 * time.Millisecond,
		items: map[string]runtime.Object{}, ready: make(chan struct{})}
}

// key is the cache key of obj: namespace/name, or name.
func key(obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	if m.GetNamespace() == "" {
		return m.GetName(), nil
	}
	return m.GetNamespace() + "/" + m.GetName(), nil
}

// Get returns the cached object namespace/name ("" namespace for
// cluster-scoped objects). Callers must not modify it.
func (c *Cache) Get(namespace, name string) (runtime.Object, bool) {
	k := name
	if namespace != "" {
		k = namespace + "/" + name
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.items[k]
	return o, ok
}

// List returns every cached object, in no particular order. Callers must
// not modify them.
func (c *Cache) List() []runtime.Object {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]runtime.Object, 0, len(c.items))
	for _, o := range c.items {
		out = append(out, o)
	}
	return out
}

// HasSynced reports whether the first list has been loaded.
func (c *Cache) HasSynced() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// WaitSynced returns nil once the first list has been loaded, or ctx's
// error.
func (c *Cache) WaitSynced(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("objcache: waiting for the first list of %s: %w", c.src.Key, ctx.Err())
	}
}

// Run keeps the cache current until ctx ends.
func (c *Cache) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.log.Debug("objcache: relisting", "key", c.src.Key, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.retryDelay):
		}
	}
}

// errWatchEnded is returned when the watch channel closes.
var errWatchEnded = errors.New("watch ended")

func (c *Cache) listAndWatch(ctx context.Context) error {
	list := c.src.NewList()
	pred := storage.Everything()
	if err := c.src.Store.GetList(ctx, c.src.Key, storage.ListOptions{Recursive: true, Predicate: pred}, list); err != nil {
		return fmt.Errorf("listing %s: %w", c.src.Key, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("reading list of %s: %w", c.src.Key, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return fmt.Errorf("reading list of %s: %w", c.src.Key, err)
	}
	c.replace(objs)

	pred.AllowWatchBookmarks = true
	w, err := c.src.Store.Watch(ctx, c.src.Key, storage.ListOptions{
		ResourceVersion: lm.GetResourceVersion(), Recursive: true, Predicate: pred,
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", c.src.Key, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errWatchEnded
			}
			switch ev.Type {
			case watch.Error:
				return fmt.Errorf("watch of %s: %v", c.src.Key, ev.Object)
			case watch.Bookmark:
				continue
			case watch.Added, watch.Modified:
				c.set(ev.Object)
			case watch.Deleted:
				c.remove(ev.Object)
			}
		}
	}
}

// replace installs a fresh list, telling the handler what changed since
// the previous state.
func (c *Cache) replace(objs []runtime.Object) {
	fresh := make(map[string]runtime.Object, len(objs))
	for _, o := range objs {
		k, err := key(o)
		if err != nil {
			continue
		}
		fresh[k] = o
	}
	c.mu.Lock()
	old := c.items
	c.items = fresh
	first := !c.synced
	c.synced = true
	c.mu.Unlock()
	if c.handler != nil {
		for k, o := range old {
			if _, ok := fresh[k]; !ok {
				c.handler(o, nil)
			}
		}
		for k, o := range fresh {
			c.handler(old[k], o)
		}
	}
	if first {
		close(c.ready)
	}
}

func (c *Cache) set(obj runtime.Object) {
	k, err := key(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	old := c.items[k]
	c.items[k] = obj
	c.mu.Unlock()
	if c.handler != nil {
		c.handler(old, obj)
	}
}

func (c *Cache) remove(obj runtime.Object) {
	k, err := key(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	old, ok := c.items[k]
	delete(c.items, k)
	c.mu.Unlock()
	if ok && c.handler != nil {
		c.handler(old, nil)
	}
}
