package endpoints

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// FieldInitializer is implemented by a store whose objects get fields from
// the server's configuration, and values it reserves, before they are
// validated, as kube-apiserver's BeginCreate and BeginUpdate hooks give
// them (the services store: ipFamilyPolicy and ipFamilies from the
// cluster's IP families, ClusterIPs and NodePorts from its allocators).
// A create, or an update of the main resource, opens a scope with
// BeginWrite before anything else and calls its finish when the request
// is over; once the object is prepared (PrepareForCreate or
// PrepareForUpdate), before validation, the handler calls InitCreate or
// InitUpdate with the scope's context: their errors are the request's (as
// kube-apiserver's come before validation runs), and validation and
// validating admission see the fields filled. The store's write with the
// scope's context keeps what was reserved; finish gives back whatever the
// request reserved and did not write (a failed validation, admission or
// write, a dry run).
type FieldInitializer interface {
	// BeginWrite opens a request's scope; finish ends it.
	BeginWrite(ctx context.Context, dryRun bool) (scope context.Context, finish func())
	// InitCreate fills obj's fields for a create.
	InitCreate(ctx context.Context, obj runtime.Object) error
	// InitUpdate fills obj's fields for an update of old (the stored
	// object); an update retried on a conflict calls it again.
	InitUpdate(ctx context.Context, obj, old runtime.Object) error
}

// beginWrite opens the store's scope for a write, if it has one.
func (h *Handler) beginWrite(ctx context.Context, dryRun bool) (context.Context, func()) {
	if i, ok := h.store.(FieldInitializer); ok {
		return i.BeginWrite(ctx, dryRun)
	}
	return ctx, func() {}
}

// initCreate runs the store's InitCreate, if it has one.
func (h *Handler) initCreate(ctx context.Context, obj runtime.Object) error {
	if i, ok := h.store.(FieldInitializer); ok {
		return i.InitCreate(ctx, obj)
	}
	return nil
}

// initUpdate runs the store's InitUpdate, if it has one.
func (h *Handler) initUpdate(ctx context.Context, obj, old runtime.Object) error {
	if i, ok := h.store.(FieldInitializer); ok {
		return i.InitUpdate(ctx, obj, old)
	}
	return nil
}
