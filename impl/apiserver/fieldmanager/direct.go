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
// Lists are walked as their schema describes them: an atomic list is one
// leaf (its elements validated, not recorded); an associative list with
// keys (listType=map: containers by name, ports by containerPort and
// protocol) records each element under its key, the element's present key
// fields (or the schema's default for a missing one) sorted by name; a set
// (listType=set) records each element under its value.
//
// It answers only where it is sure of the result; anything it does not
// model (floats, atomic maps holding fields, types whose JSON form is a map
// or a list, list elements with duplicate keys or none, a value its schema
// would reject) makes it report false, and the caller takes
// structured-merge-diff's road.
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
	set := fieldpath.NewSet()
	w := directWalker{schema: d.schema, set: set, path: make(fieldpath.Path, 0, 8), nodes: make([]*fieldpath.Set, 1, 8)}
	w.nodes[0] = set
	if !w.bothStruct(obj.Elem(), d.root, true) {
		return nil, false
	}
	return set, true
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
	// nodes[i] is the set's node at path[:i], for the prefix of path
	// something was inserted under (a node is made on the first insert:
	// the set holds no empty ones).
	nodes []*fieldpath.Set
	// mute is above zero inside an atomic list, whose elements are
	// validated but own no fields: nothing is recorded.
	mute int
}

// insert records path+pe: what set.Insert(append(path, pe)) does, without
// finding the nodes of path again for every field under it.
func (w *directWalker) insert(pe fieldpath.PathElement) {
	if w.mute > 0 {
		return
	}
	if w.set != nil {
		for d := len(w.nodes); d <= len(w.path); d++ {
			w.nodes = append(w.nodes, w.nodes[d-1].Children.Descend(w.path[d-1]))
		}
		w.nodes[len(w.path)].Members.Insert(pe)
		return
	}
	for _, e := range append(w.path, pe) {
		w.trace = appendPathElement(w.trace, e)
	}
	w.trace = append(w.trace, 0xff) // no path element starts with 0xff
}

// appendPathElement appends e to a shape: a tag ('f' a field, 'k' a key,
// 'v' a set's value), then its parts, each length-prefixed or tagged, so
// that no two path elements append the same bytes. The walk makes keys and
// values of strings, integers and booleans only.
func appendPathElement(b []byte, e fieldpath.PathElement) []byte {
	switch {
	case e.FieldName != nil:
		b = append(b, 'f')
		b = appendShapeString(b, *e.FieldName)
	case e.Key != nil:
		b = append(b, 'k')
		b = binary.AppendUvarint(b, uint64(len(*e.Key)))
		for _, f := range *e.Key {
			b = appendShapeString(b, f.Name)
			b = appendShapeValue(b, f.Value)
		}
	case e.Value != nil:
		b = append(b, 'v')
		b = appendShapeValue(b, *e.Value)
	}
	return b
}

func appendShapeString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendShapeValue(b []byte, v value.Value) []byte {
	switch {
	case v.IsString():
		return appendShapeString(append(b, 's'), v.AsString())
	case v.IsInt():
		return binary.AppendVarint(append(b, 'i'), v.AsInt())
	case v.IsBool() && v.AsBool():
		return append(b, 't')
	default: // false: keyValue and setValue make nothing else
		return append(b, 'b')
	}
}

func (w *directWalker) descend(pe fieldpath.PathElement) (restore func()) {
	n := len(w.path)
	w.path = append(w.path, pe)
	return func() {
		w.path = w.path[:n]
		if len(w.nodes) > n+1 {
			w.nodes = w.nodes[:n+1]
		}
	}
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
	case reflect.Slice:
		// The empty object holds a null here.
		if fv.Type().Elem().Kind() == reflect.Uint8 || atom.List == nil || atom.Map != nil || atom.Scalar != nil {
			return false
		}
		if fv.Len() == 0 {
			// An empty list against a null: one leaf, Modified.
			w.insert(pe)
			return true
		}
		return w.list(pe, fv, atom.List, false)
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
			if atom.List == nil {
				return false
			}
			return w.list(pe, v, atom.List, true)
		}
		w.insert(pe)
		return true
	default:
		return w.scalar(pe, v.Kind(), atom)
	}
}

// list records the non-empty list v (a slice, not of bytes) whose schema
// is l. An atomic list is one leaf (Added, or Modified against the empty
// object's null), its elements validated. An associative list records its
// elements, each under its key or (a set) its value, and its own path only
// when it is absent from the empty object (own): against a null,
// structured-merge-diff records the elements alone.
func (w *directWalker) list(pe fieldpath.PathElement, v reflect.Value, l *smdschema.List, own bool) bool {
	switch {
	case l.ElementRelationship == smdschema.Atomic:
		if !w.atomicItems(v, l.ElementType) {
			return false
		}
		w.insert(pe)
		return true
	case l.ElementRelationship != smdschema.Associative:
		return false
	}
	if own {
		w.insert(pe)
	}
	defer w.descend(pe)()
	if len(l.Keys) > 0 {
		return w.keyedItems(v, l)
	}
	return w.setItems(v, l)
}

// atomicItems reports whether every element of the atomic list v
// validates against et, recording nothing.
func (w *directWalker) atomicItems(v reflect.Value, et smdschema.TypeRef) bool {
	w.mute++
	defer func() { w.mute-- }()
	for i := range v.Len() {
		if !w.added(fieldpath.PathElement{}, v.Index(i), et) {
			return false
		}
	}
	return true
}

// keyedItems records every element of the associative list v (listType
// map) under its key, with everything in it. The elements must be structs
// (maps to structured-merge-diff) with at least one key, and no two with
// the same key (which structured-merge-diff would record as one
// duplicated element).
func (w *directWalker) keyedItems(v reflect.Value, l *smdschema.List) bool {
	et := v.Type().Elem()
	entry := value.TypeReflectEntryOf(et)
	if et.Kind() != reflect.Struct || entry.CanConvertToUnstructured() {
		return false
	}
	atom, ok := w.schema.Resolve(l.ElementType)
	if !ok || atom.Map == nil {
		return false
	}
	keys := make([]value.FieldList, v.Len())
	for i := range keys {
		k, ok := keyOf(v.Index(i), entry, l.Keys, atom.Map)
		if !ok {
			return false
		}
		keys[i] = k
	}
	if hasDuplicate(keys, value.FieldList.Compare) {
		return false
	}
	for i := range keys {
		if !w.added(fieldpath.PathElement{Key: &keys[i]}, v.Index(i), l.ElementType) {
			return false
		}
	}
	return true
}

// keyOf is the key of the associative list's element elem (a struct whose
// reflection entry is entry and schema m): each key field elem has, else
// the schema's default for it if any, sorted by name; false when none is
// there or one is not a string, integer or boolean.
func keyOf(elem reflect.Value, entry *value.TypeReflectCacheEntry, names []string, m *smdschema.Map) (value.FieldList, bool) {
	key := make(value.FieldList, 0, len(names))
	for _, name := range names {
		if f, ok := entry.Fields()[name]; ok {
			if fv := f.GetFrom(elem); !f.CanOmit(fv) {
				kv, ok := scalarValue(fv)
				if !ok {
					return nil, false
				}
				key = append(key, value.Field{Name: name, Value: kv})
				continue
			}
		}
		if sf, ok := m.FindField(name); ok && sf.Default != nil {
			kv := value.NewValueInterface(sf.Default)
			if !kv.IsString() && !kv.IsInt() && !kv.IsBool() {
				return nil, false
			}
			key = append(key, value.Field{Name: name, Value: kv})
		}
	}
	if len(key) == 0 {
		return nil, false
	}
	key.Sort()
	return key, true
}

// scalarValue is v as structured-merge-diff's reflection reads it, when
// that is a string, an integer or a boolean.
func scalarValue(v reflect.Value) (value.Value, bool) {
	for {
		entry := value.TypeReflectEntryOf(v.Type())
		if entry.CanConvertToUnstructured() {
			u, err := toUnstructured(entry, v)
			if err != nil {
				return nil, false
			}
			switch u.(type) {
			case string, int64, bool:
				return value.NewValueInterface(u), true
			}
			return nil, false
		}
		if v.Kind() != reflect.Pointer {
			break
		}
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return value.NewValueInterface(v.String()), true
	case reflect.Bool:
		return value.NewValueInterface(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return value.NewValueInterface(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return value.NewValueInterface(int64(v.Uint())), true
	}
	return nil, false
}

// setItems records every element of the set v (listType set) under its
// value: scalars of the element type, no two equal.
func (w *directWalker) setItems(v reflect.Value, l *smdschema.List) bool {
	atom, ok := w.schema.Resolve(l.ElementType)
	if !ok {
		return false
	}
	c, ok := scalarClassOf(v.Type().Elem().Kind())
	if !ok || c == scalarFloat || !scalarFits(c, atom) || value.TypeReflectEntryOf(v.Type().Elem()).CanConvertToUnstructured() {
		return false
	}
	vals := make([]value.Value, v.Len())
	for i := range vals {
		if vals[i], ok = scalarValue(v.Index(i)); !ok {
			return false
		}
	}
	if hasDuplicate(vals, value.Compare) {
		return false
	}
	for i := range vals {
		w.insert(fieldpath.PathElement{Value: &vals[i]})
	}
	return true
}

// hasDuplicate reports whether two of xs compare equal.
func hasDuplicate[T any](xs []T, cmp func(T, T) int) bool {
	if len(xs) <= 8 {
		for i := range xs {
			for j := i + 1; j < len(xs); j++ {
				if cmp(xs[i], xs[j]) == 0 {
					return true
				}
			}
		}
		return false
	}
	sorted := slices.Clone(xs)
	slices.SortFunc(sorted, cmp)
	for i := 1; i < len(sorted); i++ {
		if cmp(sorted[i-1], sorted[i]) == 0 {
			return true
		}
	}
	return false
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
	if v.Type() == stringMapType && v.CanInterface() {
		return w.addStrings(v.Interface().(map[string]string), m)
	}
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

// stringMapType is labels', annotations' and a ConfigMap's data's type.
var stringMapType = reflect.TypeFor[map[string]string]()

// addStrings is addChildren for a map[string]string: what added records for
// each entry (a string is a scalar: it is recorded if the entry's schema
// takes a string), without the copies of every key and value that reading
// the map through reflect makes.
func (w *directWalker) addStrings(sm map[string]string, m *smdschema.Map) bool {
	add := func(key string) bool {
		ftr, ok := fieldType(m, key)
		if !ok {
			return false
		}
		atom, ok := w.schema.Resolve(ftr)
		return ok && w.scalar(fieldpath.PathElement{FieldName: &key}, reflect.String, atom)
	}
	if len(sm) == 1 {
		for k := range sm {
			return add(k)
		}
	}
	// In key order, so that a shape does not depend on map order.
	var kb [16]string
	keys := kb[:0]
	for k := range sm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !add(k) {
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
