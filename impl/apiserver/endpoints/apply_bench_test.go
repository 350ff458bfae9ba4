package endpoints

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// What managed fields cost a write: the same PUT through the handler (on
// the in-memory store, so the numbers are the handler's own work) of an
// object nobody tracks (created before tracking, or by POST today) and of
// one with managed fields; and a server-side apply.
func BenchmarkTrackedWrites(b *testing.B) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "nginx", Image: "nginx:1.25",
			Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
			Env:       []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": strings.Repeat("x", 1024)}}
	kinds := []struct {
		resource, path string
		obj            runtime.Object
		change         func(runtime.Object, int)
	}{
		{"configmaps", "/api/v1/namespaces/ns/configmaps/c", cm, func(o runtime.Object, i int) {
			o.(*corev1.ConfigMap).Data["n"] = fmt.Sprint(i)
		}},
		{"pods", "/api/v1/namespaces/ns/pods/p", pod, func(o runtime.Object, i int) {
			o.(*corev1.Pod).Labels["n"] = fmt.Sprint(i)
		}},
	}
	for _, k := range kinds {
		for _, tracked := range []bool{false, true} {
			b.Run(fmt.Sprintf("PUT %s tracked=%v", k.resource, tracked), func(b *testing.B) {
				h, store := servedHandler(b, k.resource)
				obj := k.obj.DeepCopyObject()
				if tracked {
					accessor(obj).SetManagedFields([]metav1.ManagedFieldsEntry{{
						Manager: "creator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
						FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)},
					}})
				}
				h.res.Strategy.Default(obj)
				accessor(obj).SetUID("uid")
				store.mu.Lock()
				store.put("/"+k.resource+"/ns/"+accessor(obj).GetName(), obj)
				store.mu.Unlock()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					next := obj.DeepCopyObject()
					accessor(next).SetResourceVersion("")
					accessor(next).SetManagedFields(nil)
					k.change(next, i)
					body, _ := json.Marshal(next)
					if r := do(h, "PUT", k.path+"?fieldManager=bench", "application/json", string(body)); r.code != 200 {
						b.Fatalf("PUT: %d %s", r.code, r.body)
					}
				}
			})
		}
	}
	b.Run("PUT pods/status kubelet", func(b *testing.B) {
		h, store := servedHandler(b, "pods")
		live, body := kubeletStatusWrite(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			store.mu.Lock()
			store.put("/pods/default/startup-1", live.DeepCopy())
			store.mu.Unlock()
			if r := do(h, "PUT", "/api/v1/namespaces/default/pods/startup-1/status", "application/json", body); r.code != 200 {
				b.Fatalf("PUT: %d %s", r.code, r.body)
			}
		}
	})
	b.Run("apply deployment", func(b *testing.B) {
		h, _ := servedHandler(b, "deployments")
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if r := do(h, "PATCH", deps+"/web?fieldManager=bench", applyType, webConfig(fmt.Sprint(1+i%2), "nginx")); r.code > 201 {
				b.Fatalf("apply: %d %s", r.code, r.body)
			}
		}
	})
}

// kubeletStatusWrite is a simulated kubelet's first pods/status write (a
// pod of the startup benchmark, from `kubeproof up`): the bound pod as
// stored (Pending, PodScheduled, managed by its creator) and the JSON body
// of the Running pod the kubelet PUTs.
func kubeletStatusWrite(b testing.TB) (*corev1.Pod, string) {
	raw, err := os.ReadFile(filepath.Join("..", "fieldmanager", "testdata", "pod-running.json"))
	if err != nil {
		b.Fatal(err)
	}
	running := &corev1.Pod{}
	if err := json.Unmarshal(raw, running); err != nil {
		b.Fatal(err)
	}
	live := running.DeepCopy()
	live.ManagedFields = live.ManagedFields[:1]
	live.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: running.Status.QOSClass,
		Conditions: []corev1.PodCondition{running.Status.Conditions[len(running.Status.Conditions)-1]}}
	running.ManagedFields, running.ResourceVersion = nil, ""
	body, err := json.Marshal(running)
	if err != nil {
		b.Fatal(err)
	}
	return live, string(body)
}

// BenchmarkTrackCreate is what recording the manager of a POST create costs
// (trackCreate: defaulting plus the managed-fields computation), per kind.
func BenchmarkTrackCreate(b *testing.B) {
	objs := map[string]runtime.Object{
		"configmaps": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": strings.Repeat("x", 1024)}},
		"pods": &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.25"}}}},
	}
	for _, name := range []string{"configmaps", "pods"} {
		b.Run(name, func(b *testing.B) {
			h, _ := servedHandler(b, name)
			r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/"+name+"?fieldManager=bench", nil)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := h.trackCreate(r, objs[name].DeepCopyObject()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
