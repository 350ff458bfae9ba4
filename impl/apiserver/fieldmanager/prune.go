package fieldmanager

import (
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// An update's managed fields come from structured-merge-diff's comparison
// of the live object with the new one, after both are validated against
// the kind's schema; the three walks cover the whole object, though most
// of it is usually the same on both sides (a status write leaves spec and
// most of metadata alone). equalPruner hands structured-merge-diff copies
// of the two objects in which every field equal on both sides is zeroed,
// so that it walks only what differs, with the same result:
//
//   - A field equal on both sides adds nothing to the comparison, and
//     zeroing it on both sides leaves it absent, or present and equal, on
//     both: the comparison of the copies is the comparison of the objects.
//     Fields are zeroed only along struct fields from the root (never
//     inside a list, a map, a pointer, a type with its own JSON form or a
//     struct that omitzero could drop), so no map or list changes whether
//     it is present.
//   - Validation is a check of every node on its own. The zeroed fields
//     are validated once, together, in the kind's empty object holding
//     nothing else (the witness); the zero values left in their place are
//     what the empty object has there, and it validates (or no field is
//     ever zeroed). If the witness fails, the update takes the objects as
//     they are, so an invalid object fails exactly as before.
//   - The other walk over the live object (reconciling recorded field sets
//     with the schema) reads only the schema and the sets.
//   - The live object's managedFields (the new object's are taken off
//     before the comparison) are an atomic list: the comparison finds only
//     that it is gone, whatever it holds, and validating it means decoding
//     every entry's FieldsV1 JSON. The live copy gets a one-entry stand-in
//     instead, once every entry is known to validate (validEntries).
//
// TestPrunedUpdateMatchesFieldManager compares the results with the full
// objects' on random pairs of every served kind.
type equalPruner struct {
	objType reflect.Type // the kind's Go type (a pointer to a struct)
	kind    schema.GroupVersionKind
	tc      managedfields.TypeConverter
	standIn bool // the kind's managedFields are an atomic list

	// valid caches whether an entry's FieldsV1 validates; up to
	// maxValidEntries of at most maxValidEntryLen bytes. A map under a
	// lock rather than a sync.Map: a lookup by the entry's bytes then
	// copies nothing (a sync.Map key is boxed, a copy of every entry
	// looked up, most of them a pod's, which is not seen again once the
	// cache is full).
	mu    sync.RWMutex
	valid map[string]bool
}

const (
	maxValidEntries  = 4096
	maxValidEntryLen = 4 << 10
)

// managedStandIn is what the live copy holds instead of its managed
// fields: present, and valid.
var managedStandIn = []metav1.ManagedFieldsEntry{{}}

// newEqualPruner prepares pruning for the kind, or returns nil when its
// empty object does not validate (a zeroed field would then be a change of
// validity) or its Go type is not a struct.
func newEqualPruner(cfg Config) *equalPruner {
	if cfg.Scheme == nil {
		return nil
	}
	empty, err := cfg.Scheme.New(cfg.Kind)
	if err != nil {
		return nil
	}
	t := reflect.TypeOf(empty)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	empty.GetObjectKind().SetGroupVersionKind(cfg.Kind)
	tv, err := cfg.TypeConverter.ObjectToTyped(empty, typed.AllowDuplicates)
	if err != nil {
		return nil
	}
	p := &equalPruner{objType: t, kind: cfg.Kind, tc: cfg.TypeConverter, valid: map[string]bool{}}
	if _, ok := empty.(metav1.Object); ok {
		p.standIn = atomicList(tv.Schema(), tv.TypeRef(), "metadata", "managedFields")
	}
	return p
}

// atomicList reports whether the field at path under root is an atomic
// list.
func atomicList(s *smdschema.Schema, root smdschema.TypeRef, path ...string) bool {
	tr := root
	for _, name := range path {
		atom, ok := s.Resolve(tr)
		if !ok || atom.Map == nil {
			return false
		}
		f, ok := atom.Map.FindField(name)
		if !ok {
			return false
		}
		tr = f.Type
	}
	atom, ok := s.Resolve(tr)
	return ok && atom.List != nil && atom.List.ElementRelationship == smdschema.Atomic
}

// validEntries reports whether the managed fields entries validate as
// part of an object of the kind. Only an entry's FieldsV1 can fail (its
// other fields are strings and a time); each distinct one is validated in
// the kind's empty object, alone.
func (p *equalPruner) validEntries(entries []metav1.ManagedFieldsEntry) bool {
	for i := range entries {
		f := entries[i].FieldsV1
		if f == nil {
			continue
		}
		p.mu.RLock()
		v, ok := p.valid[string(f.Raw)]
		p.mu.RUnlock()
		if ok {
			if !v {
				return false
			}
			continue
		}
		valid := p.validate(f)
		if len(f.Raw) <= maxValidEntryLen {
			p.mu.Lock()
			if len(p.valid) < maxValidEntries {
				p.valid[string(f.Raw)] = valid
			}
			p.mu.Unlock()
		}
		if !valid {
			return false
		}
	}
	return true
}

// validate validates f in an entry of the kind's empty object.
func (p *equalPruner) validate(f *metav1.FieldsV1) bool {
	w := reflect.New(p.objType.Elem()).Interface().(runtime.Object)
	w.GetObjectKind().SetGroupVersionKind(p.kind)
	w.(metav1.Object).SetManagedFields([]metav1.ManagedFieldsEntry{{FieldsV1: f}})
	_, err := p.tc.ObjectToTyped(w, typed.AllowDuplicates)
	return err == nil
}

// applies reports whether an update of live to obj can be pruned.
func (p *equalPruner) applies(live, obj runtime.Object) bool {
	return p != nil && reflect.TypeOf(live) == p.objType && reflect.TypeOf(obj) == p.objType && live != obj
}

// prune returns copies of live and obj with the fields equal on both sides
// zeroed, both of the kind (what converting them to the kind's version
// gives), sharing everything else with the originals; ok is false when
// nothing was zeroed or the zeroed fields do not validate. Contents
// structured-merge-diff cannot read make its validation panic rather than
// fail; ok is then false too, and the update takes the objects as they
// are (to panic there as before).
func (p *equalPruner) prune(live, obj runtime.Object) (prunedLive, prunedObj runtime.Object, ok bool) {
	return p.pruneInto(live, obj, &pruneCopies{})
}

// pruneCopies are the three objects of the kind a prune fills: the copies
// of live and obj and the witness. A field manager's converter keeps them
// for its next update (they are garbage once an update has returned:
// structured-merge-diff's field sets keep none of their memory), zeroed in
// between (clear), instead of three new objects per update.
type pruneCopies struct {
	live, obj, witness reflect.Value // pointers to the kind's struct; invalid until first used
}

// take returns the three, made for t (a struct type) if they are not yet.
func (c *pruneCopies) take(t reflect.Type) (live, obj, witness reflect.Value) {
	if !c.live.IsValid() || c.live.Type().Elem() != t {
		c.live, c.obj, c.witness = reflect.New(t), reflect.New(t), reflect.New(t)
	}
	return c.live, c.obj, c.witness
}

// clear zeroes the three, so that they hold nothing of the last update.
func (c *pruneCopies) clear() {
	if c.live.IsValid() {
		c.live.Elem().SetZero()
		c.obj.Elem().SetZero()
		c.witness.Elem().SetZero()
	}
}

// pruneInto is prune filling copies, which must be clear.
func (p *equalPruner) pruneInto(live, obj runtime.Object, copies *pruneCopies) (prunedLive, prunedObj runtime.Object, ok bool) {
	defer func() {
		if recover() != nil {
			prunedLive, prunedObj, ok = nil, nil, false
		}
	}()
	lv, ov := reflect.ValueOf(live).Elem(), reflect.ValueOf(obj).Elem()
	lc, oc, witness := copies.take(lv.Type())
	lc.Elem().Set(lv)
	oc.Elem().Set(ov)
	zeroed := zeroEqualFields(lc.Elem(), oc.Elem(), witness.Elem())
	if p.standIn {
		lm, om := lc.Interface().(metav1.Object), oc.Interface().(metav1.Object)
		if len(lm.GetManagedFields()) > 0 && len(om.GetManagedFields()) == 0 && p.validEntries(lm.GetManagedFields()) {
			lm.SetManagedFields(managedStandIn)
			zeroed = true
		}
	}
	if !zeroed {
		return nil, nil, false
	}
	w := witness.Interface().(runtime.Object)
	w.GetObjectKind().SetGroupVersionKind(p.kind)
	if _, err := p.tc.ObjectToTyped(w, typed.AllowDuplicates); err != nil {
		return nil, nil, false
	}
	prunedLive, prunedObj = lc.Interface().(runtime.Object), oc.Interface().(runtime.Object)
	prunedLive.GetObjectKind().SetGroupVersionKind(p.kind)
	prunedObj.GetObjectKind().SetGroupVersionKind(p.kind)
	return prunedLive, prunedObj, true
}

// zeroEqualFields zeroes in the structs a and b (addressable, of one type)
// every exported field equal in both and not already zero, moving a's
// value to witness, and descends into the struct fields that differ. It
// reports whether it zeroed anything.
func zeroEqualFields(a, b, witness reflect.Value) bool {
	zeroed := false
	t := a.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fa, fb := a.Field(i), b.Field(i)
		if fa.IsZero() && fb.IsZero() {
			continue
		}
		if equalValues(fa, fb) {
			witness.Field(i).Set(fa)
			fa.SetZero()
			fb.SetZero()
			zeroed = true
			continue
		}
		if descendable(sf) && zeroEqualFields(fa, fb, witness.Field(i)) {
			zeroed = true
		}
	}
	return zeroed
}

// equalValues is reflect.DeepEqual for the API's Go types (trees: no
// cycles to detect, so none of DeepEqual's bookkeeping of visited
// pointers, which made it most of a pruned update's cost), as strict:
// unexported fields count, nil and empty differ, NaN differs from itself,
// functions and channels are equal only when nil.
func equalValues(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.IsNil() || b.IsNil() {
			return false
		}
		return equalValues(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		it := a.MapRange()
		for it.Next() {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() || !equalValues(it.Value(), bv) {
				return false
			}
		}
		return true
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Elem().Type() != b.Elem().Type() {
			return false
		}
		return equalValues(a.Elem(), b.Elem())
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.IsNil() && b.IsNil()
	}
	return false
}

// descendable reports whether zeroing fields inside the struct field sf
// keeps the field itself as structured-merge-diff sees it: a plain struct
// (no JSON form of its own), not inlined, which no tag can drop when its
// fields are zero.
func descendable(sf reflect.StructField) bool {
	if sf.Type.Kind() != reflect.Struct {
		return false
	}
	name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if sf.Anonymous && name == "" || strings.Contains(opts, "omitzero") {
		return false
	}
	return !value.TypeReflectEntryOf(sf.Type).CanConvertToUnstructured()
}

// prunedConverter is the object converter of one update: converting the
// update's live or new object to the kind's version gives its pruned copy
// (made once, when first asked, after the field manager has taken the
// managed fields off the new object); anything else goes to the scheme.
type prunedConverter struct {
	runtime.ObjectConvertor
	p                     *equalPruner
	live, obj             runtime.Object
	done, ok              bool
	prunedLive, prunedObj runtime.Object
	copies                pruneCopies // kept across updates
}

// reset readies the converter for its next update.
func (c *prunedConverter) reset() {
	c.copies.clear()
	c.live, c.obj, c.done, c.ok, c.prunedLive, c.prunedObj = nil, nil, false, false, nil, nil
}

func (c *prunedConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	if (in == c.live || in == c.obj) && gv == runtime.GroupVersioner(c.p.kind.GroupVersion()) {
		if !c.done {
			c.done = true
			c.prunedLive, c.prunedObj, c.ok = c.p.pruneInto(c.live, c.obj, &c.copies)
		}
		if c.ok {
			if in == c.live {
				return c.prunedLive, nil
			}
			return c.prunedObj, nil
		}
	}
	return c.ObjectConvertor.ConvertToVersion(in, gv)
}
