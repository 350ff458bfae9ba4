package fieldmanager

import (
	"fmt"
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

// The short road of a create records exactly what apimachinery's field
// manager records (time aside), on random objects of every served kind,
// and leaves the object's kind as it found it.
func TestCreateMatchesFieldManager(t *testing.T) {
	const perKind = 100
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(7), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
	for _, res := range registry.All() {
		gvk := res.GroupVersionKind()
		t.Run(gvk.String(), func(t *testing.T) {
			var reset []string
			if res.Status != nil {
				reset = []string{"status"}
			}
			m := managerFor(t, gvk, "", reset...)
			if m.create == nil {
				t.Skip("no short road for this kind")
			}
			taken := 0
			for i := 0; i < perKind; i++ {
				obj := res.New()
				f.Fill(obj)
				acc, _ := meta.Accessor(obj)
				acc.SetManagedFields(nil)
				res.Strategy.Default(obj)
				if i%2 == 0 {
					obj.GetObjectKind().SetGroupVersionKind(gvk)
				} else {
					obj.GetObjectKind().SetGroupVersionKind(gvk.GroupVersion().WithKind(""))
				}
				kindBefore := obj.GetObjectKind().GroupVersionKind()
				want := m.fm.UpdateNoErrors(res.New(), obj.DeepCopyObject(), "creator")
				if !m.create.applies(res.New(), obj, "creator") {
					t.Fatalf("a create without managed fields does not take the short road")
				}
				taken++
				got := m.Update(res.New(), obj, "creator")
				if got != obj {
					t.Fatalf("Update returned another object")
				}
				if k := obj.GetObjectKind().GroupVersionKind(); k != kindBefore {
					t.Fatalf("kind changed from %v to %v", kindBefore, k)
				}
				if g, w := withoutTimes(t, got), withoutTimes(t, want); !reflect.DeepEqual(g, w) {
					t.Fatalf("managed fields differ\n got: %v\nwant: %v", g, w)
				}
			}
			if taken == 0 {
				t.Fatal("no create took the short road")
			}
		})
	}
}

// Writes that are not plain creates take the full field manager: an
// existing live object, client-sent managed fields, a non-UTF-8 manager.
func TestCreatePathOnlyForPlainCreates(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if !m.create.applies(&corev1.ConfigMap{}, obj, "m") {
		t.Fatal("a plain create does not take the short road")
	}
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "u"}}
	withFields := obj.DeepCopy()
	withFields.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
	for name, c := range map[string]struct {
		live, obj runtime.Object
		manager   string
	}{
		"live object":          {live, obj, "m"},
		"client managed field": {&corev1.ConfigMap{}, withFields, "m"},
		"invalid UTF-8":        {&corev1.ConfigMap{}, obj, "m\xff"},
		"other type":           {&corev1.Secret{}, obj, "m"},
	} {
		if m.create.applies(c.live, c.obj, c.manager) {
			t.Errorf("%s: takes the short road", name)
		}
	}
	// An object with nothing but its identity records no manager.
	bare := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	if got := m.Update(&corev1.ConfigMap{}, bare, "m"); len(got.(*corev1.ConfigMap).ManagedFields) != 0 {
		t.Errorf("bare object got managed fields %v", got.(*corev1.ConfigMap).ManagedFields)
	}
	// An empty manager is recorded as "unknown", as upstream does.
	got := m.Update(&corev1.ConfigMap{}, obj.DeepCopy(), "").(*corev1.ConfigMap)
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "unknown" || got.ManagedFields[0].Time == nil {
		t.Errorf("empty manager recorded as %+v", got.ManagedFields)
	}
}

// withoutTimes is obj's managed fields with times checked present and
// then cleared.
func withoutTimes(t *testing.T, obj runtime.Object) []metav1.ManagedFieldsEntry {
	t.Helper()
	acc, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out []metav1.ManagedFieldsEntry
	for _, e := range acc.GetManagedFields() {
		if e.Time == nil {
			t.Fatalf("entry %s has no time", e.Manager)
		}
		e.Time = nil
		out = append(out, e)
	}
	return out
}

// A create's field manager call may share one empty live object between
// creates: it records what Update over a fresh empty object records, on
// the short road and on the full one (client-sent managed fields), and
// leaves the shared object empty.
func TestUpdateCreateSharesTheEmptyObject(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	empty := &corev1.ConfigMap{}
	sent := []metav1.ManagedFieldsEntry{{
		Manager: "sender", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
		Time:     &metav1.Time{},
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)},
	}}
	for _, tc := range []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
	}{
		{"short road", nil},
		{"client-sent managed fields", sent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ManagedFields: tc.managed},
				Data: map[string]string{"k": "v"}}
			want := m.Update(&corev1.ConfigMap{}, obj.DeepCopy(), "creator")
			got := m.UpdateCreate(empty, obj.DeepCopy(), "creator")
			if g, w := withoutTimes(t, got), withoutTimes(t, want); !reflect.DeepEqual(g, w) {
				t.Fatalf("managed fields differ\n got: %v\nwant: %v", g, w)
			}
			if !reflect.DeepEqual(empty, &corev1.ConfigMap{}) {
				t.Fatalf("the shared empty object changed: %+v", empty)
			}
		})
	}
}

// String maps (labels, annotations, a ConfigMap's data) of every size
// record what apimachinery's field manager records, and objects with the
// same keys in any insertion order share one shape.
func TestCreateStringMaps(t *testing.T) {
	m := managerFor(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	for n := range 20 {
		data := map[string]string{}
		labels := map[string]string{}
		for i := range n {
			data[fmt.Sprintf("key-%02d", (i*7)%n)] = fmt.Sprint(i)
			labels[fmt.Sprintf("l%d", n-i)] = ""
		}
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels, Annotations: labels}, Data: data}
		want := m.fm.UpdateNoErrors(&corev1.ConfigMap{}, obj.DeepCopy(), "creator")
		got := m.Update(&corev1.ConfigMap{}, obj.DeepCopy(), "creator")
		if g, w := withoutTimes(t, got), withoutTimes(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%d entries: managed fields differ\n got: %v\nwant: %v", n, g, w)
		}
	}
	shape := func(obj *corev1.ConfigMap) string {
		s, ok := m.create.direct.shape(reflect.ValueOf(obj), nil)
		if !ok {
			t.Fatal("no shape")
		}
		return string(s)
	}
	a := map[string]string{}
	b := map[string]string{}
	for i := range 12 {
		a[fmt.Sprint(i)] = "v"
		b[fmt.Sprint(11-i)] = "v"
	}
	if shape(&corev1.ConfigMap{Data: a}) != shape(&corev1.ConfigMap{Data: b}) {
		t.Fatal("the same keys inserted in another order give another shape")
	}
}
