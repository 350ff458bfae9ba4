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
