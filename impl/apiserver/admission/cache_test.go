package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestObjectCacheFollowsTheStore(t *testing.T) {
	stores := startEtcdStores(t)
	ctx := context.Background()
	st, err := storeFor(stores, quotaResource)
	if err != nil {
		t.Fatal(err)
	}
	quota := func(ns, name string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	if err := st.store.Create(ctx, st.key("a", "before"), quota("a", "before"), nil); err != nil {
		t.Fatal(err)
	}
	c := newObjectCache(st, func() runtime.Object { return &corev1.ResourceQuotaList{} })

	// Before it runs, reads go to the store.
	if objs, err := c.list(ctx, "a"); err != nil || len(objs) != 1 {
		t.Fatalf("unsynced list: %v %v", objs, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()

	names := func(ns string) map[string]bool {
		objs, err := c.list(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, q := range typed[corev1.ResourceQuota](objs) {
			out[q.Namespace+"/"+q.Name] = true
		}
		return out
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out: %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("synced", c.local.Synced)
	if err := st.store.Create(ctx, st.key("b", "after"), quota("b", "after"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor("new object listed", func() bool { return names("b")["b/after"] })
	if all := names(""); !all["a/before"] || !all["b/after"] || len(all) != 2 {
		t.Fatalf("all namespaces: %v", all)
	}
	if _, err := c.get(ctx, "a", "missing", false, &corev1.ResourceQuota{}); !apierrors.IsNotFound(err) {
		t.Fatalf("missing object: %v", err)
	}
	if err := st.store.Delete(ctx, st.key("a", "before"), &corev1.ResourceQuota{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("deleted object gone", func() bool { return !names("a")["a/before"] })
	// A fresh read bypasses the cache.
	if objs, err := c.listFresh(ctx, "b"); err != nil || len(objs) != 1 {
		t.Fatalf("fresh list: %v %v", objs, err)
	}
}
