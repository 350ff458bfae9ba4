package fieldmanager

import (
	"bytes"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// keptEntriesUpdate is the road of an update (operation Update) that the
// owned road does not take, such as a kubelet's pods/status or nodes/status
// write: structured-merge-diff compares the pruned objects (equalPruner)
// as on the pruned road, but the managed fields go around apimachinery's
// chain of managers, which decodes every entry's FieldsV1 into a set and
// encodes every set again on every update, though an update usually
// changes only its writer's entry. Here:
//
//   - an entry's set is decoded once per distinct FieldsV1 and kept
//     (keyed by its bytes; the watch cache shares equal entries, and the
//     pods of one template record equal ones), with whether encoding the
//     set gives the bytes back;
//   - the sets are updated as structured-merge-diff's Updater.Update does
//     for apimachinery's structuredMergeManager (updateSets): each set
//     reconciled with the schema (which reads only the schema and the set,
//     so the result is kept with the decoded set), the pruned objects
//     compared, the endpoint's reset fields filtered out; the writer's new
//     fields lose the object metadata no entry records (stripMeta), join
//     the writer's previous entry and stamp it with the current time
//     (managedFieldsUpdater);
//   - an entry whose set comes back equal, and whose bytes are what its set
//     encodes to, keeps its bytes; the others are encoded.
//
// It applies only where apimachinery's other steps are no-ops or agree:
// the live object has entries (else nothing is tracked), every entry is
// an Update or Apply of the kind's version (no conversion between
// versions) with FieldsV1 that decodes, no two entries are one manager
// (the manager identifiers' JSON round trip: valid UTF-8 names), the main
// endpoint's request carries no managed fields of its own or the live
// ones, and the result has at most maxUpdateManagers Update entries (no
// capping). Anything else takes the pruned or the full field manager.
//
// TestKeptEntriesUpdateMatchesFieldManager compares the results with the
// full field manager's on random objects of every served kind.
type keptEntriesUpdate struct {
	p           *equalPruner
	apiVersion  fieldpath.APIVersion
	subresource string
	reset       fieldpath.Filter  // the endpoint's reset fields, or nil
	empty       *typed.TypedValue // the kind's empty object, for reconciling
	now         func() time.Time
	copies      sync.Pool // *pruneCopies

	mu       sync.RWMutex
	sets     map[string]decodedFields // FieldsV1 bytes -> their set
	setBytes int                      // the keys' bytes, at most maxKeptSetBytes
}

// decodedFields is an entry's FieldsV1 decoded: its set, whether encoding
// the set gives the same bytes back, and the set reconciled with the
// kind's schema (the set itself when that changes nothing).
type decodedFields struct {
	set        *fieldpath.Set
	canonical  bool
	reconciled *fieldpath.Set
}

const (
	maxKeptSetLen   = 16 << 10
	maxKeptSetBytes = 4 << 20
)

// currentOperation names the writer's new fields in updateSets' result;
// an entry's name here is its index (strconv.Itoa), never this.
const currentOperation = "current-operation"

// metadataNoEntryRecords is what apimachinery's stripMeta takes out of an
// update's fields: the type meta and the metadata the server sets.
var metadataNoEntryRecords = fieldpath.NewSet(
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

// newKeptEntriesUpdate prepares the road for cfg's endpoint over the
// pruner's kind, or returns nil.
func newKeptEntriesUpdate(cfg Config, p *equalPruner, reset map[fieldpath.APIVersion]fieldpath.Filter) *keptEntriesUpdate {
	if p == nil || !p.standIn {
		return nil
	}
	empty := reflect.New(p.objType.Elem()).Interface().(runtime.Object)
	empty.GetObjectKind().SetGroupVersionKind(p.kind)
	tv, err := p.tc.ObjectToTyped(empty, typed.AllowDuplicates)
	if err != nil {
		return nil
	}
	v := fieldpath.APIVersion(p.kind.GroupVersion().String())
	k := &keptEntriesUpdate{p: p, apiVersion: v, subresource: cfg.Subresource, now: time.Now,
		reset: reset[v], empty: tv, sets: map[string]decodedFields{}}
	k.copies.New = func() any { return &pruneCopies{} }
	return k
}

// update returns obj with its managed fields set, and true, when the write
// of live to obj by manager takes this road; otherwise obj is as it was.
func (k *keptEntriesUpdate) update(live, obj runtime.Object, manager string, tc managedfields.TypeConverter) (runtime.Object, bool) {
	if k == nil || !k.p.applies(live, obj) {
		return nil, false
	}
	lm, lok := live.(metav1.Object)
	om, ook := obj.(metav1.Object)
	if !lok || !ook {
		return nil, false
	}
	entries := lm.GetManagedFields()
	if len(entries) == 0 {
		return nil, false
	}
	sent := om.GetManagedFields()
	if k.subresource == "" && sent != nil && !equalValues(reflect.ValueOf(sent), reflect.ValueOf(entries)) {
		return nil, false // the client's own managed fields (or a reset)
	}
	if manager == "" {
		manager = "unknown"
	} else if !utf8.ValidString(manager) {
		return nil, false // its identifier's JSON round trip changes it
	}
	writer, ok := k.checkEntries(entries, manager)
	if !ok {
		return nil, false
	}
	managers := make(fieldpath.ManagedFields, len(entries)+1)
	decoded := make([]decodedFields, len(entries))
	for i := range entries {
		d, ok := k.decoded(entries[i].FieldsV1)
		if !ok {
			return nil, false
		}
		decoded[i] = d
		managers[strconv.Itoa(i)] = fieldpath.NewVersionedSet(d.reconciled, k.apiVersion, entries[i].Operation == metav1.ManagedFieldsOperationApply)
	}

	// As apimachinery, compare the objects without the request's managed
	// fields (pruneInto gives the live copy its stand-in only then).
	om.SetManagedFields(nil)
	result, ok := k.compare(live, obj, managers, tc)
	if !ok {
		om.SetManagedFields(sent)
		return nil, false
	}
	writerKey := "writer"
	if writer >= 0 {
		writerKey = strconv.Itoa(writer)
	}
	stamped := false
	if cur, ok := result[currentOperation]; ok {
		delete(result, currentOperation)
		if s := cur.Set().Difference(metadataNoEntryRecords); !s.Empty() {
			if prev, ok := result[writerKey]; ok {
				s = s.Union(prev.Set())
			}
			result[writerKey] = fieldpath.NewVersionedSet(s, k.apiVersion, false)
			stamped = true
		}
	}
	updates := 0
	for _, vs := range result {
		if !vs.Applied() {
			updates++
		}
	}
	if updates > maxUpdateManagers {
		om.SetManagedFields(sent)
		return nil, false // apimachinery merges the oldest
	}
	out, ok := k.encode(entries, decoded, result, writer, writerKey, manager, stamped)
	if !ok {
		om.SetManagedFields(sent)
		return nil, false
	}
	om.SetManagedFields(out)
	return obj, true
}

// checkEntries reports whether every entry is one this road takes, and the
// index of the writer's (-1: none).
func (k *keptEntriesUpdate) checkEntries(entries []metav1.ManagedFieldsEntry, manager string) (writer int, ok bool) {
	writer = -1
	for i := range entries {
		e := &entries[i]
		if e.Operation != metav1.ManagedFieldsOperationUpdate && e.Operation != metav1.ManagedFieldsOperationApply ||
			fieldpath.APIVersion(e.APIVersion) != k.apiVersion || e.FieldsType != "FieldsV1" ||
			!utf8.ValidString(e.Manager) || !utf8.ValidString(e.Subresource) {
			return -1, false
		}
		// An Apply entry's identifier leaves its apiVersion out, and all
		// are the kind's here.
		for j := range i {
			if entries[j].Manager == e.Manager && entries[j].Operation == e.Operation && entries[j].Subresource == e.Subresource {
				return -1, false
			}
		}
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Manager == manager && e.Subresource == k.subresource {
			writer = i
		}
	}
	return writer, true
}

// compare updates the managers' sets (reconciled) by the comparison of
// the pruned objects; ok is false when they cannot be pruned, do not validate, or its
// validation panics (the full field manager then fails or panics as
// before).
func (k *keptEntriesUpdate) compare(live, obj runtime.Object, managers fieldpath.ManagedFields, tc managedfields.TypeConverter) (result fieldpath.ManagedFields, ok bool) {
	copies := k.copies.Get().(*pruneCopies)
	defer func() {
		if recover() != nil {
			result, ok = nil, false
		}
		copies.clear()
		k.copies.Put(copies)
	}()
	prunedLive, prunedObj, ok := k.p.pruneInto(live, obj, copies)
	if !ok {
		return nil, false
	}
	objTyped, err := tc.ObjectToTyped(prunedObj, typed.AllowDuplicates)
	if err != nil {
		return nil, false
	}
	liveTyped, err := tc.ObjectToTyped(prunedLive, typed.AllowDuplicates)
	if err != nil {
		return nil, false
	}
	comparison, err := liveTyped.Compare(objTyped)
	if err != nil {
		return nil, false
	}
	k.updateSets(managers, comparison.FilterFields(k.reset))
	return managers, true
}

// updateSets is what structured-merge-diff's Updater.Update does to the
// managers' sets, all of the kind's version and reconciled, for an update
// whose comparison (without the reset fields) is c: every manager loses
// the fields the update changed, added or removed, and is dropped if it
// owns nothing more; the update's own fields (those it changed or added)
// go under currentOperation, unless there are none.
func (k *keptEntriesUpdate) updateSets(managers fieldpath.ManagedFields, c *typed.Comparison) {
	changed := c.Modified.Union(c.Added)
	for name, vs := range managers {
		s := vs.Set()
		if taken := s.Intersection(changed); !taken.Empty() {
			s = s.Difference(taken)
		}
		if !c.Removed.Empty() {
			s = s.Difference(c.Removed)
		}
		switch {
		case s.Empty():
			delete(managers, name)
		case s != vs.Set():
			managers[name] = fieldpath.NewVersionedSet(s, vs.APIVersion(), vs.Applied())
		}
	}
	// FilterFields filtered c in place, so the writer's fields are without
	// the reset fields too (as Updater.Update finds them).
	if !changed.Empty() {
		managers[currentOperation] = fieldpath.NewVersionedSet(changed, k.apiVersion, false)
	}
}

// encode renders updateSets' result as managed fields entries in
// apimachinery's order.
func (k *keptEntriesUpdate) encode(entries []metav1.ManagedFieldsEntry, decoded []decodedFields, result fieldpath.ManagedFields,
	writer int, writerKey, manager string, stamped bool) ([]metav1.ManagedFieldsEntry, bool) {
	if len(result) == 0 {
		return nil, true
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(result))
	for key, vs := range result {
		var e metav1.ManagedFieldsEntry
		i := writer
		if key != writerKey {
			var err error
			if i, err = strconv.Atoi(key); err != nil || i < 0 || i >= len(entries) {
				return nil, false
			}
		}
		if i >= 0 {
			src := &entries[i]
			e = metav1.ManagedFieldsEntry{Manager: src.Manager, Operation: src.Operation, APIVersion: src.APIVersion,
				Time: src.Time, FieldsType: "FieldsV1", Subresource: src.Subresource}
		} else {
			e = metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: string(k.apiVersion), FieldsType: "FieldsV1", Subresource: k.subresource}
		}
		if key == writerKey && stamped {
			e.Time = &metav1.Time{Time: k.now().UTC()}
		}
		if i >= 0 && decoded[i].canonical && entries[i].FieldsV1 != nil && (vs.Set() == decoded[i].set || vs.Set().Equals(decoded[i].set)) {
			e.FieldsV1 = &metav1.FieldsV1{Raw: entries[i].FieldsV1.Raw}
		} else {
			raw, err := vs.Set().ToJSON()
			if err != nil {
				return nil, false
			}
			e.FieldsV1 = &metav1.FieldsV1{Raw: raw}
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out, true
}

// emptyFieldsV1 is what apimachinery decodes an entry without FieldsV1 as.
var emptyFieldsV1 = []byte("{}")

// decoded is the set of f, kept when f is small enough (the kept sets
// dropped when their bytes would pass maxKeptSetBytes); ok is false when it
// does not decode.
func (k *keptEntriesUpdate) decoded(f *metav1.FieldsV1) (decodedFields, bool) {
	raw := emptyFieldsV1
	if f != nil {
		raw = f.Raw
	}
	k.mu.RLock()
	d, ok := k.sets[string(raw)]
	k.mu.RUnlock()
	if ok {
		return d, d.set != nil
	}
	d = k.decode(raw)
	if len(raw) <= maxKeptSetLen {
		k.mu.Lock()
		if _, dup := k.sets[string(raw)]; !dup {
			if k.setBytes+len(raw) > maxKeptSetBytes {
				// Full (a pod's kubelet entry is its own: its podIPs):
				// start over, so that the entries every write meets (a
				// template's creator, the nodes' kubelet) are kept again.
				k.sets, k.setBytes = map[string]decodedFields{}, 0
			}
			k.sets[string(raw)] = d
			k.setBytes += len(raw)
		}
		k.mu.Unlock()
	}
	return d, d.set != nil
}

// decode decodes raw as apimachinery does (FieldsToSet) and reconciles
// the set with the kind's schema; the set is nil when either fails.
func (k *keptEntriesUpdate) decode(raw []byte) decodedFields {
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return decodedFields{}
	}
	again, err := s.ToJSON()
	d := decodedFields{set: s, canonical: err == nil && bytes.Equal(again, raw), reconciled: s}
	// Reconciling reads only the schema and the set (not the object).
	reconciled, err := typed.ReconcileFieldSetWithSchema(s, k.empty)
	if err != nil {
		return decodedFields{}
	}
	if reconciled != nil {
		d.reconciled = reconciled
	}
	return d
}
