package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// statusKind describes a /status subresource with typed functions.
type statusKind[T object] struct {
	// keep copies from old everything a status write may not change
	// (at least the spec).
	keep func(obj, old T)
	// validate checks the new status.
	validate func(obj, old T) field.ErrorList
	// warnings gives the Warning headers of a valid status write, as
	// upstream's status strategies' WarningsOnUpdate.
	warnings func(obj, old T) []string
}

// statusStrategy is a statusKind made into a resource.StatusStrategy.
type statusStrategy[T object] struct {
	k statusKind[T]
	s strategy[T]
}

var _ resource.StatusStrategy = statusStrategy[object]{}

func (s statusStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	t, o := s.s.typed(obj), s.s.typed(old)
	prepareMetaForUpdate(t, o)
	s.k.keep(t, o)
}

// ValidateUpdate checks the new status (metadata update rules are the API
// server's, as for the main endpoint).
func (s statusStrategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	t, o := s.s.typed(obj), s.s.typed(old)
	var errs field.ErrorList
	if s.k.validate != nil {
		errs = s.k.validate(t, o)
	}
	if len(errs) == 0 && s.k.warnings != nil {
		addWarnings(ctx, s.k.warnings(t, o))
	}
	return errs
}
