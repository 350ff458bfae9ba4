package etcd3_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3/etcd3test"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// A watch started while progress requests flow for other watches must not
// get a bookmark ahead of its own events. Found by the linearizability
// checker (TestEtcdCluster/leader-partition): after an etcd leader
// partition the watch cache re-created its etcd watch from its relist
// revision while other caches' readers requested progress; etcd sent the
// new watch a progress notification generated before it existed, at a
// revision whose events it had not yet sent, and the cache skipped those
// events (stale NotOlderThan lists, watches missing events).
func TestWatchGetsNoBookmarkAheadOfItsEvents(t *testing.T) {
	defer leakcheck.Check(t)()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reorder := &etcd3test.CreatedFirst{}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   etcd.Endpoints(),
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{reorder.DialOption()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// Two resources, each its own store on the one client, as in the API
	// server. Periodic bookmarks are off: the test asks for progress itself.
	newStore := func(res storage.ResourceConfig) *etcd3.Store {
		s, err := etcd3.New(etcd3.Config{Client: client, Prefix: "/progress-test", Resource: res, BookmarkInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	pods := storagetest.Pods()
	podStore := newStore(pods)
	cms := storagetest.ConfigMaps()
	cmStore := newStore(cms)
	bookmarks := storage.Everything()
	bookmarks.AllowWatchBookmarks = true

	// A watch on pods, established: it has delivered an event.
	podWatch, err := podStore.Watch(ctx, pods.ResourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: bookmarks})
	if err != nil {
		t.Fatal(err)
	}
	defer podWatch.Stop()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if err := podStore.Create(ctx, pods.ResourcePrefix+"/ns/p", pod, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	for e := range podWatch.ResultChan() {
		if e.Type == watch.Added {
			break
		}
	}

	// Changes to configmaps that a configmap watch from before them must
	// deliver.
	var revs []int64
	for i := range 3 {
		out := &corev1.ConfigMap{}
		name := fmt.Sprintf("c%d", i)
		if err := cmStore.Create(ctx, cms.ResourcePrefix+"/ns/"+name,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, out); err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
		revs = append(revs, rv)
	}

	// Progress is requested for the pod watch, then the configmap watch
	// starts from before the changes.
	reorder.Arm()
	if err := podStore.RequestWatchProgress(ctx); err != nil {
		t.Fatal(err)
	}
	cmWatch, err := cmStore.Watch(ctx, cms.ResourcePrefix, storage.ListOptions{
		ResourceVersion: strconv.FormatInt(revs[0]-1, 10), Recursive: true, Predicate: bookmarks})
	if err != nil {
		t.Fatal(err)
	}
	defer cmWatch.Stop()

	// Its events come in order, and no bookmark claims a revision before
	// the events up to it have come.
	next := func() (watch.EventType, string, int64) {
		t.Helper()
		select {
		case e, ok := <-cmWatch.ResultChan():
			if !ok {
				t.Fatal("configmap watch ended")
			}
			m, err := meta.Accessor(e.Object)
			if err != nil {
				t.Fatalf("%s event: %v", e.Type, err)
			}
			rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
			return e.Type, m.GetName(), rv
		case <-ctx.Done():
			t.Fatal("configmap watch: no event")
		}
		return "", "", 0
	}
	for seen := 0; seen < len(revs); {
		typ, name, rv := next()
		switch {
		case typ == watch.Bookmark && rv >= revs[seen]:
			t.Fatalf("BOOKMARK at %d came before the event at %d (events received: %d of %d)", rv, revs[seen], seen, len(revs))
		case typ == watch.Bookmark:
		case typ == watch.Added && rv == revs[seen] && name == fmt.Sprintf("c%d", seen):
			seen++
		default:
			t.Fatalf("got %s %s at %d, want ADDED c%d at %d", typ, name, rv, seen, revs[seen])
		}
	}
	// Bookmarks still work: a progress request now reaches the watch.
	if err := cmStore.RequestWatchProgress(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		typ, name, rv := next()
		if typ != watch.Bookmark {
			t.Fatalf("got %s %s at %d, want a BOOKMARK", typ, name, rv)
		}
		if rv >= revs[len(revs)-1] {
			return
		}
	}
}
