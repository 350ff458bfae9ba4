package fieldmanager

import (
	"bytes"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// createPath is the short road of the commonest tracked write: a create
// (the live object is the kind's empty object) whose body carries no
// managedFields. Its result equals what apimachinery's field manager
// computes for that case (TestCreateMatchesFieldManager compares them on
// random objects), without the two object conversions (deep copies), the
// second structured-merge-diff conversion of the always identical empty
// object, and the JSON round trip of the manager identifier. Any other
// write takes the full field manager.
type createPath struct {
	objType    reflect.Type         // the kind's Go type (a pointer)
	emptyTyped *typed.TypedValue    // the empty object, read once
	reset      fieldpath.Filter     // the endpoint's reset fields, or nil
	apiVersion fieldpath.APIVersion // the kind's group/version
	kind       schema.GroupVersionKind
	direct     *directFields // the set without structured-merge-diff's walks, or nil
	// shapes holds the direct road's FieldsV1 per shape (nil: none): a
	// map under a lock rather than a sync.Map, so that a lookup by the
	// shape's bytes copies nothing (a sync.Map key is boxed: a copy of
	// the shape per create).
	shapesMu sync.RWMutex
	shapes   map[string][]byte
	nshapes  atomic.Int32
	shapeUse shapeUse // whether looking shapes up pays for this kind
}

// shapeUse decides whether a kind's creates look their shape up: only
// while it pays. Objects whose shapes differ, like pods (each has its own
// kube-api-access volume, a list element keyed by its name), would walk
// twice (the shape, then the set) and keep forms never found again. So
// shapes are looked up in windows of shapeWindow lookups; a window in which
// fewer than a quarter hit sets them aside (the kept forms dropped) for the
// next shapeRest creates, which go straight to the set, and then a window
// looks again. The counts are approximate under concurrent creates; either
// way the result is the same, only its cost differs.
type shapeUse struct {
	lookups, hits atomic.Int32
	resting       atomic.Int32 // creates left straight to the set; 0: look shapes up
}

const (
	shapeWindow = 256
	shapeRest   = 16 << 10
)

// look reports whether this create looks its shape up.
func (u *shapeUse) look() bool {
	if u.resting.Load() <= 0 {
		return true
	}
	return u.resting.Add(-1) < 0
}

// looked records a lookup and whether it hit; it reports true when it ends
// a window whose hits did not pay, and the kept forms should be dropped.
func (u *shapeUse) looked(hit bool) (setAside bool) {
	if hit {
		u.hits.Add(1)
	}
	if u.lookups.Add(1) != shapeWindow {
		return false
	}
	hits := u.hits.Swap(0)
	u.lookups.Store(0)
	if hits*4 >= shapeWindow {
		return false
	}
	u.resting.Store(shapeRest)
	return true
}

// stripFromEntries are the paths no manager is recorded as owning (the
// object's identity and system metadata), as kube-apiserver strips them.
var stripFromEntries = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// newCreatePath prepares the short road for cfg's endpoint, or returns
// nil when the kind cannot take it (no Go type in the scheme, or the type
// converter cannot read the empty object).
func newCreatePath(cfg Config, reset map[fieldpath.APIVersion]fieldpath.Filter) *createPath {
	if cfg.Subresource != "" || cfg.Scheme == nil {
		return nil
	}
	empty, err := cfg.Scheme.New(cfg.Kind)
	if err != nil {
		return nil
	}
	empty.GetObjectKind().SetGroupVersionKind(cfg.Kind)
	tv, err := cfg.TypeConverter.ObjectToTyped(empty, typed.AllowDuplicates)
	if err != nil {
		return nil
	}
	v := fieldpath.APIVersion(cfg.Kind.GroupVersion().String())
	c := &createPath{objType: reflect.TypeOf(empty), emptyTyped: tv, reset: reset[v], apiVersion: v, kind: cfg.Kind}
	// The direct road compares with the zero value: the empty object must
	// be nothing but that (its kind aside).
	if bare, err := cfg.Scheme.New(cfg.Kind); err == nil && reflect.ValueOf(bare).Elem().IsZero() {
		c.direct = newDirectFields(tv.Schema(), tv.TypeRef(), c.objType)
	}
	return c
}

// applies reports whether the write of obj over live by manager can take
// the short road.
func (c *createPath) applies(live, obj runtime.Object, manager string) bool {
	if c == nil || reflect.TypeOf(live) != c.objType || reflect.TypeOf(obj) != c.objType {
		return false
	}
	// The manager identifier goes through JSON upstream, which would
	// replace invalid UTF-8.
	if !utf8.ValidString(manager) {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil || len(m.GetManagedFields()) != 0 {
		return false
	}
	return reflect.ValueOf(live).Elem().IsZero()
}

// update records manager as the owner of every field obj sets, operation
// Update, and returns obj. If the fields cannot be computed obj gets no
// managed fields (the live object has none), as in the full manager.
func (c *createPath) update(obj runtime.Object, tc managedfields.TypeConverter, manager string) runtime.Object {
	m, _ := meta.Accessor(obj)
	m.SetManagedFields(nil)
	raw, ok := c.fieldsJSON(obj, tc)
	if !ok || raw == nil {
		return obj
	}
	if manager == "" {
		manager = "unknown"
	}
	m.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager:    manager,
		Operation:  metav1.ManagedFieldsOperationUpdate,
		APIVersion: string(c.apiVersion),
		Time:       &metav1.Time{Time: time.Now().UTC()},
		FieldsType: "FieldsV1",
		FieldsV1:   &metav1.FieldsV1{Raw: raw},
	}})
	return obj
}

// fieldsJSON is fieldsOf in its FieldsV1 form, nil when the set is empty.
// Objects of one shape (the same fields set, the same map and list keys)
// have the same fields, so the direct road keeps the form per shape, while
// that pays (shapeUse); a shape is cheaper to take than the set, and the
// form is copied out.
func (c *createPath) fieldsJSON(obj runtime.Object, tc managedfields.TypeConverter) ([]byte, bool) {
	if c.direct != nil && c.shapeUse.look() {
		buf := shapeBuffers.Get().(*[]byte)
		defer shapeBuffers.Put(buf)
		if shape, ok := c.direct.shape(reflect.ValueOf(obj), *buf); ok {
			*buf = shape[:0]
			c.shapesMu.RLock()
			kept, hit := c.shapes[string(shape)]
			c.shapesMu.RUnlock()
			setAside := c.shapeUse.looked(hit)
			if setAside {
				c.shapesMu.Lock()
				clear(c.shapes)
				c.nshapes.Store(0)
				c.shapesMu.Unlock()
			}
			if hit {
				return bytes.Clone(kept), true
			}
			raw, ok := c.toJSON(c.fieldsOf(obj, tc))
			if ok && !setAside && len(shape) <= maxShapeLen && c.nshapes.Add(1) <= maxShapes {
				c.shapesMu.Lock()
				if c.shapes == nil {
					c.shapes = map[string][]byte{}
				}
				c.shapes[string(shape)] = bytes.Clone(raw)
				c.shapesMu.Unlock()
			}
			return raw, ok
		}
	}
	return c.toJSON(c.fieldsOf(obj, tc))
}

func (c *createPath) toJSON(set *fieldpath.Set, ok bool) ([]byte, bool) {
	if !ok {
		return nil, false
	}
	if set.Empty() {
		return nil, true
	}
	raw, err := set.ToJSON()
	return raw, err == nil
}

// The shapes kept per kind, and their largest size; others are computed
// every time.
const (
	maxShapes   = 1024
	maxShapeLen = 4 << 10
)

var shapeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// fieldsOf is the set of fields obj sets that its creator owns: what
// differs from the empty object, less the endpoint's reset fields and the
// stripped metadata.
func (c *createPath) fieldsOf(obj runtime.Object, tc managedfields.TypeConverter) (*fieldpath.Set, bool) {
	if c.direct != nil {
		if set, ok := c.direct.fields(reflect.ValueOf(obj)); ok {
			return c.owned(set), true
		}
	}
	set, ok := c.compared(obj, tc)
	if !ok {
		return nil, false
	}
	return c.owned(set), true
}

// compared is what structured-merge-diff's Compare of the empty object
// with obj finds Added or Modified, or false if obj does not validate.
func (c *createPath) compared(obj runtime.Object, tc managedfields.TypeConverter) (*fieldpath.Set, bool) {
	// The converter finds the type by the object's kind; the decoded
	// object may not carry it. It is put back as it was.
	kind := obj.GetObjectKind()
	gvk := kind.GroupVersionKind()
	kind.SetGroupVersionKind(c.kind)
	defer kind.SetGroupVersionKind(gvk)
	tv, err := tc.ObjectToTyped(obj, typed.AllowDuplicates)
	if err != nil {
		return nil, false
	}
	cmp, err := c.emptyTyped.Compare(tv)
	if err != nil {
		return nil, false
	}
	// Against the empty object almost everything is Added; the union
	// (which copies both sets) is only needed when something is Modified.
	set := cmp.Added
	if !cmp.Modified.Empty() {
		set = cmp.Modified.Union(cmp.Added)
	}
	return set, true
}

// owned is set less the endpoint's reset fields and the stripped metadata.
func (c *createPath) owned(set *fieldpath.Set) *fieldpath.Set {
	if c.reset != nil {
		set = c.reset.Filter(set)
	}
	return set.Difference(stripFromEntries)
}
