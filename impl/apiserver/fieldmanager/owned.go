package fieldmanager

import (
	"bytes"
	"reflect"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ownedUpdate is the short road of the commonest repeated write: an
// update (operation Update) by a manager that changes only scalar fields
// it alone already owns, such as a kubelet renewing its node's Lease
// (spec.renewTime) or an event recorder counting a repeated event. For
// such a write apimachinery's field manager keeps every entry as it is and
// only stamps the writer's entry with the current time (when anything
// changed), then sorts the entries; ownedUpdate does that without decoding
// and re-encoding every entry's FieldsV1, converting both objects for
// structured-merge-diff and comparing them:
//
//   - the changes are found by walking the two objects along struct fields
//     (structured-merge-diff's view of them: JSON names, inlined structs,
//     omitempty), each a scalar present on both sides whose JSON value
//     differs; anything else (a list, a map, a float, a field added or
//     removed, a change in metadata or in a reset field) takes the full
//     field manager;
//   - the live object must validate (without its managed fields, whose
//     entries are validated apart and cached), and each changed field's
//     new value fit its schema, so the new object validates too;
//   - every entry is an Update of the kind's version with a non-empty,
//     canonical FieldsV1 (what encoding its set gives back) that the schema
//     leaves as it is, at most maxUpdateManagers of them, one per manager;
//     the writer has one and owns every changed field, no other owns any.
//
// TestOwnedUpdateMatchesFieldManager compares the results with the full
// field manager's on writes that take this road and writes that do not.
type ownedUpdate struct {
	p           *equalPruner // the kind's Go type, converter and entry validation
	empty       *typed.TypedValue
	schema      *smdschema.Schema
	root        smdschema.TypeRef
	apiVersion  string
	subresource string
	reset       map[string]bool // top-level fields of the endpoint's reset filter
	now         func() time.Time

	mu    sync.RWMutex
	sets  map[string]*fieldpath.Set // FieldsV1 -> its set; nil: not usable here
	nsets int
}

const (
	maxOwnedSets   = 2048
	maxOwnedSetLen = 1 << 10
)

// maxUpdateManagers is apimachinery's cap of Update entries, beyond which
// it merges the oldest into one.
const maxUpdateManagers = 10

// newOwnedUpdate prepares the road for cfg's endpoint over the pruner's
// kind, or returns nil.
func newOwnedUpdate(cfg Config, p *equalPruner) *ownedUpdate {
	if p == nil || !p.standIn {
		return nil
	}
	empty := reflect.New(p.objType.Elem()).Interface().(runtime.Object)
	empty.GetObjectKind().SetGroupVersionKind(p.kind)
	tv, err := p.tc.ObjectToTyped(empty, typed.AllowDuplicates)
	if err != nil {
		return nil
	}
	o := &ownedUpdate{p: p, empty: tv, schema: tv.Schema(), root: tv.TypeRef(), apiVersion: p.kind.GroupVersion().String(),
		subresource: cfg.Subresource, reset: map[string]bool{}, now: time.Now, sets: map[string]*fieldpath.Set{}}
	for _, f := range cfg.ResetFields {
		o.reset[f] = true
	}
	return o
}

// update returns obj with its managed fields set, and true, when the write
// of live to obj by manager takes this road.
func (o *ownedUpdate) update(live, obj runtime.Object, manager string, tc managedfields.TypeConverter) (runtime.Object, bool) {
	if o == nil || !o.p.applies(live, obj) {
		return nil, false
	}
	lm, lok := live.(metav1.Object)
	om, ook := obj.(metav1.Object)
	if !lok || !ook {
		return nil, false
	}
	entries := lm.GetManagedFields()
	if len(entries) == 0 || len(entries) > maxUpdateManagers {
		return nil, false
	}
	if o.subresource == "" && om.GetManagedFields() != nil &&
		!equalValues(reflect.ValueOf(om.GetManagedFields()), reflect.ValueOf(entries)) {
		return nil, false // the client's own managed fields (or a reset)
	}
	writer := -1
	for i := range entries {
		e := &entries[i]
		if e.Operation != metav1.ManagedFieldsOperationUpdate || e.APIVersion != o.apiVersion ||
			e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
			return nil, false
		}
		for j := range i {
			if entries[j].Manager == e.Manager && entries[j].Subresource == e.Subresource {
				return nil, false
			}
		}
		if e.Manager == manager && e.Subresource == o.subresource {
			writer = i
		}
	}
	if writer < 0 {
		return nil, false
	}
	w := ownedWalker{schema: o.schema, reset: o.reset}
	if !w.structs(reflect.ValueOf(live).Elem(), reflect.ValueOf(obj).Elem(), o.root, true) {
		return nil, false
	}
	sets := make([]*fieldpath.Set, len(entries))
	for i := range entries {
		if sets[i] = o.set(entries[i].FieldsV1.Raw); sets[i] == nil {
			return nil, false
		}
	}
	for _, c := range w.changed {
		for i, s := range sets {
			if s.Has(c.path) != (i == writer) {
				return nil, false
			}
		}
	}
	if !o.p.validEntries(entries) || !o.validates(live, w.changed, tc) {
		return nil, false
	}
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i := range entries {
		out[i] = entries[i]
		f := *entries[i].FieldsV1
		out[i].FieldsV1 = &f
	}
	if len(w.changed) > 0 {
		out[writer].Time = &metav1.Time{Time: o.now().UTC()}
	}
	sortEntries(out)
	om.SetManagedFields(out)
	return obj, true
}

// validates reports whether live, its managed fields aside, validates
// against the kind's schema. The changed fields, whose values on both
// sides are known to fit, are validated at their zero value instead (what
// the kind's empty object, which validates, holds there), where that does
// not reach into what the copy shares with live.
func (o *ownedUpdate) validates(live runtime.Object, changed []ownedChange, tc managedfields.TypeConverter) bool {
	c := reflect.New(o.p.objType.Elem())
	c.Elem().Set(reflect.ValueOf(live).Elem())
	for _, ch := range changed {
		if ch.viaPointer {
			continue
		}
		v, lv := c.Elem(), reflect.ValueOf(live).Elem()
		for _, f := range ch.fields {
			v, lv = f.GetFrom(v), f.GetFrom(lv)
		}
		if v.CanSet() && v.UnsafeAddr() != lv.UnsafeAddr() {
			v.SetZero()
		}
	}
	cp := c.Interface().(runtime.Object)
	cp.(metav1.Object).SetManagedFields(nil)
	cp.GetObjectKind().SetGroupVersionKind(o.p.kind)
	_, err := tc.ObjectToTyped(cp, typed.AllowDuplicates)
	return err == nil
}

// set is the field set of a FieldsV1, or nil when it is not one this road
// takes: it does not decode, is empty, is not what encoding its set gives
// back, or the schema would change it. Kept for up to maxOwnedSets
// entries of at most maxOwnedSetLen bytes (a Lease's or an Event's, not a
// Pod's: the sets stay on the heap).
func (o *ownedUpdate) set(raw []byte) *fieldpath.Set {
	o.mu.RLock()
	s, ok := o.sets[string(raw)]
	o.mu.RUnlock()
	if ok {
		return s
	}
	s = o.decode(raw)
	if len(raw) <= maxOwnedSetLen {
		o.mu.Lock()
		if o.nsets < maxOwnedSets {
			if _, dup := o.sets[string(raw)]; !dup {
				o.sets[string(raw)] = s
				o.nsets++
			}
		}
		o.mu.Unlock()
	}
	return s
}

func (o *ownedUpdate) decode(raw []byte) *fieldpath.Set {
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil || s.Empty() {
		return nil
	}
	if again, err := s.ToJSON(); err != nil || string(again) != string(raw) {
		return nil
	}
	// Reconciling reads only the schema and the set.
	if reconciled, err := typed.ReconcileFieldSetWithSchema(s, o.empty); err != nil || reconciled != nil {
		return nil
	}
	return s
}

// sortEntries orders managed fields entries as apimachinery encodes them:
// by operation, then time (seconds), manager, apiVersion, subresource.
func sortEntries(es []metav1.ManagedFieldsEntry) {
	seconds := func(t *metav1.Time) int64 {
		if t == nil {
			return 0
		}
		return t.Unix()
	}
	slices.SortFunc(es, func(p, q metav1.ManagedFieldsEntry) int {
		switch {
		case p.Operation != q.Operation:
			return cmpString(string(p.Operation), string(q.Operation))
		case seconds(p.Time) != seconds(q.Time):
			if seconds(p.Time) < seconds(q.Time) {
				return -1
			}
			return 1
		case p.Manager != q.Manager:
			return cmpString(p.Manager, q.Manager)
		case p.APIVersion != q.APIVersion:
			return cmpString(p.APIVersion, q.APIVersion)
		}
		return cmpString(p.Subresource, q.Subresource)
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ownedWalker collects the scalar fields that differ between two objects
// of one type, or fails on any difference it does not model.
type ownedWalker struct {
	schema     *smdschema.Schema
	reset      map[string]bool
	path       fieldpath.Path
	fields     []*value.FieldCacheEntry // the struct fields along path
	viaPointer bool                     // path goes through a pointer to a struct
	changed    []ownedChange
}

// ownedChange is a changed scalar field: its path, the struct fields that
// lead to it, and whether they go through a pointer to a struct.
type ownedChange struct {
	path       fieldpath.Path
	fields     []*value.FieldCacheEntry
	viaPointer bool
}

func (w *ownedWalker) change() {
	w.changed = append(w.changed, ownedChange{path: slices.Clone(w.path), fields: slices.Clone(w.fields), viaPointer: w.viaPointer})
}

var (
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	timeType      = reflect.TypeFor[metav1.Time]()
)

// structs walks the structs a (live) and b (new), whose schema is tr. At
// the root the kind fields are skipped (the field manager sets both to the
// kind's), and metadata must be equal but for the managed fields (taken
// care of apart).
func (w *ownedWalker) structs(a, b reflect.Value, tr smdschema.TypeRef, root bool) bool {
	atom, ok := w.schema.Resolve(tr)
	if !ok || atom.Map == nil || atom.Map.ElementRelationship == smdschema.Atomic {
		return false
	}
	for _, f := range value.TypeReflectEntryOf(a.Type()).OrderedFields() {
		if root && (f.JsonName == "apiVersion" || f.JsonName == "kind") {
			continue
		}
		fa, fb := f.GetFrom(a), f.GetFrom(b)
		if root && f.JsonName == "metadata" {
			if !equalMetadata(fa, fb) {
				return false
			}
			continue
		}
		if equalValues(fa, fb) {
			continue
		}
		if root && w.reset[f.JsonName] {
			return false
		}
		if f.CanOmit(fa) || f.CanOmit(fb) {
			return false // added or removed
		}
		ftr, ok := fieldType(atom.Map, f.JsonName)
		if !ok {
			return false
		}
		name := f.JsonName
		w.path = append(w.path, fieldpath.PathElement{FieldName: &name})
		w.fields = append(w.fields, f)
		ok = w.field(fa, fb, ftr)
		w.path, w.fields = w.path[:len(w.path)-1], w.fields[:len(w.fields)-1]
		if !ok {
			return false
		}
	}
	return true
}

// equalMetadata reports whether the object metadata a and b are equal but
// for their managed fields.
func equalMetadata(a, b reflect.Value) bool {
	if a.Kind() != reflect.Struct {
		return false
	}
	for i := range a.NumField() {
		if a.Type().Field(i).Name == "ManagedFields" {
			continue
		}
		if !equalValues(a.Field(i), b.Field(i)) {
			return false
		}
	}
	return true
}

// field compares a present field's two values that are not equal in Go.
func (w *ownedWalker) field(a, b reflect.Value, tr smdschema.TypeRef) bool {
	deref := a.Kind() == reflect.Pointer
	if deref {
		if a.IsNil() || b.IsNil() {
			return false
		}
		a, b = a.Elem(), b.Elem()
	}
	atom, ok := w.schema.Resolve(tr)
	if !ok {
		return false
	}
	switch t := a.Type(); {
	case t == microTimeType || t == timeType:
		return w.timeLeaf(a, b, atom)
	case value.TypeReflectEntryOf(t).CanConvertToUnstructured():
		return false // other types with a JSON form of their own
	}
	switch a.Kind() {
	case reflect.Struct:
		if !deref {
			return w.structs(a, b, tr, false)
		}
		was := w.viaPointer
		w.viaPointer = true
		ok := w.structs(a, b, tr, false)
		w.viaPointer = was
		return ok
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		c, _ := scalarClassOf(a.Kind())
		if !scalarFits(c, atom) {
			return false
		}
		w.change()
		return true
	}
	return false
}

// timeLeaf compares two metav1.Time or metav1.MicroTime values by their
// JSON form (RFC 3339 in UTC, to the second or the microsecond; null when
// zero), without formatting them.
func (w *ownedWalker) timeLeaf(a, b reflect.Value, atom smdschema.Atom) bool {
	var ta, tb time.Time
	unit := time.Second
	if a.Type() == microTimeType {
		ta, tb, unit = a.Interface().(metav1.MicroTime).Time, b.Interface().(metav1.MicroTime).Time, time.Microsecond
	} else {
		ta, tb = a.Interface().(metav1.Time).Time, b.Interface().(metav1.Time).Time
	}
	if !jsonTime(ta) || !jsonTime(tb) || !scalarFits(scalarString, atom) {
		return false
	}
	if ta.UTC().Truncate(unit).Equal(tb.UTC().Truncate(unit)) {
		return true // the same JSON value
	}
	w.change()
	return true
}

// jsonTime reports whether t's JSON form is an RFC 3339 string whose
// order is t's: not zero (null), years 1 to 9999 in UTC.
func jsonTime(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}
