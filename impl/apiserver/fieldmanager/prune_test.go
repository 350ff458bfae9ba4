package fieldmanager

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/registry"
)

// mix sets, field by field along struct fields, the struct a to a blend of
// itself and x: each exported field is kept, taken from x, or (a struct)
// blended further, so that the two objects share some parts and differ in
// others.
func mix(r *rand.Rand, a, x reflect.Value, depth int) {
	for i := range a.NumField() {
		if !a.Type().Field(i).IsExported() {
			continue
		}
		fa, fx := a.Field(i), x.Field(i)
		switch n := r.Intn(4); {
		case n < 2:
		case n == 2 || fa.Kind() != reflect.Struct || depth > 3:
			fa.Set(fx)
		default:
			mix(r, fa, fx, depth+1)
		}
	}
}

// An update whose objects share parts records exactly what apimachinery's
// field manager records on the whole objects (times aside), through the
// main endpoint and /status, on random pairs of every served kind: the
// live object's managed fields from its creation, the new object a blend
// of the live one and another random object, sometimes carrying managed
// fields of its own.
func TestPrunedUpdateMatchesFieldManager(t *testing.T) {
	const perKind = 60
	for _, res := range registry.All() {
		gvk := res.GroupVersionKind()
		t.Run(gvk.String(), func(t *testing.T) {
			managers := endpointManagers(t, res)
			r := rand.New(rand.NewSource(int64(len(gvk.String()))))
			f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(17), scheme.Codecs).NilChance(0.4).NumElements(0, 2)
			for sub, m := range managers {
				if m.prune == nil {
					t.Skipf("no pruning for %s", gvk)
				}
				pruned := 0
				for i := 0; i < perKind; i++ {
					live := res.New()
					f.Fill(live)
					accessor(t, live).SetManagedFields(nil)
					res.Strategy.Default(live)
					if i%4 != 0 {
						// Give it the managed fields of its creation.
						created := managers[""].fm.UpdateNoErrors(res.New(), live.DeepCopyObject(), "creator")
						accessor(t, live).SetManagedFields(accessor(t, created).GetManagedFields())
					}
					if i%5 == 0 {
						// An entry the field manager can read but whose
						// FieldsV1 may not validate.
						odd := oddFields[r.Intn(len(oddFields))]
						accessor(t, live).SetManagedFields(append(accessor(t, live).GetManagedFields(), metav1.ManagedFieldsEntry{
							Manager: "odd", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: gvk.GroupVersion().String(),
							FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(odd)}}))
					}
					accessor(t, live).SetUID("uid-1")
					other := res.New()
					f.Fill(other)
					res.Strategy.Default(other)
					obj := live.DeepCopyObject()
					mix(r, reflect.ValueOf(obj).Elem(), reflect.ValueOf(other).Elem(), 0)
					if i%3 == 0 {
						accessor(t, obj).SetManagedFields(nil)
					}
					want, wantPanic := outcome(t, func() runtime.Object {
						return m.fm.UpdateNoErrors(live.DeepCopyObject(), obj.DeepCopyObject(), "updater")
					})
					liveCopy := live.DeepCopyObject()
					got, gotPanic := outcome(t, func() runtime.Object { return m.Update(live, obj.DeepCopyObject(), "updater") })
					if !reflect.DeepEqual(live, liveCopy) {
						t.Fatalf("%s: the update changed the live object", sub)
					}
					if _, ok := outcome(t, func() runtime.Object {
						if _, _, ok := m.prune.prune(live, obj); ok {
							pruned++
						}
						return nil
					}); ok {
						t.Fatalf("%s: pruning panicked", sub)
					}
					if gotPanic != wantPanic || !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: managed fields differ (panic %v, want %v)\n got: %v\nwant: %v", sub, gotPanic, wantPanic, got, want)
					}
				}
				if pruned == 0 {
					t.Errorf("%s: no update was pruned", sub)
				}
			}
		})
	}
}

// FieldsV1 contents, valid and not, for entries of live objects.
var oddFields = []string{`{}`, `{"f:metadata":{"f:labels":{}}}`, `{"f:metadata":{}} x`, `{"f:metadata":{}}}`,
	`{"f:metadata":{"f:labels":{".":{}}},}`, `{"f:metadata":1}`, `{"f:x":[1,2]}`, `{"f:x":1e999}`}

// A kubelet's status write, pruned, records what the full objects record.
func TestPrunedStatusWrite(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	live, obj := kubeletStatusWrite(t)
	if _, _, ok := m.prune.prune(live, obj); !ok {
		t.Fatal("the status write is not pruned")
	}
	want := m.fm.UpdateNoErrors(live.DeepCopy(), obj.DeepCopy(), "kubeproof")
	got := m.Update(live, obj, "kubeproof")
	if g, w := timeless(t, got), timeless(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("managed fields differ\n got: %v\nwant: %v", g, w)
	}
	if len(timeless(t, got)) != 2 {
		t.Fatalf("want the creator's and the kubelet's entries, got %v", timeless(t, got))
	}
}

// zeroEqualFields moves what two structs share to the witness and leaves
// what differs, down plain struct fields only.
func TestZeroEqualFields(t *testing.T) {
	one := int64(1)
	a := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}, ResourceVersion: "1"},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c"}}, ActiveDeadlineSeconds: &one},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, StartTime: &metav1.Time{}},
	}
	b := *a.DeepCopy()
	b.ResourceVersion = "2"
	b.Spec.Containers[0].Image = "i"
	b.Status.Phase = corev1.PodRunning
	var w corev1.Pod
	if !zeroEqualFields(reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem(), reflect.ValueOf(&w).Elem()) {
		t.Fatal("nothing zeroed")
	}
	wantA := corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	wantW := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{NodeName: "n", ActiveDeadlineSeconds: &one}, Status: corev1.PodStatus{StartTime: &metav1.Time{}}}
	if !reflect.DeepEqual(a, wantA) {
		t.Errorf("live side:\n got %+v\nwant %+v", a, wantA)
	}
	if b.ResourceVersion != "2" || b.Name != "" || b.Spec.Containers[0].Image != "i" || b.Status.Phase != corev1.PodRunning {
		t.Errorf("new side: %+v", b)
	}
	if !reflect.DeepEqual(w, wantW) {
		t.Errorf("witness:\n got %+v\nwant %+v", w, wantW)
	}
}

// outcome runs an update and returns the managed fields it recorded
// (without times), or whether it panicked.
func outcome(t *testing.T, update func() runtime.Object) (managed []metav1.ManagedFieldsEntry, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			t.Logf("panic: %v", r)
			managed, panicked = nil, true
		}
	}()
	obj := update()
	if obj == nil {
		return nil, false
	}
	return timeless(t, obj), false
}

// equalValues agrees with reflect.DeepEqual on random objects of every
// served kind and on pairs that share, or almost share, their parts.
func TestEqualValuesIsDeepEqual(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(5), scheme.Codecs).NilChance(0.4).NumElements(0, 2)
	for _, res := range registry.All() {
		for i := 0; i < 40; i++ {
			a, x := res.New(), res.New()
			f.Fill(a)
			f.Fill(x)
			b := a.DeepCopyObject()
			if i%2 == 0 {
				mix(r, reflect.ValueOf(b).Elem(), reflect.ValueOf(x).Elem(), 0)
			}
			av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
			for j := range av.NumField() {
				if got, want := equalValues(av.Field(j), bv.Field(j)), reflect.DeepEqual(av.Field(j).Interface(), bv.Field(j).Interface()); got != want {
					t.Fatalf("%s field %d: equalValues %v, DeepEqual %v", res.GroupVersionKind(), j, got, want)
				}
			}
		}
	}
	nan := math.NaN()
	for _, c := range []struct {
		a, b any
		want bool
	}{
		{[]string{}, []string(nil), false},
		{map[string]string{}, map[string]string(nil), false},
		{nan, nan, false},
		{metav1.Time{}, metav1.Time{}, true},
		{[]int{1, 2}, []int{1, 2}, true},
		{map[string]int{"a": 1}, map[string]int{"b": 1}, false},
	} {
		if got := equalValues(reflect.ValueOf(c.a), reflect.ValueOf(c.b)); got != c.want || got != reflect.DeepEqual(c.a, c.b) {
			t.Errorf("equalValues(%#v, %#v) = %v", c.a, c.b, got)
		}
	}
}

func accessor(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	a, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// timeless is obj's managed fields without their times (nil for none).
func timeless(t *testing.T, obj runtime.Object) []metav1.ManagedFieldsEntry {
	t.Helper()
	var out []metav1.ManagedFieldsEntry
	for _, e := range accessor(t, obj).GetManagedFields() {
		e.Time = nil
		out = append(out, e)
	}
	return out
}

// Concurrent pruned updates of one endpoint share its pruner (and its
// cache of valid entries) safely and each records what the full objects
// record.
func TestPrunedUpdatesConcurrently(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	live, obj := kubeletStatusWrite(t)
	want := timeless(t, m.fm.UpdateNoErrors(live.DeepCopy(), obj.DeepCopy(), "kubeproof"))
	errs := make(chan string, 8)
	for range 4 {
		go func() {
			for range 20 {
				got := m.Update(live, obj.DeepCopy(), "kubeproof")
				if g := timeless(t, got); !reflect.DeepEqual(g, want) {
					errs <- fmt.Sprintf("got %v, want %v", g, want)
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}

// A pruned update's copies are kept with its field manager for the next
// one, zeroed in between: they hold nothing of the update before, and an
// update on them records what the full field manager records.
func TestPrunedCopiesReused(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	pf := m.pruned.Get().(*prunedFieldManager)
	update := func(live, obj *corev1.Pod) runtime.Object {
		pf.conv.live, pf.conv.obj = live, obj
		out := pf.fm.UpdateNoErrors(live, obj, "kubeproof")
		if !pf.conv.ok {
			t.Fatal("the update was not pruned")
		}
		pf.conv.reset()
		c := pf.conv.copies
		if !c.live.IsValid() || !c.live.Elem().IsZero() || !c.obj.Elem().IsZero() || !c.witness.Elem().IsZero() {
			t.Fatal("the copies are not kept, zeroed, after the update")
		}
		return out
	}
	check := func(name string, live, obj *corev1.Pod) runtime.Object {
		want := m.fm.UpdateNoErrors(live.DeepCopy(), obj.DeepCopy(), "kubeproof")
		got := update(live, obj.DeepCopy())
		if g, w := timeless(t, got), timeless(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: managed fields differ\n got: %v\nwant: %v", name, g, w)
		}
		return got
	}
	live, obj := kubeletStatusWrite(t)
	running := check("first status write", live, obj).(*corev1.Pod)
	kept := pf.conv.copies.live.Pointer()
	// The next one, on the same copies: the kubelet now owns fields, and
	// drops a condition and changes the pod IP.
	next := running.DeepCopy()
	next.ManagedFields = nil
	next.Status.Conditions = next.Status.Conditions[:1]
	next.Status.PodIP = "10.0.0.9"
	check("second status write", running, next)
	if pf.conv.copies.live.Pointer() != kept {
		t.Fatal("the second update did not reuse the copies")
	}
}
