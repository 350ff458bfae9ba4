package endpoints

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// FieldInitializer is implemented by a store whose objects get fields from
// the server's configuration before they are validated, as kube-apiserver's
// BeginCreate and BeginUpdate hooks give them (the services store:
// ipFamilyPolicy and ipFamilies from the cluster's IP families). The
// handler calls it once the object is prepared (PrepareForCreate or
// PrepareForUpdate), before validation: its errors are the request's (a
// 422 of their own, as kube-apiserver's come before validation runs), and
// validation and validating admission see the fields filled. It changes
// obj only and reserves nothing: the write may not follow (a failed
// validation, a dry run, an update retried on a conflict).
type FieldInitializer interface {
	// InitCreate fills obj's fields for a create.
	InitCreate(ctx context.Context, obj runtime.Object) error
	// InitUpdate fills obj's fields for an update of old (the stored
	// object).
	InitUpdate(ctx context.Context, obj, old runtime.Object) error
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
