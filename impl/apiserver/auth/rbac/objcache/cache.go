// Package objcache keeps an in-memory copy of one resource's objects, fed
// by the API server's own storage: list (or, with Source.Streaming, take a
// watch's initial events), then watch from there, and load again whenever
// the watch ends or reports an error (410 Expired after a compaction); the
// loop is localcache's. It is the informer the
// authorizers (RBAC, Node) read from, as kube-apiserver's authorizers read
// from shared informers over its loopback client.
//
// Constructor: New(Source, Handler). Run(ctx) keeps it current until ctx
// ends; WaitSynced(ctx) returns once the first list has been loaded.
package objcache

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/internal/localcache"
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
	// Streaming loads the state with one watch's initial events
	// (localcache.WatchList) instead of a quorum list. From the watch
	// cache those are the cached objects themselves, so a cache of a big
	// resource (the Node authorizer's pods) holds no second decode of
	// every object, at its first load or when it loads again after its
	// watch ended.
	Streaming bool
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

// Cache is the in-memory copy of one resource. Authorizers have no store
// to fall back to, so it keeps answering from its last state while it
// lists again (localcache's KeepWhileReloading).
type Cache struct {
	c *localcache.Cache
}

// New returns a cache of src; handler (may be nil) observes every change.
func New(src Source, handler Handler) *Cache {
	load := localcache.ListThenWatch
	if src.Streaming {
		load = localcache.WatchList
	}
	return &Cache{c: localcache.New(localcache.Config{
		Store: src.Store, Key: src.Key, Load: load, NewList: src.NewList,
		KeepWhileReloading: true, OnChange: handler,
	})}
}

// Get returns the cached object namespace/name ("" namespace for
// cluster-scoped objects). Callers must not modify it.
func (c *Cache) Get(namespace, name string) (runtime.Object, bool) {
	o, ok, _ := c.c.Get(namespace, name)
	return o, ok
}

// List returns every cached object, in no particular order. Callers must
// not modify them.
func (c *Cache) List() []runtime.Object {
	objs, _ := c.c.List("")
	return objs
}

// HasSynced reports whether the first list has been loaded.
func (c *Cache) HasSynced() bool { return c.c.HasLoaded() }

// WaitSynced returns nil once the first list has been loaded, or ctx's
// error.
func (c *Cache) WaitSynced(ctx context.Context) error {
	if err := c.c.WaitLoaded(ctx); err != nil {
		return fmt.Errorf("objcache: %w", err)
	}
	return nil
}

// Run keeps the cache current until ctx ends.
func (c *Cache) Run(ctx context.Context) { c.c.Run(ctx) }
