package registry

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// object is what every served kind is: a runtime.Object with ObjectMeta.
type object interface {
	runtime.Object
	metav1.Object
}

// kind describes one kind's behaviour with typed functions; strategy adapts
// it to resource.Strategy. Nil functions mean "nothing to do".
type kind[T object] struct {
	// namespaced objects need metadata.namespace.
	namespaced bool
	// nameFn validates metadata.name (and generateName as a prefix).
	nameFn apivalidation.ValidateNameFunc

	// defaults fills unset fields (upstream SetDefaults_*).
	defaults func(T)
	// spec returns the part of the object whose change bumps
	// metadata.generation; nil means the kind has no generation semantics.
	spec func(T) any
	// prepareForCreate clears what clients may not set on create (status).
	prepareForCreate func(T)
	// prepareForUpdate carries over from old what clients may not change
	// through the main endpoint (status).
	prepareForUpdate func(obj, old T)
	// validate checks everything but metadata on create and update.
	validate func(T) field.ErrorList
	// validateCreate adds the checks only a create gets (fields that may
	// be set on existing objects only).
	validateCreate func(T) field.ErrorList
	// validateUpdate checks immutability and transitions on update.
	validateUpdate func(obj, old T) field.ErrorList
	// warnings gives the Warning headers of a valid create (old is the
	// zero T) or update, as upstream's WarningsOnCreate/WarningsOnUpdate.
	warnings func(obj, old T) []string
	// fields adds kind-specific selectable fields to metadata.name and
	// metadata.namespace.
	fields func(T) fields.Set
	// table renders rows; nil uses the default NAME / CREATED AT table.
	table *tableSpec[T]
	// requireResourceVersionOnUpdate makes an update without
	// metadata.resourceVersion a 422 (upstream's AllowUnconditionalUpdate
	// false); most kinds take the stored one.
	requireResourceVersionOnUpdate bool
}

// strategy is a kind made into a resource.Strategy.
type strategy[T object] struct {
	k   kind[T]
	now func() time.Time
	// dnsSubdomainNames: k.nameFn is apivalidation.NameIsDNSSubdomain
	// (the default), which metaSurelyValid checks without calling it.
	dnsSubdomainNames bool
}

var _ resource.Strategy = strategy[object]{}

func newStrategy[T object](k kind[T], now func() time.Time) strategy[T] {
	dnsSubdomainNames := k.nameFn == nil
	if dnsSubdomainNames {
		k.nameFn = apivalidation.NameIsDNSSubdomain
	}
	return strategy[T]{k: k, now: now, dnsSubdomainNames: dnsSubdomainNames}
}

func (s strategy[T]) typed(obj runtime.Object) T {
	t, ok := obj.(T)
	if !ok {
		// The API server decodes into r.New(); anything else is a
		// programming error in the server, not bad client input.
		var zero T
		panic(fmt.Sprintf("registry: got %T, want %T", obj, zero))
	}
	return t
}

func (s strategy[T]) Default(obj runtime.Object) {
	if s.k.defaults != nil {
		s.k.defaults(s.typed(obj))
	}
}

func (s strategy[T]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	t := s.typed(obj)
	// Deletion is requested through DELETE, never through a create body.
	t.SetDeletionTimestamp(nil)
	t.SetDeletionGracePeriodSeconds(nil)
	if s.k.spec != nil {
		t.SetGeneration(1)
	}
	if s.k.prepareForCreate != nil {
		s.k.prepareForCreate(t)
	}
}

func (s strategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	t, o := s.typed(obj), s.typed(old)
	prepareMetaForUpdate(t, o)
	if s.k.prepareForUpdate != nil {
		s.k.prepareForUpdate(t, o)
	}
	if s.k.spec != nil && !apiequality.Semantic.DeepEqual(s.k.spec(t), s.k.spec(o)) {
		t.SetGeneration(o.GetGeneration() + 1)
	}
}

// prepareMetaForUpdate keeps the system-owned metadata of old: clients
// cannot change generation or creationTimestamp, nor remove a deletion
// timestamp or grace period (setting them is refused by validation).
func prepareMetaForUpdate(obj, old metav1.Object) {
	obj.SetGeneration(old.GetGeneration())
	if obj.GetUID() == "" {
		obj.SetUID(old.GetUID())
	}
	if ts := old.GetCreationTimestamp(); !ts.IsZero() {
		obj.SetCreationTimestamp(ts)
	}
	if ts := old.GetDeletionTimestamp(); ts != nil {
		obj.SetDeletionTimestamp(ts)
	}
	if old.GetDeletionGracePeriodSeconds() != nil && obj.GetDeletionGracePeriodSeconds() == nil {
		obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	}
}

func (s strategy[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	t := s.typed(obj)
	var errs field.ErrorList
	if !metaSurelyValid(t, s.k.namespaced, s.k.nameFn, s.dnsSubdomainNames) {
		errs = apivalidation.ValidateObjectMetaAccessor(t, s.k.namespaced, s.k.nameFn, field.NewPath("metadata"))
	}
	if s.k.validate != nil {
		errs = append(errs, s.k.validate(t)...)
	}
	if s.k.validateCreate != nil {
		errs = append(errs, s.k.validateCreate(t)...)
	}
	if len(errs) == 0 && s.k.warnings != nil {
		var zero T
		addWarnings(ctx, s.k.warnings(t, zero))
	}
	return errs
}

// ValidateUpdate checks the new object's content and what may not change.
// The metadata update rules (immutable name, namespace, uid, ...;
// apivalidation.ValidateObjectMetaAccessorUpdate) are applied by the API
// server's update path for every kind, so they are not repeated here.
func (s strategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	t, o := s.typed(obj), s.typed(old)
	var errs field.ErrorList
	if s.k.validate != nil {
		errs = append(errs, s.k.validate(t)...)
	}
	if s.k.validateUpdate != nil {
		errs = append(errs, s.k.validateUpdate(t, o)...)
	}
	if len(errs) == 0 && s.k.warnings != nil {
		addWarnings(ctx, s.k.warnings(t, o))
	}
	return errs
}

// addWarnings hands warnings to the request's collector (sent as Warning
// headers with the response; none without a collector).
func addWarnings(ctx context.Context, warnings []string) {
	for _, w := range warnings {
		request.AddWarning(ctx, w)
	}
}

func (s strategy[T]) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return nil, nil, fmt.Errorf("getting selectable fields: got %T, want %T", obj, zero)
	}
	f := storage.ObjectMetaFields(t.GetNamespace(), t.GetName())
	if s.k.fields != nil {
		for k, v := range s.k.fields(t) {
			f[k] = v
		}
	}
	return labels.Set(t.GetLabels()), f, nil
}

// AllowUnconditionalUpdate implements the API server's
// endpoints.UnconditionalUpdater.
func (s strategy[T]) AllowUnconditionalUpdate() bool { return !s.k.requireResourceVersionOnUpdate }

// ObjectMetaFieldsOnly reports whether GetAttrs gives ObjectMetaFields
// alone: the kind has no selectable fields of its own.
func (s strategy[T]) ObjectMetaFieldsOnly() bool { return s.k.fields == nil }

func (s strategy[T]) ConvertToTable(_ context.Context, obj runtime.Object, opts *metav1.TableOptions) (*metav1.Table, error) {
	spec := s.k.table
	if spec == nil {
		spec = defaultTable[T]()
	}
	now := s.now()
	table := &metav1.Table{}
	if opts == nil || !opts.NoHeaders {
		table.ColumnDefinitions = spec.columns
	}
	if t, ok := obj.(T); ok {
		table.Rows = []metav1.TableRow{spec.render(t, now)}
		table.ResourceVersion = t.GetResourceVersion()
		return table, nil
	}
	if !meta.IsListType(obj) {
		var zero T
		return nil, fmt.Errorf("converting to table: got %T, want %T or a list of it", obj, zero)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, fmt.Errorf("converting list to table: %w", err)
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		t, ok := item.(T)
		if !ok {
			var zero T
			return nil, fmt.Errorf("converting list to table: item is %T, want %T", item, zero)
		}
		table.Rows = append(table.Rows, spec.render(t, now))
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
		table.RemainingItemCount = l.GetRemainingItemCount()
	}
	return table, nil
}
