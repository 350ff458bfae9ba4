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
	key, err := h.objectKey(namespace, name)
	if err != nil {
		return nil, err
	}
	obj := h.res.New()
	if err := h.store.Get(ctx, key, storage.GetOptions{}, obj); err != nil {
		return nil, ToStatusError(err, VerbGet, h.gr, name)
	}
	return obj, nil
}
