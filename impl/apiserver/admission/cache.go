package admission

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// objectCache mirrors one resource's store in memory (list, then watch
// from the list's resourceVersion; relist when the watch ends), so plugins
// do not read etcd on every request, as kube-apiserver's plugins read
// informers. It is eventually consistent; until it has synced, and after
// its watch fails until it has relisted, reads go to the store. Cached
// objects are shared: callers must not modify them.
type objectCache struct {
	s       objectStore
	newList func() runtime.Object

	mu     sync.RWMutex
	synced bool
	items  map[string]map[string]runtime.Object // namespace → name → object
}

func newObjectCache(s objectStore, newList func() runtime.Object) *objectCache {
	return &objectCache{s: s, newList: newList}
}

// run keeps the cache current until ctx ends.
func (c *objectCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		c.listAndWatch(ctx)
		c.mu.Lock()
		c.synced = false
		c.mu.Unlock()
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (c *objectCache) listAndWatch(ctx context.Context) {
	l := c.newList()
	if err := c.s.store.GetList(ctx, c.s.listKey(""), storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, l); err != nil {
		return
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return
	}
	la, err := meta.ListAccessor(l)
	if err != nil {
		return
	}
	items := map[string]map[string]runtime.Object{}
	for _, o := range objs {
		put(items, o)
	}
	w, err := c.s.store.Watch(ctx, c.s.listKey(""), storage.ListOptions{
		ResourceVersion: la.GetResourceVersion(), Recursive: true, Predicate: storage.Everything()})
	if err != nil {
		return
	}
	defer w.Stop()
	c.mu.Lock()
	c.items, c.synced = items, true
	c.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				c.mu.Lock()
				put(c.items, ev.Object)
				c.mu.Unlock()
			case watch.Deleted:
				if m, err := meta.Accessor(ev.Object); err == nil {
					c.mu.Lock()
					delete(c.items[m.GetNamespace()], m.GetName())
					c.mu.Unlock()
				}
			case watch.Error:
				return
			}
		}
	}
}

func put(items map[string]map[string]runtime.Object, o runtime.Object) {
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	ns := items[m.GetNamespace()]
	if ns == nil {
		ns = map[string]runtime.Object{}
		items[m.GetNamespace()] = ns
	}
	ns[m.GetName()] = o
}

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
	c.mu.RLock()
	if c.synced && !fresh {
		var out []runtime.Object
		if namespace == "" {
			for _, ns := range c.items {
				for _, o := range ns {
					out = append(out, o)
				}
			}
		} else {
			for _, o := range c.items[namespace] {
				out = append(out, o)
			}
		}
		c.mu.RUnlock()
		return out, nil
	}
	c.mu.RUnlock()
	l := c.newList()
	if err := c.s.list(ctx, namespace, fresh, l); err != nil {
		return nil, err
	}
	return meta.ExtractList(l)
}

// get returns one object: from memory once synced (fresh false), else
// (or when fresh) from the store. A missing object is a NotFound error.
func (c *objectCache) get(ctx context.Context, namespace, name string, fresh bool, out runtime.Object) (runtime.Object, error) {
	if !fresh {
		c.mu.RLock()
		if c.synced {
			o, ok := c.items[namespace][name]
			c.mu.RUnlock()
			if ok {
				return o, nil
			}
			return nil, notFound(c.s.gr, name)
		}
		c.mu.RUnlock()
	}
	if err := c.s.get(ctx, namespace, name, fresh, out); err != nil {
		return nil, err
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

// namespaceCache is the shared namespaces cache as a NamespaceGetter.
func (d *deps) namespaces() (NamespaceGetter, error) {
	c, err := d.cache(nsResource, func() runtime.Object { return &corev1.NamespaceList{} })
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, name string, fresh bool) (*corev1.Namespace, error) {
		o, err := c.get(ctx, "", name, fresh, &corev1.Namespace{})
		if err != nil {
			return nil, err
		}
		return o.(*corev1.Namespace), nil
	}, nil
}
