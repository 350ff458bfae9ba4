package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
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

// gatedStore holds back the cache's own load: its quorum list (read at
// once, answered only when release closes) and its watch (opened only when
// watch closes), so a test can order a store read between them.
type gatedStore struct {
	storage.Interface
	listed         chan struct{} // closed once the load's list has been read
	release, watch chan struct{}
}

func (g *gatedStore) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	if opts.ResourceVersion != "" { // a reader's cached list: not held back
		return g.Interface.GetList(ctx, key, opts, out)
	}
	err := g.Interface.GetList(ctx, key, opts, out)
	close(g.listed)
	<-g.release
	return err
}

func (g *gatedStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	select {
	case <-g.watch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Interface.Watch(ctx, key, opts)
}

// A reader never sees an object go back: an object a store read showed
// while the cache was loading stays visible after the cache has loaded
// from a list taken before the object was written, until the cache's
// watch brings it (a webhook configuration read from the store, then not
// called for the next request).
func TestObjectCacheDoesNotGoBack(t *testing.T) {
	stores := startEtcdStores(t)
	ctx := context.Background()
	st, err := storeFor(stores, quotaResource)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedStore{Interface: st.store, listed: make(chan struct{}), release: make(chan struct{}), watch: make(chan struct{})}
	st.store = g
	c := newObjectCache(st, func() runtime.Object { return &corev1.ResourceQuotaList{} })
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()

	<-g.listed // the cache's state: no quota
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "new"}}
	if err := g.Interface.Create(ctx, st.key("a", "new"), q, nil); err != nil {
		t.Fatal(err)
	}
	if objs, err := c.list(ctx, "a"); err != nil || len(objs) != 1 {
		t.Fatalf("list while the cache loads: %v %v, want the new quota from the store", objs, err)
	}
	close(g.release)
	deadline := time.Now().Add(10 * time.Second)
	for !c.local.Synced() {
		if time.Now().After(deadline) {
			t.Fatal("cache not synced")
		}
		time.Sleep(time.Millisecond)
	}
	if objs, err := c.list(ctx, "a"); err != nil || len(objs) != 1 {
		t.Errorf("list once the cache loaded an older state: %v %v, want the new quota still", objs, err)
	}
	if _, err := c.get(ctx, "a", "new", false, &corev1.ResourceQuota{}); err != nil {
		t.Errorf("get once the cache loaded an older state: %v, want the new quota still", err)
	}
	close(g.watch)
	for {
		if objs, synced := c.local.List("a"); synced && len(objs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache's watch did not bring the new quota")
		}
		time.Sleep(time.Millisecond)
	}
	if objs, err := c.list(ctx, "a"); err != nil || len(objs) != 1 {
		t.Errorf("list once the watch caught up: %v %v", objs, err)
	}
}
