package cacher

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWithManagedFields(name, manager, fields string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: []metav1.ManagedFieldsEntry{{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
	}}}}
}

// Objects with equal managedFields end up sharing the bytes, unchanged;
// different ones keep their own; the tables stay bounded.
func TestInternerSharesEqualManagedFields(t *testing.T) {
	in := newInterner()
	a := podWithManagedFields("a", "kube-controller-manager", `{"f:spec":{}}`)
	b := podWithManagedFields("b", "kube-controller-manager", `{"f:spec":{}}`)
	c := podWithManagedFields("c", "kubectl", `{"f:metadata":{}}`)
	want := []*corev1.Pod{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	for _, p := range []*corev1.Pod{a, b, c} {
		in.managedFields(p)
	}
	for i, p := range []*corev1.Pod{a, b, c} {
		if !reflect.DeepEqual(p, want[i]) {
			t.Errorf("interning changed %s: %+v, want %+v", p.Name, p.ManagedFields, want[i].ManagedFields)
		}
	}
	ra, rb, rc := a.ManagedFields[0].FieldsV1.Raw, b.ManagedFields[0].FieldsV1.Raw, c.ManagedFields[0].FieldsV1.Raw
	if &ra[0] != &rb[0] {
		t.Error("equal FieldsV1 of a and b are not shared")
	}
	if &ra[0] == &rc[0] {
		t.Error("different FieldsV1 of a and c are shared")
	}
	// An append to one object's bytes does not reach the other's.
	_ = append(a.ManagedFields[0].FieldsV1.Raw, 'x')
	if string(b.ManagedFields[0].FieldsV1.Raw) != `{"f:spec":{}}` {
		t.Errorf("append through a changed b: %q", b.ManagedFields[0].FieldsV1.Raw)
	}

	for i := range 2 * maxInterned {
		in.managedFields(podWithManagedFields("p", fmt.Sprint("m", i), fmt.Sprint(i)))
	}
	if len(in.bytes) > maxInterned || len(in.strings) > maxInterned {
		t.Errorf("tables grew to %d bytes and %d strings entries, bound %d", len(in.bytes), len(in.strings), maxInterned)
	}
}
