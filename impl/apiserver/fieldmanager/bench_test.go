package fieldmanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchPod is a typical scheduled pod of a Deployment.
func benchPod() *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "nginx", Image: "nginx:1.25",
			Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
			Env:       []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}
	p.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return p
}

// BenchmarkObjectToTyped is reading a Pod into structured-merge-diff and
// taking its field set, which every tracked write does twice. (Going
// through the unstructured form instead measured ~10% slower.)
func BenchmarkObjectToTyped(b *testing.B) {
	tc := TypeConverterFor(served(b, corev1.SchemeGroupVersion.WithKind("Pod")))
	p := benchPod()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tv, err := tc.ObjectToTyped(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tv.ToFieldSet(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate is the managed-fields work of one tracked write of a Pod
// (a label change).
func BenchmarkUpdate(b *testing.B) {
	m := managerFor(b, corev1.SchemeGroupVersion.WithKind("Pod"), "", "status")
	live := benchPod()
	live.UID = "uid"
	live.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "creator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		obj := live.DeepCopy()
		obj.Labels["n"] = "x"
		m.Update(live, obj, "bench")
	}
}

// BenchmarkCreateFields is the managed-fields work of creating the write
// benchmark's 1 KiB ConfigMap (its FieldsV1 form): the shape kept, the
// direct road, and structured-merge-diff's conversion, validation and
// comparison with the empty object.
func BenchmarkCreateFields(b *testing.B) {
	m := managerFor(b, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "share-1", Namespace: "default"},
		Data: map[string]string{"payload": string(make([]byte, 1024))}}
	b.Run("shape", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := m.create.fieldsJSON(cm, m.tc); !ok {
				b.Fatal("no fields")
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := m.create.toJSON(m.create.fieldsOf(cm, m.tc)); !ok {
				b.Fatal("no fields")
			}
		}
	})
	b.Run("structured-merge-diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := m.create.toJSON(m.create.compared(cm, m.tc)); !ok {
				b.Fatal("no fields")
			}
		}
	})
}
