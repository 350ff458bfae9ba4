package cacher

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/btree"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// wrapCacher is a Cacher with what newCached reads, its objects' fields
// given by attrs.
func wrapCacher(attrs func(*corev1.Pod) fields.Set) *Cacher {
	return &Cacher{
		res: storage.ResourceConfig{ResourcePrefix: "/pods", Namespaced: true},
		getAttrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
			p := obj.(*corev1.Pod)
			return p.Labels, attrs(p), nil
		},
		intern: newInterner(),
		items:  btree.NewG(32, lessKey),
	}
}

// withFields returns n selectable fields of p, metadata.name and
// metadata.namespace first.
func withFields(n int) func(*corev1.Pod) fields.Set {
	return func(p *corev1.Pod) fields.Set {
		set := fields.Set{}
		for i := 0; len(set) < n; i++ {
			switch i {
			case 0:
				set["metadata.name"] = p.Name
			case 1:
				set["metadata.namespace"] = p.Namespace
			default:
				set[fmt.Sprintf("spec.field%02d", i)] = fmt.Sprint(i)
			}
		}
		return set
	}
}

// A cached object is the decoded one, unchanged in value, with its key
// and every selectable field; its name is the end of its key, and a new
// version of the key keeps the key (and so the name) of the one it
// replaces. Field lists of every size, in the wrapper's allocation or not.
func TestNewCachedKeepsValuesAndOneKey(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 11, 16} {
		attrs := withFields(n)
		c := wrapCacher(attrs)
		a := decodedPod(t, "web-0", "uid-a", "node-1")
		want := a.DeepCopy()
		co, err := c.newCached(a)
		if err != nil {
			t.Fatal(err)
		}
		if co.key != "/pods/ns/web-0" || co.obj != runtime.Object(a) {
			t.Fatalf("%d fields: key %q, object %p, want /pods/ns/web-0 and %p", n, co.key, co.obj, a)
		}
		if !apiequality.Semantic.DeepEqual(a, want) {
			t.Errorf("%d fields: wrapping changed the pod: %+v, want %+v", n, a, want)
		}
		if unsafe.StringData(a.Name) != unsafe.StringData(co.key[len(co.key)-len(a.Name):]) {
			t.Errorf("%d fields: the name is a copy of its own, not the end of the key", n)
		}
		set := attrs(want)
		if len(co.fields) != 2*len(set) {
			t.Errorf("%d fields: field list %q", n, co.fields)
		}
		for k, v := range set {
			if !co.fields.Has(k) || co.fields.Get(k) != v {
				t.Errorf("%d fields: field %s = %q (%v), want %q", n, k, co.fields.Get(k), co.fields.Has(k), v)
			}
		}
		c.items.ReplaceOrInsert(co)

		a2 := decodedPod(t, "web-0", "uid-a", "node-2")
		co2, err := c.newCached(a2)
		if err != nil {
			t.Fatal(err)
		}
		if unsafe.StringData(co2.key) != unsafe.StringData(co.key) || unsafe.StringData(a2.Name) != unsafe.StringData(a.Name) {
			t.Errorf("%d fields: a new version has a key or name of its own", n)
		}
		if a2.Name != "web-0" || a2.Spec.NodeName != "node-2" {
			t.Errorf("%d fields: new version %s on %s, want web-0 on node-2", n, a2.Name, a2.Spec.NodeName)
		}
		if co2.fields.Get("metadata.name") != "" && co2.fields.Get("metadata.name") != "web-0" {
			t.Errorf("%d fields: new version's name field %q", n, co2.fields.Get("metadata.name"))
		}
	}
}

// A kind selectable by metadata.name and metadata.namespace alone has its
// labels and those two fields read from the object, as its GetAttrs gives
// them, without the fields map GetAttrs makes.
func TestNewCachedObjectMetaFieldsOnly(t *testing.T) {
	c := wrapCacher(withFields(2))
	c.res.ObjectMetaFieldsOnly = true
	a := decodedPod(t, "web-0", "uid-a", "node-1")
	co, err := c.newCached(a)
	if err != nil {
		t.Fatal(err)
	}
	l, f, err := storage.DefaultAttrs(a)
	if err != nil {
		t.Fatal(err)
	}
	if want := newFieldList(f); !slices.Equal(co.fields, want) || !maps.Equal(co.labels, l) {
		t.Fatalf("fields %q, labels %v, want %q and %v", co.fields, co.labels, want, l)
	}
	if unsafe.StringData(co.fields.Get("metadata.name")) != unsafe.StringData(a.Name) {
		t.Errorf("the name field is a copy of its own, not the object's name")
	}

	// A new key's wrapper: the key, the pod's requests interned and the
	// wrapper with its fields; GetAttrs' fields map would be two or three
	// more, a probe of its own to look the key up among the cached objects
	// one more.
	pods := make([]*corev1.Pod, 100)
	for i := range pods {
		pods[i] = decodedPod(t, fmt.Sprintf("web-%d", i+1), "uid-a", "node-1")
	}
	i := 0
	wrap := func() {
		if _, err := c.newCached(pods[i%len(pods)]); err != nil {
			t.Fatal(err)
		}
		i++
	}
	if n := testing.AllocsPerRun(len(pods)-1, wrap); n > 3 {
		t.Errorf("newCached allocates %v times, want 3", n)
	}
}

// A new version of a key the cache holds is looked up without a key
// string of its own: wrapping it allocates only the wrapper and its
// fields (and what interning the pod keeps), one less than a new key.
func TestNewCachedKnownKeyAllocations(t *testing.T) {
	c := wrapCacher(withFields(2))
	c.res.ObjectMetaFieldsOnly = true
	pods := make([]*corev1.Pod, 100)
	for i := range pods {
		pods[i] = decodedPod(t, fmt.Sprintf("web-%d", i), "uid-a", "node-1")
		co, err := c.newCached(pods[i])
		if err != nil {
			t.Fatal(err)
		}
		c.items.ReplaceOrInsert(co)
	}
	versions := make([]*corev1.Pod, 100)
	for i := range versions {
		versions[i] = decodedPod(t, fmt.Sprintf("web-%d", i), "uid-a", "node-2")
	}
	i := 0
	var last *cachedObject
	wrap := func() {
		co, err := c.newCached(versions[i%len(versions)])
		if err != nil {
			t.Fatal(err)
		}
		last = co
		i++
	}
	if n := testing.AllocsPerRun(len(versions)-1, wrap); n > 2 {
		t.Errorf("newCached of a cached key allocates %v times, want 2", n)
	}
	if held := c.reflectorCached(last.key); held == nil || unsafe.StringData(held.key) != unsafe.StringData(last.key) {
		t.Errorf("a new version of %q does not keep the cached key string", last.key)
	}
	// A new key is a string of its own, not a view of the scratch buffer.
	co, err := c.newCached(decodedPod(t, "new-0", "uid-a", "node-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.newCached(decodedPod(t, "other", "uid-a", "node-1")); err != nil {
		t.Fatal(err)
	}
	if co.key != "/pods/ns/new-0" {
		t.Errorf("a new key reads %q after the next wrap, want /pods/ns/new-0", co.key)
	}
}
