// Package fieldmanager keeps metadata.managedFields, the record of which
// manager owns which fields of an object, and merges server-side apply
// requests, as kube-apiserver does. The field ownership and merge logic is
// apimachinery's (k8s.io/apimachinery/pkg/util/managedfields, on
// structured-merge-diff); this package supplies what it needs from the API
// server: the structured-merge-diff types of each kind (built from the same
// OpenAPI schemas the server publishes), the scheme that converts between
// typed and unstructured objects, and the kind's defaulting.
//
// A write through the main endpoint or a subresource records an entry with
// operation Update for its manager (the fieldManager query parameter, else
// the client's user agent up to its first "/"); an apply records one with
// operation Apply. An apply that touches fields another manager owns is a
// 409 Conflict listing them, unless forced, which transfers ownership.
// Fields an applier stops applying are removed when no one else owns them.
//
// The results are apimachinery's; four roads only make them cheaper: a
// create's fields come straight from the Go object (createPath,
// directFields), an update that changes only scalar fields its writer
// alone owns keeps the entries as they are but for the writer's time
// (ownedUpdate), other updates hand structured-merge-diff the two objects
// without what they share (equalPruner) and, where apimachinery's steps
// around it are no-ops, keep the sets of the entries decoded and the
// bytes of the entries the update leaves alone (keptEntriesUpdate). Each
// is tested against the full field manager on random objects of every
// served kind.
package fieldmanager

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Config describes the objects one endpoint writes.
type Config struct {
	// TypeConverter knows the structured-merge-diff type of Kind.
	TypeConverter managedfields.TypeConverter
	// Scheme converts between typed and unstructured objects of Kind.
	Scheme *runtime.Scheme
	// Kind of the objects (their served and stored version).
	Kind schema.GroupVersionKind
	// Default fills unset fields the way the kind's strategy does; apply
	// runs it on the merged object.
	Default func(runtime.Object)
	// Subresource is "" for the main endpoint, else e.g. "status", "scale";
	// entries record it.
	Subresource string
	// ResetFields are top-level fields the endpoint does not change (status
	// through the main endpoint, spec through /status): no manager of this
	// endpoint comes to own them.
	ResetFields []string
	// Only, if set, is the path (e.g. spec, ephemeralContainers) of the
	// one field the endpoint writes: everything else is reset. It may not
	// be set with ResetFields (New refuses it: Only already resets them).
	Only []string
	// OnlyAny, if set instead of Only, are the paths of the fields the
	// endpoint writes, an element "*" matching any list item (pods/resize:
	// spec, containers, *, resources); everything else is reset.
	OnlyAny [][]string
}

// ErrResetFieldsWithOnly: a Config sets both ResetFields and Only. The
// filter of Only resets every field but its own, so ResetFields would be
// silently ignored; New refuses such a Config instead.
var ErrResetFieldsWithOnly = errors.New("ResetFields and Only are both set (Only already resets every other field)")

// Manager updates the managed fields of one endpoint's writes.
type Manager struct {
	fm     *managedfields.FieldManager
	kind   schema.GroupVersionKind
	tc     managedfields.TypeConverter
	create *createPath        // nil when creates take the full manager
	prune  *equalPruner       // nil when updates take the full objects
	owned  *ownedUpdate       // nil when updates always take the field manager
	kept   *keptEntriesUpdate // nil when updates always take the field manager
	// pruned holds field managers for pruned updates, each over its own
	// prunedConverter (building one allocates more than an update).
	pruned sync.Pool
}

// prunedFieldManager is a field manager and the converter it was built
// over, set for one update at a time.
type prunedFieldManager struct {
	fm   *managedfields.FieldManager
	conv *prunedConverter
}

// New builds the manager of cfg.
func New(cfg Config) (*Manager, error) {
	if len(cfg.ResetFields) > 0 && (len(cfg.Only) > 0 || len(cfg.OnlyAny) > 0) {
		return nil, fmt.Errorf("field manager for %s: %w", cfg.Kind, ErrResetFieldsWithOnly)
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if len(cfg.ResetFields) > 0 {
		set := fieldpath.NewSet()
		for _, f := range cfg.ResetFields {
			set.Insert(fieldpath.MakePathOrDie(f))
		}
		reset = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(cfg.Kind.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
		}
	}
	if len(cfg.Only) > 0 {
		parts := make([]any, len(cfg.Only))
		for i, p := range cfg.Only {
			parts[i] = p
		}
		reset = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(cfg.Kind.GroupVersion().String()): fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie(parts...)),
		}
	}
	if len(cfg.OnlyAny) > 0 {
		matchers := make([]*fieldpath.SetMatcher, len(cfg.OnlyAny))
		for i, path := range cfg.OnlyAny {
			parts := make([]any, len(path))
			for j, p := range path {
				parts[j] = p
				if p == "*" {
					parts[j] = fieldpath.MatchAnyPathElement()
				}
			}
			matchers[i] = fieldpath.MakePrefixMatcherOrDie(parts...)
		}
		reset = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(cfg.Kind.GroupVersion().String()): fieldpath.NewIncludeMatcherFilter(matchers...),
		}
	}
	fm, err := managedfields.NewDefaultFieldManager(cfg.TypeConverter, cfg.Scheme, defaulter(cfg.Default), cfg.Scheme,
		cfg.Kind, cfg.Kind.GroupVersion(), cfg.Subresource, reset)
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", cfg.Kind, err)
	}
	m := &Manager{fm: fm, kind: cfg.Kind, tc: cfg.TypeConverter, create: newCreatePath(cfg, reset), prune: newEqualPruner(cfg)}
	m.owned = newOwnedUpdate(cfg, m.prune)
	m.kept = newKeptEntriesUpdate(cfg, m.prune, reset)
	if m.prune != nil {
		m.pruned.New = func() any {
			conv := &prunedConverter{ObjectConvertor: cfg.Scheme, p: m.prune}
			fm, err := managedfields.NewDefaultFieldManager(cfg.TypeConverter, conv, defaulter(cfg.Default), cfg.Scheme,
				cfg.Kind, cfg.Kind.GroupVersion(), cfg.Subresource, reset)
			if err != nil {
				return nil
			}
			return &prunedFieldManager{fm: fm, conv: conv}
		}
	}
	return m, nil
}

// defaulter adapts a strategy's Default to runtime.ObjectDefaulter.
type defaulter func(runtime.Object)

func (d defaulter) Default(obj runtime.Object) {
	if d != nil {
		d(obj)
	}
}

// UpdateCreate is Update for a create, whose live object is empty: the
// kind's empty object, which callers may share between all their creates.
// The short road only reads it; every other road gets a copy of its own,
// since they may keep or change what they are given.
func (m *Manager) UpdateCreate(empty, obj runtime.Object, manager string) runtime.Object {
	if m.create.applies(empty, obj, manager) {
		return m.create.update(obj, m.tc, manager)
	}
	return m.Update(empty.DeepCopyObject(), obj, manager)
}

// Update records that manager changed live into obj (operation Update) and
// returns obj with its managedFields set. A live object that exists but has
// no managed fields stays untracked, as in Kubernetes. Managed fields the
// client sent in obj replace the recorded ones (through the main endpoint
// only); an empty list resets them. It never fails the write: if the
// fields cannot be computed the live object's are kept.
func (m *Manager) Update(live, obj runtime.Object, manager string) runtime.Object {
	if m.create.applies(live, obj, manager) {
		return m.create.update(obj, m.tc, manager)
	}
	if out, ok := m.owned.update(live, obj, manager, m.tc); ok {
		return out
	}
	if out, ok := m.kept.update(live, obj, manager, m.tc); ok {
		return out
	}
	if m.prune.applies(live, obj) {
		// The same field manager over a converter that hands it the two
		// objects without what they have in common (equalPruner).
		if pf, ok := m.pruned.Get().(*prunedFieldManager); ok {
			pf.conv.live, pf.conv.obj = live, obj
			out := pf.fm.UpdateNoErrors(live, obj, manager)
			pf.conv.reset()
			m.pruned.Put(pf)
			return out
		}
	}
	return m.fm.UpdateNoErrors(live, obj, manager)
}

// Apply merges the applied configuration patch (YAML or JSON) into live for
// manager and returns the new object with its managedFields set. live is
// an empty object (no uid) when the apply creates. A conflict with other
// managers is a 409 listing them unless force; a malformed configuration
// is a 400: one that is not YAML or not a map "error decoding YAML: ...",
// one of another kind or version, or of none (an empty or null body),
// apimachinery's "invalid object type: <gvk>". The configuration is read
// as kube-apiserver reads it: whole numbers as int64 (exact beyond 2^53),
// others as float64.
func (m *Manager) Apply(live runtime.Object, patch []byte, manager string, force bool) (runtime.Object, error) {
	applied := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(patch, &applied.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if applied.Object == nil {
		// An empty or null body: an object naming no kind, which the
		// field manager's version check refuses.
		applied.Object = map[string]any{}
	}
	out, err := m.fm.Apply(live, applied, manager, force)
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return nil, err
		}
		// What is left is the configuration not fitting the kind's
		// schema (an unknown field, a wrong type, a duplicate key in a
		// keyed list): kube-apiserver answers these 500 with the same
		// message; they are the client's mistake, a 400 here.
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return out, nil
}

// ValidateApplyYAML reports duplicate fields in an applied configuration
// (what fieldValidation Strict rejects and Warn reports); nil when there
// are none.
func ValidateApplyYAML(patch []byte) error {
	return yaml.UnmarshalStrict(patch, &map[string]any{})
}

// ManagerName is the manager a write is recorded under: the fieldManager
// parameter, else the user agent's product (what precedes its first "/"),
// printable characters only, at most 128 bytes.
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	product, _, _ := strings.Cut(userAgent, "/")
	if printableASCII(product) {
		// The usual user agent: nothing to drop, one byte per character.
		return product[:min(len(product), metav1validation.FieldManagerMaxLength)]
	}
	var b strings.Builder
	for _, r := range product {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// printableASCII reports whether s has only the bytes 0x20-0x7e (each a
// rune unicode.IsPrint accepts).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
