package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceLifecycleNamespaceWrites: a write to a Namespace is
// admitted in the namespace it names (as kube-apiserver's handlers give
// it), and NamespaceLifecycle allows every one, as upstream's plugin
// allows every operation on a Namespace but the delete of an immortal
// one: the create of a namespace that does not exist yet, its updates,
// status and finalize even while it is terminating, its delete. Nothing
// is looked up.
func TestNamespaceLifecycleNamespaceWrites(t *testing.T) {
	now := metav1.Now()
	gone := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	p, fresh := lifecycle(gone)
	looked := 0
	get := p.Get
	p.Get = func(ctx context.Context, name string, isFresh bool) (*corev1.Namespace, error) {
		looked++
		return get(ctx, name, isFresh)
	}
	nsRes := corev1.SchemeGroupVersion.WithResource("namespaces")
	for _, a := range []*Attributes{
		{Operation: Create, Resource: nsRes, Namespace: "new", Name: "new", Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new"}}},
		{Operation: Update, Resource: nsRes, Namespace: "gone", Name: "gone", Object: gone.DeepCopy(), OldObject: gone},
		{Operation: Update, Resource: nsRes, Subresource: "status", Namespace: "gone", Name: "gone", Object: gone.DeepCopy(), OldObject: gone},
		{Operation: Update, Resource: nsRes, Subresource: "finalize", Namespace: "gone", Name: "gone", Object: gone.DeepCopy(), OldObject: gone},
		{Operation: Update, Resource: nsRes, Namespace: "missing", Name: "missing", Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}},
		{Operation: Delete, Resource: nsRes, Namespace: "gone", Name: "gone", OldObject: gone},
	} {
		if err := p.Admit(context.Background(), a); err != nil {
			t.Errorf("%s namespaces/%s %s: %v", a.Operation, a.Subresource, a.Name, err)
		}
	}
	if looked != 0 || *fresh != 0 {
		t.Errorf("namespaces looked up %d times (%d fresh), want none", looked, *fresh)
	}
}
