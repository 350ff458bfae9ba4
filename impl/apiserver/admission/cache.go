package admission

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/internal/localcache"
)

// objectCache mirrors one resource's store in memory (localcache: list,
// then watch from the list's resourceVersion; relist when the watch ends),
// so plugins do not read etcd on every request, as kube-apiserver's plugins
// read informers. It is eventually consistent; until it has synced, and
// after its watch fails until it has relisted, reads go to the store.
// Cached objects are shared: callers must not modify them.
//
// A reader never sees an object go back to an older version or vanish
// after a store read showed it: the cache answers only once its state has
// reached the newest resourceVersion of an object a store read handed out
// (floor). Without that, a cache loaded from a list taken before a store
// read would hide what that read showed until its watch caught up (a
// webhook configuration called for one request, then not for the next).
// A deletion a store read showed may still be undone by the cache until
// its watch brings the delete: a list does not say when an object went.
type objectCache struct {
	s       objectStore
	newList func() runtime.Object
	local   *localcache.Cache
	floor   atomic.Int64
}

func newObjectCache(s objectStore, newList func() runtime.Object) *objectCache {
	return &objectCache{s: s, newList: newList, local: localcache.New(localcache.Config{
		Store: s.store, Key: s.listKey(""), Load: localcache.ListThenWatch, NewList: newList,
		// Reads fall back to the store while the cache relists.
		KeepWhileReloading: false,
	})}
}

// run keeps the cache current until ctx ends.
func (c *objectCache) run(ctx context.Context) { c.local.Run(ctx) }

// list returns the objects of a namespace ("" for all of them), from
// memory once synced, else from the store.
func (c *objectCache) list(ctx context.Context, namespace string) ([]runtime.Object, error) {
	return c.read(ctx, namespace, false)
}

// listFresh returns the objects of a namespace with a quorum read.
func (c *objectCache) listFresh(ctx context.Context, namespace string) ([]runtime.Object, error) {
	return c.read(ctx, namespace, true)
}

func (c *objectCache) read(ctx context.Context, namespace string, fresh bool) ([]runtime.Object, error) {
	if !fresh {
		if objs, ok := c.local.ListAt(namespace, c.floor.Load()); ok {
			return objs, nil
		}
	}
	l := c.newList()
	if err := c.s.list(ctx, namespace, fresh, l); err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	if !fresh {
		for _, o := range objs {
			c.raiseFloor(o)
		}
	}
	return objs, nil
}

// raiseFloor records that a store read handed out o: the cache answers
// again once it has reached o's resourceVersion.
func (c *objectCache) raiseFloor(o runtime.Object) {
	rv := localcache.RV(o)
	for {
		cur := c.floor.Load()
		if rv <= cur || c.floor.CompareAndSwap(cur, rv) {
			return
		}
	}
}

// get returns one object: from memory once synced (fresh false), else
// (or when fresh) from the store. A missing object is a NotFound error.
func (c *objectCache) get(ctx context.Context, namespace, name string, fresh bool, out runtime.Object) (runtime.Object, error) {
	return c.lookup(ctx, namespace, name, fresh, func() runtime.Object { return out })
}

// lookup is get with the object to read into made by newOut only when the
// store is read, not for every answer from memory.
func (c *objectCache) lookup(ctx context.Context, namespace, name string, fresh bool, newOut func() runtime.Object) (runtime.Object, error) {
	if !fresh {
		if o, found, ok := c.local.GetAt(namespace, name, c.floor.Load()); ok {
			if found {
				return o, nil
			}
			return nil, notFound(c.s.gr, name)
		}
	}
	out := newOut()
	if err := c.s.get(ctx, namespace, name, fresh, out); err != nil {
		return nil, err
	}
	if !fresh {
		c.raiseFloor(out)
	}
	return out, nil
}

// deps is what plugin factories build on: the server's stores and one
// shared cache per resource (their loops are the starters NewPlugins
// returns).
type deps struct {
	opts   Options
	stores StoreGetter
	caches map[schema.GroupResource]*objectCache
	order  []*objectCache
}

func (d *deps) store(gr schema.GroupResource) (objectStore, error) {
	return storeFor(d.stores, gr)
}

// cache returns the resource's shared cache, creating it on first use.
func (d *deps) cache(gr schema.GroupResource, newList func() runtime.Object) (*objectCache, error) {
	if c, ok := d.caches[gr]; ok {
		return c, nil
	}
	s, err := d.store(gr)
	if err != nil {
		return nil, err
	}
	c := newObjectCache(s, newList)
	if d.caches == nil {
		d.caches = map[schema.GroupResource]*objectCache{}
	}
	d.caches[gr] = c
	d.order = append(d.order, c)
	return c, nil
}

// typed converts cached objects (*T) to values.
func typed[T any](objs []runtime.Object) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := any(o).(*T); ok {
			out = append(out, *t)
		}
	}
	return out
}

func newNamespace() runtime.Object { return &corev1.Namespace{} }

// namespaceCache is the shared namespaces cache as a NamespaceGetter.
func (d *deps) namespaces() (NamespaceGetter, error) {
	c, err := d.cache(nsResource, func() runtime.Object { return &corev1.NamespaceList{} })
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, name string, fresh bool) (*corev1.Namespace, error) {
		o, err := c.lookup(ctx, "", name, fresh, newNamespace)
		if err != nil {
			return nil, err
		}
		return o.(*corev1.Namespace), nil
	}, nil
}
