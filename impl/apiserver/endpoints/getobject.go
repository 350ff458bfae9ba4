package endpoints

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// GetObject reads one object of h's resource, for subresources served
// outside this package (pods/log, pods/exec and nodes/proxy look up the
// pod and its node). Errors are status errors, as a GET would return.
func (h *Handler) GetObject(ctx context.Context, namespace, name string) (runtime.Object, error) {
	return h.getObject(ctx, namespace, name, "")
}

// GetCachedObject is GetObject at resourceVersion "0": any version the
// store has, served by the watch cache without a quorum read of etcd (and
// so possibly stale), for the server's own reads that accept that.
func (h *Handler) GetCachedObject(ctx context.Context, namespace, name string) (runtime.Object, error) {
	return h.getObject(ctx, namespace, name, "0")
}

// ViewCachedObject is GetCachedObject handing view the object read, which
// is the watch cache's own object when the cache serves the read (no
// copy): view must not change it, nor keep anything of it but its strings.
func (h *Handler) ViewCachedObject(ctx context.Context, namespace, name string, view func(runtime.Object)) error {
	v, ok := h.store.(viewer)
	if !ok {
		obj, err := h.GetCachedObject(ctx, namespace, name)
		if err != nil {
			return err
		}
		view(obj)
		return nil
	}
	key, err := h.objectKey(namespace, name)
	if err != nil {
		return err
	}
	if err := v.View(ctx, key, storage.GetOptions{ResourceVersion: "0"}, h.res.New, view); err != nil {
		return ToStatusError(err, VerbGet, h.gr, name)
	}
	return nil
}

// viewer is a store that can hand a read object over without copying it
// (the watch cache: cacher.Cacher.View).
type viewer interface {
	View(ctx context.Context, key string, opts storage.GetOptions, newOut func() runtime.Object, view func(runtime.Object)) error
}

func (h *Handler) getObject(ctx context.Context, namespace, name, resourceVersion string) (runtime.Object, error) {
	key, err := h.objectKey(namespace, name)
	if err != nil {
		return nil, err
	}
	obj := h.res.New()
	if err := h.store.Get(ctx, key, storage.GetOptions{ResourceVersion: resourceVersion}, obj); err != nil {
		return nil, ToStatusError(err, VerbGet, h.gr, name)
	}
	return obj, nil
}
