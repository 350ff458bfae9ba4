package etcd3_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// A watch straight from etcd is initialized (for API Priority and
// Fairness) as soon as it starts, as kube-apiserver's etcd3 store says it;
// Stats count the resource's keys.
func TestWatchInitializedAtOnceAndStats(t *testing.T) {
	res := storagetest.ConfigMaps()
	s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if err := s.Create(ctx, res.ResourcePrefix+"/ns/"+name, obj, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := s.Stats(ctx); st != (storage.Stats{ObjectCount: 3}) || err != nil {
		t.Errorf("Stats = %+v, %v; want 3 objects, size unknown", st, err)
	}
	calls := 0
	wctx := storage.WithWatchInitialized(ctx, func() { calls++ })
	w, err := s.Watch(wctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if calls != 1 {
		t.Errorf("initialized %d times when Watch returned, want 1", calls)
	}
}
