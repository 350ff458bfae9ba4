package registry

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// A kind that says its selectable fields are metadata.name and
// metadata.namespace alone (the watch cache then reads them from the
// object) has GetAttrs give exactly those and the object's labels; a kind
// with fields of its own does not say so.
func TestObjectMetaFieldsOnly(t *testing.T) {
	for _, res := range All() {
		obj := res.New()
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		m.SetName("a")
		m.SetNamespace("ns")
		m.SetLabels(map[string]string{"app": "web"})
		l, f, err := res.Strategy.GetAttrs(obj)
		if err != nil {
			t.Fatal(err)
		}
		only := maps.Equal(f, storage.ObjectMetaFields("ns", "a"))
		if got := resource.ObjectMetaFieldsOnly(res.Strategy); got != only {
			t.Errorf("%s: ObjectMetaFieldsOnly %v, but GetAttrs' fields are %v", res.GroupVersionKind(), got, f)
		}
		if !maps.Equal(l, m.GetLabels()) {
			t.Errorf("%s: labels %v, want the object's", res.GroupVersionKind(), l)
		}
	}
}
