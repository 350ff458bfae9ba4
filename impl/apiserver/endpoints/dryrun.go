package endpoints

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// DryRunner is implemented by a store whose writes decide more than the
// object it is given says (the services store allocates ClusterIPs and
// NodePorts). A dry-run create or update asks it for the object the write
// would store, so the response shows what a real request would get; it
// writes nothing and reserves nothing. A store without it gets no call: a
// dry run's response is then the object as admitted and validated.
type DryRunner interface {
	// DryRunCreate returns what Create(ctx, key, obj, ...) would store, or
	// the error it would fail with.
	DryRunCreate(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error)
	// DryRunUpdate returns what an update of old (the stored object) to obj
	// would store, or the error it would fail with.
	DryRunUpdate(ctx context.Context, key string, old, obj runtime.Object) (runtime.Object, error)
}

// dryRunCreate is the response of a dry-run create of obj at key.
func (h *Handler) dryRunCreate(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	d, ok := h.store.(DryRunner)
	if !ok {
		return obj, nil
	}
	out, err := d.DryRunCreate(ctx, key, obj)
	if err != nil {
		return nil, ToStatusError(err, VerbCreate, h.gr, accessor(obj).GetName())
	}
	return out, nil
}

// dryRunUpdate is the response of a dry-run update of old to obj at key.
func (h *Handler) dryRunUpdate(ctx context.Context, key string, old, obj runtime.Object) (runtime.Object, error) {
	d, ok := h.store.(DryRunner)
	if !ok {
		return obj, nil
	}
	return d.DryRunUpdate(ctx, key, old, obj)
}
