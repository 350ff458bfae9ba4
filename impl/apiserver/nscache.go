package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/internal/localcache"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// nsCache mirrors the namespaces store through a watch so that admission
// (NamespaceLifecycle) does not read etcd on every create, as
// kube-apiserver's plugin uses an informer. It loads with a streaming list
// (a watch with sendInitialEvents) and loads again whenever the watch
// ends. It is eventually consistent; a miss, or a cache that is not synced,
// falls back to a quorum read.
type nsCache struct {
	local *localcache.Cache
}

func newNSCache(store storage.Interface) *nsCache {
	return &nsCache{local: localcache.New(localcache.Config{
		Store: store, Key: "/namespaces/", Load: localcache.WatchList,
		// getNamespace reads the store while the cache reloads.
		KeepWhileReloading: false,
	})}
}

// get returns the cached namespace; ok is false when the cache cannot
// answer (not synced, or the namespace is not in it).
func (c *nsCache) get(name string) (ns *corev1.Namespace, ok bool) {
	o, found, _ := c.local.Get("", name)
	if !found {
		return nil, false
	}
	ns, ok = o.(*corev1.Namespace)
	return ns, ok
}

// run keeps the cache current until ctx ends, re-establishing the watch
// (from the current state) whenever it ends.
func (c *nsCache) run(ctx context.Context) { c.local.Run(ctx) }
