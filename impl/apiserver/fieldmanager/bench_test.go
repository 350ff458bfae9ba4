package fieldmanager

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
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

// readJSON decodes testdata/name (an object as `kubectl get -o json
// --show-managed-fields` shows it from `kubeproof up`) into obj.
func readJSON(b testing.TB, name string, obj any) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, obj); err != nil {
		b.Fatal(err)
	}
}

// compactFields gives each entry's FieldsV1 the compact form the server
// stores (the testdata files are indented).
func compactFields(b testing.TB, entries []metav1.ManagedFieldsEntry) {
	b.Helper()
	for i := range entries {
		if f := entries[i].FieldsV1; f != nil {
			var c bytes.Buffer
			if err := json.Compact(&c, f.Raw); err != nil {
				b.Fatal(err)
			}
			f.Raw = c.Bytes()
		}
	}
}

// kubeletStatusWrite is the first pods/status write of a simulated
// kubelet: live is the bound pod (Pending, PodScheduled, managed by its
// creator only), obj the Running pod the kubelet sends.
func kubeletStatusWrite(b testing.TB) (live, obj *corev1.Pod) {
	running := &corev1.Pod{}
	readJSON(b, "pod-running.json", running)
	compactFields(b, running.ManagedFields)
	live = running.DeepCopy()
	live.ManagedFields = live.ManagedFields[:1]
	live.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: running.Status.QOSClass,
		Conditions: []corev1.PodCondition{running.Status.Conditions[len(running.Status.Conditions)-1]}}
	obj = running.DeepCopy()
	obj.ManagedFields = nil
	return live, obj
}

// BenchmarkStatusUpdate is the managed-fields work of a kubelet's pods/status
// write (the startup benchmark's pod, from `kubeproof up`): the first one,
// Pending to Running, and a later one changing a condition's time over a
// pod that already records the kubelet as a manager.
func BenchmarkStatusUpdate(b *testing.B) {
	m := managerFor(b, corev1.SchemeGroupVersion.WithKind("Pod"), "status", "spec")
	live, obj := kubeletStatusWrite(b)
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Update(live, obj.DeepCopy(), "kubeproof")
		}
	})
	b.Run("first-unpruned", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.fm.UpdateNoErrors(live, obj.DeepCopy(), "kubeproof")
		}
	})
	running := m.Update(live, obj.DeepCopy(), "kubeproof").(*corev1.Pod)
	next := running.DeepCopy()
	next.ManagedFields = nil
	next.Status.Conditions[2].LastTransitionTime.Time = next.Status.Conditions[2].LastTransitionTime.Add(time.Second)
	b.Run("again", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Update(running, next.DeepCopy(), "kubeproof")
		}
	})
}

// BenchmarkLeaseUpdate is the managed-fields work of a node Lease renewal
// (a PUT of the Lease as read, renewTime changed), its managed fields as
// the server stores them.
func BenchmarkLeaseUpdate(b *testing.B) {
	m := managerFor(b, coordinationv1.SchemeGroupVersion.WithKind("Lease"), "")
	read := &coordinationv1.Lease{}
	readJSON(b, "lease.json", read)
	live := m.fm.UpdateNoErrors(read.DeepCopy(), read.DeepCopy(), "kubeproof").(*coordinationv1.Lease)
	obj := live.DeepCopy()
	obj.Spec.RenewTime.Time = obj.Spec.RenewTime.Add(10 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		m.Update(live, obj.DeepCopy(), "kubeproof")
	}
}

// BenchmarkCreateEventFields is the managed-fields work of creating a
// kubelet's event (testdata/event.json, from `kubeproof up`, less what the
// server sets): the shape kept (the direct road) against structured-merge-
// diff's comparison with the empty event.
func BenchmarkCreateEventFields(b *testing.B) {
	m := managerFor(b, corev1.SchemeGroupVersion.WithKind("Event"), "")
	ev := &corev1.Event{}
	readJSON(b, "event.json", ev)
	ev.ManagedFields, ev.UID, ev.ResourceVersion, ev.CreationTimestamp = nil, "", "", metav1.Time{}
	b.Run("shape", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := m.create.fieldsJSON(ev, m.tc); !ok {
				b.Fatal("no fields")
			}
		}
	})
	b.Run("structured-merge-diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := m.create.toJSON(m.create.compared(ev, m.tc)); !ok {
				b.Fatal("no fields")
			}
		}
	})
}
