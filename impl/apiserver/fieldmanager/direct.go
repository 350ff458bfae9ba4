package fieldmanager

import (
	"encoding/binary"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// directFields is the field set of a create computed straight from the Go
// object: what structured-merge-diff's Compare of the kind's empty object
// with obj reports as Added or Modified, for objects that would pass its
// validation. It reads the object through structured-merge-diff's own
// reflection cache (JSON names, omitempty/omitzero, inlined structs, types
// with their own JSON form), so a field is present exactly when
// structured-merge-diff's reflected value has it, but it walks the object
// once, skips every field still at its zero value (the empty object holds
// the same value there, so the comparison finds nothing) and builds no
// value wrappers.
//
// It answers only where it is sure of the result; anything it does not
// model (non-empty lists, floats, atomic maps holding fields, types whose
// JSON form is a map or a list, a value its schema would reject) makes it
// report false, and the caller takes structured-merge-diff's road.
// TestDirectFieldsMatchCompare compares both on random objects.
type directFields struct {
	schema *smdschema.Schema
	root   smdschema.TypeRef
}

// newDirectFields prepares the direct road for objects of Go type objType
// (a pointer to a struct) with the given schema root, or returns nil when
// the kind's zero value itself would not validate the way the walk
// assumes (every field the walk skips is at its zero value and must be
// valid there).
func newDirectFields(s *smdschema.Schema, root smdschema.TypeRef, objType reflect.Type) *directFields {
	if s == nil || objType.Kind() != reflect.Pointer || objType.Elem().Kind() != reflect.Struct {
		return nil
	}
	d := &directFields{schema: s, root: root}
	if !d.zeroValid(objType.Elem(), root, 0) {
		return nil
	}
	return d
}

// fields returns the set for obj (a non-nil pointer to the prepared type)
// and whether the walk was sure of it. The object's kind fields
// (apiVersion, kind) are taken to equal the empty object's.
func (d *directFields) fields(obj reflect.Value) (*fieldpath.Set, bool) {
	w := directWalker{schema: d.schema, set: fieldpath.NewSet(), path: make(fieldpath.Path, 0, 8)}
	if !w.bothStruct(obj.Elem(), d.root, true) {
		return nil, false
	}
	return w.set, true
}

// zeroValid reports whether the zero value of t, as structured-merge-diff
// reflects it, validates against tr (following only what the zero value
// has present: nil pointers, maps and slices are nulls).
func (d *directFields) zeroValid(t reflect.Type, tr smdschema.TypeRef, depth int) bool {
	if depth > 64 {
		return false
	}
	atom, ok := d.schema.Resolve(tr)
	if !ok {
		return false
	}
	zero := reflect.New(t).Elem()
	entry := value.TypeReflectEntryOf(t)
	if entry.CanConvertToUnstructured() {
		u, err := entry.ToUnstructured(zero)
		if err != nil {
			return false
		}
		return unstructuredScalarFits(u, atom)
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return nullFits(atom)
	case reflect.Struct:
		if atom.Map == nil {
			return false
		}
		for _, f := range entry.OrderedFields() {
			fz := f.GetFrom(zero)
			if f.CanOmit(fz) {
				continue
			}
			ftr, ok := fieldType(atom.Map, f.JsonName)
			if !ok || !d.zeroValid(fz.Type(), ftr, depth+1) {
				return false
			}
		}
		return true
	default:
		c, ok := scalarClassOf(t.Kind())
		return ok && scalarFits(c, atom)
	}
}

// shape returns the object's shape: the paths the walk would insert, in
// walk order (map entries sorted), each element's name length-prefixed, so
// that equal shapes mean equal sets. buf is reused. ok as for fields.
func (d *directFields) shape(obj reflect.Value, buf []byte) ([]byte, bool) {
	w := directWalker{schema: d.schema, trace: buf[:0], path: make(fieldpath.Path, 0, 8)}
	if !w.bothStruct(obj.Elem(), d.root, true) {
		return nil, false
	}
	return w.trace, true
}

// directWalker accumulates the set of one object, or (set nil) its shape.
type directWalker struct {
	schema *smdschema.Schema
	set    *fieldpath.Set
	trace  []byte
	path   fieldpath.Path
}

func (w *directWalker) insert(pe fieldpath.PathElement) {
	if w.set != nil {
		w.set.Insert(append(w.path, pe))
		return
	}
	for _, e := range append(w.path, pe) {
		w.trace = binary.AppendUvarint(w.trace, uint64(len(*e.FieldName)))
		w.trace = append(w.trace, *e.FieldName...)
	}
	w.trace = append(w.trace, 0xff) // no name length starts with 0xff
}

func (w *directWalker) descend(pe fieldpath.PathElement) (restore func()) {
	n := len(w.path)
	w.path = append(w.path, pe)
	return func() { w.path = w.path[:n] }
}

// bothStruct walks a struct present in both the empty object (at its zero
// value) and obj (rv, not zero). At the root the kind fields are skipped.
func (w *directWalker) bothStruct(rv reflect.Value, tr smdschema.TypeRef, root bool) bool {
	atom, ok := w.schema.Resolve(tr)
	if !ok || atom.Map == nil || atom.Map.ElementRelationship == smdschema.Atomic {
		return false
	}
	entry := value.TypeReflectEntryOf(rv.Type())
	for _, f := range entry.OrderedFields() {
		if root && (f.JsonName == "apiVersion" || f.JsonName == "kind") {
			continue
		}
		fv := f.GetFrom(rv)
		if fv.IsZero() {
			continue
		}
		inEmpty := !f.CanOmit(reflect.Zero(fv.Type()))
		inObj := !f.CanOmit(fv)
		if !inEmpty && !inObj {
			continue
		}
		ftr, ok := fieldType(atom.Map, f.JsonName)
		if !ok {
			return false
		}
		pe := fieldpath.PathElement{FieldName: &f.JsonName}
		switch {
		case inObj && !inEmpty:
			if !w.added(pe, fv, ftr) {
				return false
			}
		case inObj && inEmpty:
			if !w.both(pe, fv, ftr) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// both compares a field present in both objects: the empty object's zero
// value against obj's non-zero fv.
func (w *directWalker) both(pe fieldpath.PathElement, fv reflect.Value, tr smdschema.TypeRef) bool {
	atom, ok := w.schema.Resolve(tr)
	if !ok {
		return false
	}
	entry := value.TypeReflectEntryOf(fv.Type())
	if entry.CanConvertToUnstructured() {
		lu, err := toUnstructured(entry, reflect.New(fv.Type()).Elem())
		if err != nil {
			return false
		}
		ru, err := toUnstructured(entry, fv)
		if err != nil {
			return false
		}
		if !unstructuredScalarFits(lu, atom) || !unstructuredScalarFits(ru, atom) {
			return false
		}
		if lu != ru {
			w.insert(pe)
		}
		return true
	}
	switch fv.Kind() {
	case reflect.Pointer:
		return w.nullThen(pe, fv.Elem(), tr)
	case reflect.Map:
		return w.nullThen(pe, fv, tr)
	case reflect.Struct:
		if atomicMap(atom) {
			// One leaf, Modified when it differs from the empty value.
			return w.atomic(pe, fv, tr, true)
		}
		defer w.descend(pe)()
		return w.bothStruct(fv, tr, false)
	default:
		c, ok := scalarClassOf(fv.Kind())
		if !ok || c == scalarFloat || !scalarFits(c, atom) {
			return false
		}
		// A non-zero string, integer or boolean differs from the zero one.
		w.insert(pe)
		return true
	}
}

// nullThen compares a null in the empty object with obj's v (a pointer's
// target or a non-nil map): a scalar or an empty map is Modified; a map
// with entries adds them (the map's own path is in neither set).
func (w *directWalker) nullThen(pe fieldpath.PathElement, v reflect.Value, tr smdschema.TypeRef) bool {
	atom, ok := w.schema.Resolve(tr)
	if !ok {
		return false
	}
	entry := value.TypeReflectEntryOf(v.Type())
	if entry.CanConvertToUnstructured() {
		return false
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Map:
		if atom.Map == nil {
			return false
		}
		if atomicMap(atom) {
			// A leaf: null against a map is Modified.
			return w.atomic(pe, v, tr, false)
		}
		if isEmptyMap(v) {
			w.insert(pe)
			return true
		}
		return w.entries(pe, v, atom.Map)
	case reflect.Pointer, reflect.Interface, reflect.Slice:
		return false
	default:
		return w.scalar(pe, v.Kind(), atom)
	}
}

// added records v, present in obj and absent from the empty object, with
// everything under it.
func (w *directWalker) added(pe fieldpath.PathElement, v reflect.Value, tr smdschema.TypeRef) bool {
	atom, ok := w.schema.Resolve(tr)
	if !ok {
		return false
	}
	entry := value.TypeReflectEntryOf(v.Type())
	if entry.CanConvertToUnstructured() {
		u, err := toUnstructured(entry, v)
		if err != nil || !unstructuredScalarFits(u, atom) {
			return false
		}
		w.insert(pe)
		return true
	}
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			if !nullFits(atom) {
				return false
			}
			w.insert(pe)
			return true
		}
		if v.Kind() == reflect.Interface {
			return false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Map, reflect.Struct:
		if v.Kind() == reflect.Map && v.IsNil() {
			if !nullFits(atom) {
				return false
			}
			w.insert(pe)
			return true
		}
		if atom.Map == nil {
			return false
		}
		if atomicMap(atom) {
			return w.atomic(pe, v, tr, false)
		}
		w.insert(pe)
		if isEmptyMap(v) {
			return true
		}
		return w.entries(pe, v, atom.Map)
	case reflect.Slice:
		switch {
		case v.IsNil():
			if !nullFits(atom) {
				return false
			}
		case v.Type().Elem().Kind() == reflect.Uint8:
			if !scalarFits(scalarString, atom) {
				return false
			}
		case v.Len() == 0:
			if atom.List == nil {
				return false
			}
		default:
			return false
		}
		w.insert(pe)
		return true
	default:
		return w.scalar(pe, v.Kind(), atom)
	}
}

// toUnstructured is entry.ToUnstructured(v), structured-merge-diff's JSON
// form of a type that has its own, but for metav1.MicroTime made without
// the JSON round trip structured-merge-diff takes for it (MarshalJSON, then
// a json.Decoder, whose buffer was ~2 KB of every scheduler event's
// create): null when zero, else the time in UTC as RFC 3339 to the
// microsecond, which has no character JSON escapes.
// TestToUnstructuredMicroTime holds it to structured-merge-diff's.
func toUnstructured(entry *value.TypeReflectCacheEntry, v reflect.Value) (any, error) {
	if v.Type() == microTimeType {
		var t metav1.MicroTime
		reflect.ValueOf(&t).Elem().Set(v)
		if t.IsZero() {
			return nil, nil
		}
		return t.UTC().Format(metav1.RFC3339Micro), nil
	}
	return entry.ToUnstructured(v)
}

// scalar records pe for a scalar of kind k that validates against atom.
func (w *directWalker) scalar(pe fieldpath.PathElement, k reflect.Kind, atom smdschema.Atom) bool {
	c, ok := scalarClassOf(k)
	if !ok || !scalarFits(c, atom) {
		return false
	}
	w.insert(pe)
	return true
}

// entries adds, under pe, every entry of the non-empty map or struct v,
// whose schema is m (false for an atomic map, whose entries are not
// fields of their own).
func (w *directWalker) entries(pe fieldpath.PathElement, v reflect.Value, m *smdschema.Map) bool {
	if m.ElementRelationship == smdschema.Atomic {
		return false
	}
	defer w.descend(pe)()
	return w.addChildren(v, m)
}

// atomicMap reports whether atom is a map (or struct) compared as one
// value (mapType/structType atomic).
func atomicMap(atom smdschema.Atom) bool {
	return atom.Map != nil && atom.Map.ElementRelationship == smdschema.Atomic
}

// atomic records the atomic map or struct v (whose type is tr) as one
// leaf: structured-merge-diff compares it whole and owns no field inside
// it. Added (absent from the empty object) or against a null it is always
// recorded; present in both (againstZero) only when it differs from the
// zero value. Its contents must pass structured-merge-diff's validation,
// which is asked on a copy of v alone (validation checks each node on its
// own).
func (w *directWalker) atomic(pe fieldpath.PathElement, v reflect.Value, tr smdschema.TypeRef, againstZero bool) bool {
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	rv, err := value.NewValueReflect(p.Interface())
	if err != nil {
		return false
	}
	if _, err := typed.AsTyped(rv, w.schema, tr, typed.AllowDuplicates); err != nil {
		return false
	}
	if againstZero {
		zero, err := value.NewValueReflect(reflect.New(v.Type()).Interface())
		if err != nil {
			return false
		}
		if value.Equals(zero, rv) {
			return true
		}
	}
	w.insert(pe)
	return true
}

// addChildren adds every entry of the map or every present field of the
// struct v, whose schema is m.
func (w *directWalker) addChildren(v reflect.Value, m *smdschema.Map) bool {
	if v.Kind() == reflect.Map {
		if v.Type().Key().Kind() != reflect.String {
			return false
		}
		add := func(k, v reflect.Value) bool {
			key := k.String()
			ftr, ok := fieldType(m, key)
			return ok && w.added(fieldpath.PathElement{FieldName: &key}, v, ftr)
		}
		if v.Len() == 1 {
			it := v.MapRange()
			it.Next()
			return add(it.Key(), it.Value())
		}
		// In key order, so that a shape does not depend on map order.
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			if !add(k, v.MapIndex(k)) {
				return false
			}
		}
		return true
	}
	entry := value.TypeReflectEntryOf(v.Type())
	for _, f := range entry.OrderedFields() {
		fv := f.GetFrom(v)
		if f.CanOmit(fv) {
			continue
		}
		ftr, ok := fieldType(m, f.JsonName)
		if !ok {
			return false
		}
		if !w.added(fieldpath.PathElement{FieldName: &f.JsonName}, fv, ftr) {
			return false
		}
	}
	return true
}

// isEmptyMap reports whether the struct or map v has no present entries.
func isEmptyMap(v reflect.Value) bool {
	if v.Kind() == reflect.Map {
		return v.Len() == 0
	}
	for _, f := range value.TypeReflectEntryOf(v.Type()).OrderedFields() {
		if !f.CanOmit(f.GetFrom(v)) {
			return false
		}
	}
	return true
}

// fieldType is the schema type of a map's entry name, as
// structured-merge-diff's walkers find it; false when the schema declares
// no such field (a validation error).
func fieldType(m *smdschema.Map, name string) (smdschema.TypeRef, bool) {
	if sf, ok := m.FindField(name); ok {
		return sf.Type, true
	}
	if (m.ElementType == smdschema.TypeRef{}) {
		return smdschema.TypeRef{}, false
	}
	return m.ElementType, true
}

type scalarClass int

const (
	scalarString scalarClass = iota
	scalarInt
	scalarFloat
	scalarBool
)

func scalarClassOf(k reflect.Kind) (scalarClass, bool) {
	switch k {
	case reflect.String:
		return scalarString, true
	case reflect.Bool:
		return scalarBool, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return scalarInt, true
	case reflect.Float32, reflect.Float64:
		return scalarFloat, true
	}
	return 0, false
}

// scalarFits reports whether a scalar of class c passes structured-merge-
// diff's validation against atom (it picks the atom's scalar part).
func scalarFits(c scalarClass, atom smdschema.Atom) bool {
	if atom.Scalar == nil {
		return false
	}
	switch *atom.Scalar {
	case smdschema.Untyped:
		return true
	case smdschema.String:
		return c == scalarString
	case smdschema.Numeric:
		return c == scalarInt || c == scalarFloat
	case smdschema.Boolean:
		return c == scalarBool
	}
	return false
}

// nullFits reports whether a null passes validation against atom.
func nullFits(atom smdschema.Atom) bool {
	return atom.Map != nil || atom.Scalar != nil || atom.List != nil
}

// unstructuredScalarFits reports whether u, the JSON form of a type that
// has its own, is a null or a scalar that passes validation against atom.
// Maps and lists are not modelled.
func unstructuredScalarFits(u any, atom smdschema.Atom) bool {
	switch u.(type) {
	case nil:
		return nullFits(atom)
	case string:
		return scalarFits(scalarString, atom)
	case bool:
		return scalarFits(scalarBool, atom)
	case int64:
		return scalarFits(scalarInt, atom)
	}
	return false
}
