package fieldmanager

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/registry"
)

// writers are the managers of the kept road's test: several, one without
// a name (recorded as "unknown") and one whose name is not UTF-8.
var writers = []string{"creator", "second", "kubeproof", "", "bad\xffname"}

// An update records exactly what apimachinery's field manager records
// (times aside: the writer's entry is stamped when, and only when, the
// full field manager stamps it), whether it takes the kept road or not,
// on random objects of every served kind, through the main endpoint and
// /status: live objects written by several managers through both
// endpoints, sometimes with an Apply entry, an entry of another version
// or FieldsV1 not in its canonical form, their entries stamped in the
// past in any order; each object then written twice in a row by one
// manager, with a change of some scalars or a blend with another object.
func TestKeptEntriesUpdateMatchesFieldManager(t *testing.T) {
	const perKind = 40
	kept := 0
	for _, res := range registry.All() {
		gvk := res.GroupVersionKind()
		t.Run(gvk.String(), func(t *testing.T) {
			managers := endpointManagers(t, res)
			r := rand.New(rand.NewSource(int64(len(gvk.String())) + 7))
			f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(29), scheme.Codecs).NilChance(0.3).NumElements(0, 2)
			for _, sub := range []string{"", "status"} {
				m, ok := managers[sub]
				if !ok {
					continue
				}
				if m.kept == nil {
					t.Skipf("no kept road for %s", gvk)
				}
				for i := 0; i < perKind; i++ {
					live := res.New()
					f.Fill(live)
					accessor(t, live).SetManagedFields(nil)
					res.Strategy.Default(live)
					created := managers[""].fm.UpdateNoErrors(res.New(), live.DeepCopyObject(), "creator")
					live = stored(created)
					// Earlier writes by other managers, through either
					// endpoint.
					for w := range r.Intn(3) {
						next := live.DeepCopyObject()
						tweakScalars(r, reflect.ValueOf(next).Elem(), 0)
						by := managers[[]string{"", "status"}[r.Intn(2)]]
						if by == nil {
							by = managers[""]
						}
						live = by.fm.UpdateNoErrors(live.DeepCopyObject(), next, writers[1+w])
					}
					mf := accessor(t, live).GetManagedFields()
					if len(mf) > 0 && i%4 == 1 {
						// An applier sharing the creator's fields.
						a := mf[0]
						a.Manager, a.Operation = "applier", metav1.ManagedFieldsOperationApply
						mf = append(mf, a)
					}
					if len(mf) > 0 && i%6 == 2 {
						// An entry of a version the kind does not have.
						o := mf[0]
						o.Manager, o.APIVersion = "old", "example.com/v0"
						mf = append(mf, o)
					}
					if len(mf) > 0 && i%5 == 3 {
						// FieldsV1 with an escaped letter: the same set,
						// but encoding it gives other bytes.
						raw := bytes.Replace(mf[0].FieldsV1.Raw, []byte(`"f:`), []byte(`"\u0066:`), 1)
						mf[0].FieldsV1 = &metav1.FieldsV1{Raw: raw}
					}
					if len(mf) > 0 && i%8 == 6 {
						// An entry recorded before a schema change: the
						// elements of what is now an atomic list, which
						// reconciling with the schema makes one leaf.
						o := mf[0]
						o.Manager = "schema-old"
						o.FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:managedFields":{"i:0":{}}}}`)}
						mf = append(mf, o)
					}
					if len(mf) > 0 && i%7 == 4 {
						// More Update managers than apimachinery keeps
						// apart: it merges the oldest.
						for n := range maxUpdateManagers {
							e := mf[0]
							e.Manager, e.Operation = fmt.Sprintf("many-%d", n), metav1.ManagedFieldsOperationUpdate
							mf = append(mf, e)
						}
					}
					for j, k := range r.Perm(len(mf)) {
						mf[j].Time = &metav1.Time{Time: time.Now().Add(-time.Duration(k+1) * time.Hour).Truncate(time.Second)}
					}
					accessor(t, live).SetManagedFields(mf)

					writer := writers[r.Intn(len(writers))]
					other := res.New()
					f.Fill(other)
					res.Strategy.Default(other)
					for round := range 2 {
						if round == 1 && !utf8.ValidString(writer) {
							// apimachinery records the name with U+FFFD,
							// which is then another manager: the two
							// entries' order is its map's.
							writer = "kubeproof"
						}
						obj := live.DeepCopyObject()
						if r.Intn(2) == 0 {
							tweakScalars(r, reflect.ValueOf(obj).Elem(), 0)
						} else {
							mix(r, reflect.ValueOf(obj).Elem(), reflect.ValueOf(other).Elem(), 0)
							accessor(t, obj).SetManagedFields(accessor(t, live).GetManagedFields())
						}
						switch mf := accessor(t, live).GetManagedFields(); r.Intn(6) {
						case 0, 1, 2:
							accessor(t, obj).SetManagedFields(nil)
						case 3:
							// The client's own managed fields.
							accessor(t, obj).SetManagedFields(mf[min(1, len(mf)):])
						case 4:
							// A reset.
							accessor(t, obj).SetManagedFields([]metav1.ManagedFieldsEntry{})
						}
						if out, _ := panicked(func() runtime.Object {
							out, _ := m.kept.update(live.DeepCopyObject(), obj.DeepCopyObject(), writer, m.tc)
							return out
						}); out != nil {
							kept++
						}
						want, wantPanic := panicked(func() runtime.Object {
							return m.fm.UpdateNoErrors(live.DeepCopyObject(), obj.DeepCopyObject(), writer)
						})
						liveCopy := live.DeepCopyObject()
						got, gotPanic := panicked(func() runtime.Object { return m.Update(live, obj.DeepCopyObject(), writer) })
						if !reflect.DeepEqual(live, liveCopy) {
							t.Fatalf("%s: the update changed the live object", sub)
						}
						if gotPanic || wantPanic {
							if gotPanic != wantPanic {
								t.Fatalf("%s: panicked %v, the full field manager %v", sub, gotPanic, wantPanic)
							}
							break
						}
						if g, w := timeless(t, got), timeless(t, want); !reflect.DeepEqual(g, w) {
							t.Fatalf("%s, round %d by %q: managed fields differ\n got: %v\nwant: %v", sub, round, writer, entryStrings(g), entryStrings(w))
						}
						sameEntryStamps(t, live, got, want)
						live = got
					}
				}
			}
		})
	}
	t.Logf("%d updates took the kept road", kept)
	if kept < 300 {
		t.Errorf("only %d updates took the kept road", kept)
	}
}

// panicked runs an update and returns its result, or whether it panicked
// (structured-merge-diff cannot read some of the fuzzer's contents).
func panicked(update func() runtime.Object) (out runtime.Object, panicked bool) {
	defer func() {
		if recover() != nil {
			out, panicked = nil, true
		}
	}()
	return update(), false
}

// entryStrings renders entries one per line, FieldsV1 as text.
func entryStrings(es []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range es {
		raw := ""
		if e.FieldsV1 != nil {
			raw = string(e.FieldsV1.Raw)
		}
		out = append(out, fmt.Sprintf("%q %s %s %s %s", e.Manager, e.Operation, e.APIVersion, e.Subresource, raw))
	}
	return out
}

// sameEntryStamps checks that got stamped exactly the entries want
// stamped: each entry's time is live's entry's, or both are new.
func sameEntryStamps(t *testing.T, live, got, want runtime.Object) {
	t.Helper()
	key := func(e metav1.ManagedFieldsEntry) string {
		return fmt.Sprintf("%q/%s/%s/%s", e.Manager, e.Operation, e.APIVersion, e.Subresource)
	}
	before := map[string]*metav1.Time{}
	for _, e := range accessor(t, live).GetManagedFields() {
		before[key(e)] = e.Time
	}
	stamped := func(obj runtime.Object) map[string]bool {
		out := map[string]bool{}
		for _, e := range accessor(t, obj).GetManagedFields() {
			old, ok := before[key(e)]
			out[key(e)] = !ok || !reflect.DeepEqual(old, e.Time)
		}
		return out
	}
	if g, w := stamped(got), stamped(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("stamped entries %v, want %v", g, w)
	}
}

// A kubelet's pods/status writes take the kept road, and the entry the
// write does not change keeps its bytes; a write with an entry of another
// version or two entries of one manager does not.
func TestKeptEntriesRoad(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	live, obj := kubeletStatusWrite(t)
	first, ok := m.kept.update(live, obj.DeepCopy(), "kubeproof", m.tc)
	if !ok {
		t.Fatal("the first status write does not take the kept road")
	}
	creator := live.ManagedFields[0]
	var kept *metav1.ManagedFieldsEntry
	for _, e := range accessor(t, first).GetManagedFields() {
		if e.Manager == creator.Manager {
			kept = &e
		}
	}
	if kept == nil || &kept.FieldsV1.Raw[0] != &creator.FieldsV1.Raw[0] {
		t.Fatalf("the creator's entry was encoded again: %v", kept)
	}
	next := first.(*corev1.Pod).DeepCopy()
	next.ManagedFields = nil
	next.Status.Conditions[0].LastTransitionTime.Time = next.Status.Conditions[0].LastTransitionTime.Add(time.Second)
	if _, ok := m.kept.update(first, next, "kubeproof", m.tc); !ok {
		t.Fatal("the second status write does not take the kept road")
	}

	other := live.DeepCopy()
	e := other.ManagedFields[0]
	e.Manager, e.APIVersion = "old", "v0"
	other.ManagedFields = append(other.ManagedFields, e)
	if _, ok := m.kept.update(other, obj.DeepCopy(), "kubeproof", m.tc); ok {
		t.Error("an entry of another version took the kept road")
	}
	twice := live.DeepCopy()
	twice.ManagedFields = append(twice.ManagedFields, twice.ManagedFields[0])
	if _, ok := m.kept.update(twice, obj.DeepCopy(), "kubeproof", m.tc); ok {
		t.Error("two entries of one manager took the kept road")
	}
}

// Concurrent kept-road updates of one endpoint share its decoded sets
// safely and each records what the full field manager records.
func TestKeptEntriesUpdatesConcurrently(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	live, obj := kubeletStatusWrite(t)
	want := timeless(t, m.fm.UpdateNoErrors(live.DeepCopy(), obj.DeepCopy(), "kubeproof"))
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, ok := m.kept.update(live, obj.DeepCopy(), "kubeproof", m.tc)
				if !ok {
					errs <- "the write did not take the kept road"
					return
				}
				if g := timeless(t, got); !reflect.DeepEqual(g, want) {
					errs <- fmt.Sprintf("got %v, want %v", entryStrings(g), entryStrings(want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// A kubelet's node heartbeat (its nodes/status write every 10 s) takes the
// kept road and records what the full field manager records.
func TestNodeHeartbeatTakesKeptRoad(t *testing.T) {
	kind := corev1.SchemeGroupVersion.WithKind("Node")
	main, st := managerFor(t, kind, "", "status"), managerFor(t, kind, "status", "spec")
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	live, status := kubeletNode(t, main, t0)
	for i := range 3 {
		obj := live.DeepCopy()
		obj.Status = status(&live.Status, t0.Add(time.Duration(i)*10*time.Second))
		want := st.fm.UpdateNoErrors(live.DeepCopy(), obj.DeepCopy(), "kubeproof-kubelet")
		got, ok := st.kept.update(live, obj.DeepCopy(), "kubeproof-kubelet", st.tc)
		if !ok {
			t.Fatalf("write %d did not take the kept road", i)
		}
		if g, w := timeless(t, got), timeless(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("write %d: got %v, want %v", i, entryStrings(g), entryStrings(w))
		}
		live = got.(*corev1.Node)
	}
}

// The kept sets start over when full: the newest is kept, and an entry
// met again after that is decoded and kept again.
func TestKeptSetsStartOverWhenFull(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	first := &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}
	if _, ok := m.kept.decoded(first); !ok {
		t.Fatal("no set")
	}
	name := bytes.Repeat([]byte("x"), maxKeptSetLen-20)
	for i := 0; i <= maxKeptSetBytes/len(name)+1; i++ {
		raw := fmt.Appendf(nil, `{"f:%d%s":{}}`, i, name)
		if _, ok := m.kept.decoded(&metav1.FieldsV1{Raw: raw}); !ok {
			t.Fatalf("%d: no set", i)
		}
		if _, kept := m.kept.sets[string(raw)]; !kept {
			t.Fatalf("%d: the newest set is not kept", i)
		}
		if _, kept := m.kept.sets[string(first.Raw)]; !kept {
			if len(m.kept.sets) != 1 {
				t.Fatalf("%d: the first set went, but %d others are kept", i, len(m.kept.sets)-1)
			}
			d, _ := m.kept.decoded(first)
			if _, kept := m.kept.sets[string(first.Raw)]; !kept || d.set == nil || !d.canonical {
				t.Fatal("the first set is not kept again")
			}
			return
		}
		if m.kept.setBytes > maxKeptSetBytes {
			t.Fatalf("%d: %d bytes kept", i, m.kept.setBytes)
		}
	}
	t.Fatal("the kept sets never started over")
}
