package endpoints

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// inputKeepingStore fails an update whose tryUpdate changed the object it
// was given (storage.UpdateFunc must not).
type inputKeepingStore struct {
	*memStore
	t *testing.T
}

func (s inputKeepingStore) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, try storage.UpdateFunc) error {
	return s.memStore.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, func(in runtime.Object) (runtime.Object, error) {
		before := in.DeepCopyObject()
		out, err := try(in)
		if !reflect.DeepEqual(in, before) {
			s.t.Errorf("tryUpdate changed its input:\n got: %v\nwant: %v", in, before)
		}
		return out, err
	})
}

// A binding sets the node, its annotations and PodScheduled on the stored
// pod, and leaves the object the store hands it as it was.
func TestBindingLeavesItsInputAlone(t *testing.T) {
	h, mem := servedHandler(t, "pods")
	h.store = inputKeepingStore{memStore: mem, t: t}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: map[string]string{"a": "1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}},
	}
	h.res.Strategy.Default(pod)
	mem.mu.Lock()
	mem.put("/pods/ns/p", pod)
	mem.mu.Unlock()
	body := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","annotations":{"b":"2"}},"target":{"kind":"Node","name":"node-1"}}`
	if r := do(h, "POST", "/api/v1/namespaces/ns/pods/p/binding", "application/json", body); r.code != 201 {
		t.Fatalf("binding: %d %s", r.code, r.body)
	}
	got := &corev1.Pod{}
	if err := mem.Get(context.Background(), "/pods/ns/p", storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "node-1" || got.Annotations["a"] != "1" || got.Annotations["b"] != "2" {
		t.Fatalf("bound pod: node %q, annotations %v", got.Spec.NodeName, got.Annotations)
	}
	if c := got.Status.Conditions; len(c) != 1 || c[0].Status != corev1.ConditionTrue || c[0].Reason != "" {
		t.Fatalf("bound pod's conditions: %+v", c)
	}
}

// BenchmarkBinding is a scheduler's binding of the startup benchmark's pod
// through the handler, on the in-memory store.
func BenchmarkBinding(b *testing.B) {
	h, mem := servedHandler(b, "pods")
	live, _ := kubeletStatusWrite(b)
	live.Spec.NodeName = ""
	body := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"startup-1"},"target":{"kind":"Node","name":"node-1"}}`
	b.ReportAllocs()
	for b.Loop() {
		mem.mu.Lock()
		mem.put("/pods/default/startup-1", live.DeepCopy())
		mem.mu.Unlock()
		if r := do(h, "POST", "/api/v1/namespaces/default/pods/startup-1/binding", "application/json", body); r.code != 201 {
			b.Fatalf("binding: %d %s", r.code, r.body)
		}
	}
}

// A binding clears status.nominatedNodeName in the same write as
// spec.nodeName, whether the nomination named the bound node or another
// one, as upstream's binding with ClearingNominatedNodeNameAfterBinding
// (beta, on by default since 1.35).
func TestBindingClearsNomination(t *testing.T) {
	for _, nominated := range []string{"node-1", "node-2"} {
		t.Run(nominated, func(t *testing.T) {
			h, mem := servedHandler(t, "pods")
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: nominated},
			}
			h.res.Strategy.Default(pod)
			mem.mu.Lock()
			mem.put("/pods/ns/p", pod)
			mem.mu.Unlock()
			body := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"node-1"}}`
			if r := do(h, "POST", "/api/v1/namespaces/ns/pods/p/binding", "application/json", body); r.code != 201 {
				t.Fatalf("binding: %d %s", r.code, r.body)
			}
			got := &corev1.Pod{}
			if err := mem.Get(context.Background(), "/pods/ns/p", storage.GetOptions{}, got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.NodeName != "node-1" || got.Status.NominatedNodeName != "" {
				t.Fatalf("bound pod: nodeName %q, nominatedNodeName %q, want node-1 and none", got.Spec.NodeName, got.Status.NominatedNodeName)
			}
		})
	}
}

// A binding writes every label of the Binding onto the pod, overwriting
// values already there, in the same write as spec.nodeName, as upstream's
// binding with PodTopologyLabelsAdmission (beta, on by default since
// 1.35): that is how the PodTopologyLabels admission plugin's zone and
// region reach the pod. A Binding without labels leaves the pod's alone.
func TestBindingCopiesLabels(t *testing.T) {
	for _, tt := range []struct {
		name          string
		bindingLabels string
		want          map[string]string
	}{
		{"with labels", `,"labels":{"topology.kubernetes.io/zone":"zone-a","app":"new"}`,
			map[string]string{"app": "new", "tier": "web", "topology.kubernetes.io/zone": "zone-a"}},
		{"without labels", ``, map[string]string{"app": "old", "tier": "web"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, mem := servedHandler(t, "pods")
			h.store = inputKeepingStore{memStore: mem, t: t}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "old", "tier": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodPending},
			}
			h.res.Strategy.Default(pod)
			mem.mu.Lock()
			mem.put("/pods/ns/p", pod)
			mem.mu.Unlock()
			body := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"` + tt.bindingLabels + `},"target":{"kind":"Node","name":"node-1"}}`
			if r := do(h, "POST", "/api/v1/namespaces/ns/pods/p/binding", "application/json", body); r.code != 201 {
				t.Fatalf("binding: %d %s", r.code, r.body)
			}
			got := &corev1.Pod{}
			if err := mem.Get(context.Background(), "/pods/ns/p", storage.GetOptions{}, got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.NodeName != "node-1" || !reflect.DeepEqual(got.Labels, tt.want) {
				t.Fatalf("bound pod: node %q labels %v, want node-1 and %v", got.Spec.NodeName, got.Labels, tt.want)
			}
		})
	}
}
