package resourcequota_test

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

// TestRecountFromAStaleCacheKeepsAdmittedCharges is issue 8's recount
// race without timing luck: the controller's informers are stopped after
// its first recount, so its cache holds no pod while admission charges
// two creates to the quota. A recount then must not write used below
// what admission charged on the word of a cache that has not seen those
// pods (before the fix it wrote pods=0, and a third create was admitted),
// and it must still give back a pod deleted since, which that cache
// cannot see either.
func TestRecountFromAStaleCacheKeepsAdmittedCharges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	// The controller speaks protobuf, as the controller manager's client.
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON
	ctrlClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "stale-cache"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	quotas := cs.CoreV1().ResourceQuotas(ns)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("2"), "requests.cpu": resource.MustParse("1"), "count/leases.coordination.k8s.io": resource.MustParse("1"),
	}}}
	if _, err := quotas.Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(ctrlClient, 0)
	ctrl, err := resourcequota.New(ctrlClient, factory, []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("pods"), coordinationv1.SchemeGroupVersion.WithResource("leases"),
	}, resourcequota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	informerCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	factory.Start(informerCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(informerCtx.Done()) {
		if !ok {
			t.Fatalf("the %v informer did not sync", typ)
		}
	}
	const key = ns + "/compute"
	shows := func(when string, want map[corev1.ResourceName]string) {
		t.Helper()
		got, err := quotas.Get(ctx, "compute", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for n, v := range want {
			if u := used(got, n); u != v {
				t.Fatalf("%s: %s used %s, want %s", when, n, u, v)
			}
		}
	}
	if err := resourcequota.SyncOnce(ctx, ctrl, key); err != nil {
		t.Fatal(err)
	}
	shows("the first recount", map[corev1.ResourceName]string{"pods": "0", "requests.cpu": "0", "count/leases.coordination.k8s.io": "0"})

	// The cache stops here: it never sees the pods below.
	stopInformers()
	factory.Shutdown()
	pods := cs.CoreV1().Pods(ns)
	for _, name := range []string{"a", "b"} {
		if _, err := pods.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s within the quota: %v", name, err)
		}
	}
	leases := cs.CoordinationV1().Leases(ns)
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	charged := map[corev1.ResourceName]string{"pods": "2", "requests.cpu": "200m", "count/leases.coordination.k8s.io": "1"}
	shows("admission's charges", charged)
	if err := resourcequota.SyncOnce(ctx, ctrl, key); err != nil {
		t.Fatal(err)
	}
	shows("a recount from a cache without the charged objects", charged)
	if _, err := pods.Create(ctx, testPod("c"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a third pod against pods=2 after the recount: %v, want Forbidden (exceeded quota)", err)
	}
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "m"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a second lease against count/leases=1 after the recount: %v, want Forbidden (exceeded quota)", err)
	}

	// A deleted pod is still given back.
	zero := int64(0)
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod a to be gone", func() (bool, error) {
		_, err := pods.Get(ctx, "a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Errorf("getting pod a: %v", err)
	})
	if err := leases.Delete(ctx, "l", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := resourcequota.SyncOnce(ctx, ctrl, key); err != nil {
		t.Fatal(err)
	}
	shows("a recount after deletes the cache did not see", map[corev1.ResourceName]string{"pods": "1", "requests.cpu": "100m", "count/leases.coordination.k8s.io": "0"})
	if _, err := pods.Create(ctx, testPod("c"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a pod after another was deleted: %v", err)
	}
}
