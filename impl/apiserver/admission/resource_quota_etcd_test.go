package admission

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// etcdStores is a StoreGetter of etcd3 stores on an embedded etcd.
type etcdStores map[schema.GroupResource]storage.Interface

func (s etcdStores) Store(gr schema.GroupResource) (storage.Interface, bool) {
	st, ok := s[gr]
	return st, ok
}

func (etcdStores) ObjectKey(gr schema.GroupResource, namespace, name string) string {
	if namespace == "" {
		return "/" + gr.Resource + "/" + name
	}
	return "/" + gr.Resource + "/" + namespace + "/" + name
}

func (etcdStores) ListKey(gr schema.GroupResource, namespace string) string {
	if namespace == "" {
		return "/" + gr.Resource + "/"
	}
	return "/" + gr.Resource + "/" + namespace + "/"
}

func startEtcdStores(t *testing.T) etcdStores {
	t.Helper()
	if testing.Short() {
		t.Skip("embedded etcd: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	etcd, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	stores := etcdStores{}
	for gr, types := range map[schema.GroupResource][2]func() runtime.Object{
		quotaResource:                 {func() runtime.Object { return &corev1.ResourceQuota{} }, func() runtime.Object { return &corev1.ResourceQuotaList{} }},
		podResource:                   {func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }},
		corev1.Resource("configmaps"): {func() runtime.Object { return &corev1.ConfigMap{} }, func() runtime.Object { return &corev1.ConfigMapList{} }},
	} {
		st, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: storage.ResourceConfig{
			GroupResource: gr, StorageVersion: corev1.SchemeGroupVersion, ResourcePrefix: "/" + gr.Resource,
			NewFunc: types[0], NewListFunc: types[1], Namespaced: true,
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		stores[gr] = st
	}
	return stores
}

// TestResourceQuotaConcurrentCreates: 64 creates race for a quota of 10
// pods against real etcd; exactly 10 are admitted and status.used says 10.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	stores := startEtcdStores(t)
	ctx := context.Background()
	_, validators, _, err := NewPlugins([]string{"ResourceQuota"}, stores)
	if err != nil {
		t.Fatal(err)
	}
	// One pod existed before the quota, and the quota controller counted
	// it: admission starts from that status.
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: "ns"},
		Spec:   corev1.ResourceQuotaSpec{Hard: rl("pods", "10", "requests.cpu", "100")},
		Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "10", "requests.cpu", "100"), Used: rl("pods", "1", "requests.cpu", "1")}}
	if err := stores[quotaResource].Create(ctx, "/resourcequotas/ns/pods", q, nil); err != nil {
		t.Fatal(err)
	}
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			pod := newPod("p", container("c", rl("cpu", "1"), nil))
			pod.Name = "p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			err := validators[0].Validate(ctx, podCreate(pod))
			switch {
			case err == nil:
				admitted.Add(1)
			case apierrors.IsForbidden(err):
				refused.Add(1)
			default:
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 9 || refused.Load() != 55 {
		t.Fatalf("admitted %d refused %d, want 9 and 55 (quota 10, one existing pod)", admitted.Load(), refused.Load())
	}
	got := &corev1.ResourceQuota{}
	if err := stores[quotaResource].Get(ctx, "/resourcequotas/ns/pods", storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if u := got.Status.Used["pods"]; u.Value() != 10 {
		t.Fatalf("status.used.pods = %s, want 10", u.String())
	}
	if u := got.Status.Used["requests.cpu"]; u.Value() != 10 {
		t.Fatalf("status.used[requests.cpu] = %s, want 10", u.String())
	}
	if h := got.Status.Hard["pods"]; h.Value() != 10 {
		t.Fatalf("status.hard changed: %v", got.Status.Hard)
	}
}
