package apiserver

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// nsCache mirrors the namespaces store through a watch so that admission
// (NamespaceLifecycle) does not read etcd on every create, as
// kube-apiserver's plugin uses an informer. It is eventually consistent;
// a miss falls back to a quorum read.
type nsCache struct {
	store storage.Interface

	mu     sync.RWMutex
	synced bool
	items  map[string]*corev1.Namespace
}

func newNSCache(store storage.Interface) *nsCache {
	return &nsCache{store: store, items: map[string]*corev1.Namespace{}}
}

// get returns the cached namespace; ok is false when the cache cannot
// answer (not synced, or the namespace is not in it).
func (c *nsCache) get(name string) (ns *corev1.Namespace, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced {
		return nil, false
	}
	ns, ok = c.items[name]
	return ns, ok
}

// run keeps the cache current until ctx ends, re-establishing the watch
// (from the current state) whenever it ends.
func (c *nsCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		c.watchOnce(ctx)
		c.mu.Lock()
		c.synced = false
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *nsCache) watchOnce(ctx context.Context) {
	yes := true
	pred := storage.Everything()
	pred.AllowWatchBookmarks = true
	w, err := c.store.Watch(ctx, "/namespaces/", storage.ListOptions{
		ResourceVersion: "", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		Recursive: true, Predicate: pred, SendInitialEvents: &yes,
	})
	if err != nil {
		return
	}
	defer w.Stop()
	fresh := map[string]*corev1.Namespace{}
	initial := true
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Error:
				return
			case watch.Bookmark:
				if initial && isInitialEventsEnd(ev.Object) {
					initial = false
					c.mu.Lock()
					c.items, c.synced = fresh, true
					c.mu.Unlock()
				}
				continue
			}
			ns, isNS := ev.Object.(*corev1.Namespace)
			if !isNS {
				continue
			}
			if initial {
				if ev.Type != watch.Deleted {
					fresh[ns.Name] = ns
				}
				continue
			}
			c.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(c.items, ns.Name)
			} else {
				c.items[ns.Name] = ns
			}
			c.mu.Unlock()
		}
	}
}

func isInitialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
