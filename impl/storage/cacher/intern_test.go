package cacher

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	if a.ManagedFields[0].FieldsV1 != b.ManagedFields[0].FieldsV1 {
		t.Error("equal FieldsV1 of a and b are not one shared value")
	}
	// An append to one object's bytes does not reach the other's.
	_ = append(a.ManagedFields[0].FieldsV1.Raw, 'x')
	if string(b.ManagedFields[0].FieldsV1.Raw) != `{"f:spec":{}}` {
		t.Errorf("append through a changed b: %q", b.ManagedFields[0].FieldsV1.Raw)
	}

	for i := range 2 * maxInterned {
		in.managedFields(podWithManagedFields("p", fmt.Sprint("m", i), fmt.Sprint(i)))
	}
	if len(in.bytes) > maxInterned || len(in.fields) > maxInterned || len(in.strings) > maxInterned {
		t.Errorf("tables grew to %d bytes, %d fields and %d strings entries, bound %d", len(in.bytes), len(in.fields), len(in.strings), maxInterned)
	}
}

// decodedPod is a pod as etcd's decoding makes it: every value allocated
// anew, equal to the other pods' of its workload.
func decodedPod(t *testing.T, name, uid, node string) *corev1.Pod {
	t.Helper()
	grace := int64(30)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), ResourceVersion: "7",
			Labels: map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", Time: &metav1.Time{Time: time.Unix(1700000000, 0)}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: time.Unix(1700000000, 0)}},
	}
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.Pod{}
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// Cached pods share their repeated values with each other and a new
// version of a pod shares its UID and name with the version it replaces;
// nothing of any pod changes.
func TestInternerSharesPodValues(t *testing.T) {
	in := newInterner()
	a := decodedPod(t, "a", "uid-a", "node-1")
	b := decodedPod(t, "b", "uid-b", "node-1")
	a2 := decodedPod(t, "a", "uid-a", "node-1")
	want := []*corev1.Pod{a.DeepCopy(), b.DeepCopy(), a2.DeepCopy()}
	in.object(a, nil)
	in.object(b, nil)
	in.object(a2, a)
	for i, p := range []*corev1.Pod{a, b, a2} {
		if !apiequality.Semantic.DeepEqual(p, want[i]) {
			t.Errorf("interning changed pod %d: %+v, want %+v", i, p, want[i])
		}
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("equal labels are not shared")
	}
	if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Error("equal tolerations are not shared")
	}
	if a.Spec.TerminationGracePeriodSeconds != b.Spec.TerminationGracePeriodSeconds || a.Status.StartTime != b.Status.StartTime {
		t.Error("equal pointers to values are not shared")
	}
	if a.ManagedFields[0].Time != b.ManagedFields[0].Time {
		t.Error("equal managedFields times are not shared")
	}
	if !sameString(a.Spec.NodeName, b.Spec.NodeName) || !sameString(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image) {
		t.Error("equal strings are not shared")
	}
	if !sameString(string(a2.UID), string(a.UID)) || !sameString(a2.Name, a.Name) {
		t.Error("a new version does not share the UID and name of the one it replaces")
	}
	if sameString(a.Name, b.Name) {
		t.Error("pods of different names share one")
	}
}

// Only pods get more than managedFields shared: the interner leaves other
// kinds' values their own.
func TestInternerLeavesOtherKinds(t *testing.T) {
	in := newInterner()
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "web"}}}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"app": "web"}}}
	in.object(a, nil)
	in.object(b, a)
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("a ConfigMap's labels were shared")
	}
}
