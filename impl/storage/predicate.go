package storage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// AttrFunc returns the labels and the selectable fields of an object. Every
// object has the fields metadata.name and metadata.namespace; kinds add their
// own (spec.nodeName for pods, for example).
type AttrFunc func(obj runtime.Object) (labels.Set, fields.Set, error)

// DefaultAttrs is the AttrFunc of kinds with no extra selectable fields.
func DefaultAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("reading object metadata: %w", err)
	}
	return labels.Set(m.GetLabels()), ObjectMetaFields(m.GetNamespace(), m.GetName()), nil
}

// ObjectMetaFields returns the metadata fields every kind can be selected by.
func ObjectMetaFields(namespace, name string) fields.Set {
	return fields.Set{"metadata.name": name, "metadata.namespace": namespace}
}

// SelectionPredicate selects objects by label and field selectors and carries
// pagination.
type SelectionPredicate struct {
	Label    labels.Selector
	Field    fields.Selector
	GetAttrs AttrFunc
	// Limit is the page size of a list (0: no limit).
	Limit int64
	// Continue is the opaque token of the next page.
	Continue string
	// AllowWatchBookmarks lets a watch send BOOKMARK events.
	AllowWatchBookmarks bool
}

// Everything selects every object.
func Everything() SelectionPredicate {
	return SelectionPredicate{Label: labels.Everything(), Field: fields.Everything(), GetAttrs: DefaultAttrs}
}

// Empty reports whether p selects every object.
func (p SelectionPredicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether obj is selected by p.
func (p SelectionPredicate) Matches(obj runtime.Object) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	get := p.GetAttrs
	if get == nil {
		get = DefaultAttrs
	}
	l, f, err := get(obj)
	if err != nil {
		return false, err
	}
	return p.MatchesAttrs(l, f), nil
}

// MatchesAttrs reports whether objects with labels l and fields f are
// selected (a labels.Set and fields.Set, or a cache's compact forms).
func (p SelectionPredicate) MatchesAttrs(l labels.Labels, f fields.Fields) bool {
	if p.Label != nil && !p.Label.Matches(l) {
		return false
	}
	if p.Field != nil && !p.Field.Matches(f) {
		return false
	}
	return true
}

// Preconditions must hold on the stored object for an update or delete to
// proceed; a failed one is ErrCodeResourceVersionConflicts.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// Check tests the preconditions against obj stored at key.
func (p *Preconditions) Check(key string, obj runtime.Object) error {
	if p == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return NewError(ErrCodeInvalidObj, key, 0, "reading object metadata", err)
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		return NewError(ErrCodeResourceVersionConflicts, key, 0,
			fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()), nil)
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return NewError(ErrCodeResourceVersionConflicts, key, 0,
			fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()), nil)
	}
	return nil
}
