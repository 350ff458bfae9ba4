package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// viewStore is a memStore that can also hand its objects over without a
// copy, as the watch cache does (cacher.Cacher.View).
type viewStore struct{ *memStore }

func (s viewStore) View(_ context.Context, key string, _ storage.GetOptions, _ func() runtime.Object, view func(runtime.Object)) error {
	s.parent.mu.Lock()
	obj, ok := s.objects[key]
	s.parent.mu.Unlock()
	if !ok {
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	view(obj)
	return nil
}

type viewStores struct{ *memStores }

func (s viewStores) Store(gr schema.GroupResource) (storage.Interface, bool) {
	st, ok := s.stores[gr]
	if !ok {
		return nil, false
	}
	return viewStore{st}, true
}

// TestNodeRestrictionReadsPodsWithoutCopying: the plugin reads a pod (a
// TokenRequest's bound pod, an eviction's) from the watch cache without
// copying it, as upstream's reads its lister's shared object; a missing
// pod is still NotFound.
func TestNodeRestrictionReadsPodsWithoutCopying(t *testing.T) {
	stores := newMemStores(nodeResource, podResource)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if err := stores.add(podResource, pod); err != nil {
		t.Fatal(err)
	}
	v, err := newNodeRestriction(&deps{stores: viewStores{stores}})
	if err != nil {
		t.Fatal(err)
	}
	p := v.(*NodeRestriction)
	ctx := context.Background()
	got, err := p.GetPod(ctx, "ns", "p")
	if err != nil {
		t.Fatal(err)
	}
	key := stores.ObjectKey(podResource, "ns", "p")
	if want := stores.stores[podResource].objects[key]; got != want {
		t.Errorf("GetPod returned a copy (%p), want the store's own object (%p)", got, want)
	}
	if _, err := p.GetPod(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("GetPod of a missing pod: %v, want NotFound", err)
	}
	// A store that cannot view (etcd directly) still reads a copy.
	p2v, err := newNodeRestriction(&deps{stores: stores})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p2v.(*NodeRestriction).GetPod(ctx, "ns", "p"); err != nil || got.UID != "uid-p" {
		t.Errorf("GetPod without a viewer: %v, %v", got, err)
	}
}
