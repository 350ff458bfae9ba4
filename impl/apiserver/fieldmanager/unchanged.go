package fieldmanager

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KeepTimesIfUnchanged gives obj live's managed fields when the write
// changes nothing else: an apply stamps its entry with the current time
// even when it applies what is already there, and that alone must not be a
// write (re-applying the same configuration leaves resourceVersion alone,
// as in Kubernetes). It reports whether it did.
func KeepTimesIfUnchanged(live, obj runtime.Object) bool {
	lm, err := meta.Accessor(live)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if lm.GetUID() == "" || !sameIgnoringTimes(lm.GetManagedFields(), om.GetManagedFields()) {
		return false
	}
	// Compare everything but managedFields and the type meta (a stored
	// object may come without it).
	managed := om.GetManagedFields()
	lkind, okind := live.GetObjectKind().GroupVersionKind(), obj.GetObjectKind().GroupVersionKind()
	om.SetManagedFields(lm.GetManagedFields())
	obj.GetObjectKind().SetGroupVersionKind(lkind)
	equal := equality.Semantic.DeepEqual(live, obj)
	obj.GetObjectKind().SetGroupVersionKind(okind)
	if !equal {
		om.SetManagedFields(managed)
	}
	return equal
}

func sameIgnoringTimes(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Time, y.Time = nil, nil
		if !equality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
