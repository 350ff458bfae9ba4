package cacher_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
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
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3/etcd3test"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// The bug the linearizability checker found
// (TestEtcdCluster/leader-partition): after the cache's etcd watch broke
// (an etcd leader partition), the cache relisted and re-created its etcd
// watch while readers of other resources asked etcd for progress. etcd
// handed the new watch a progress notification generated before it existed,
// at a revision whose events had not come yet; the cache took it as its
// revision and a watch resumed from before those events never got them.
// Here the order etcd may choose is made certain (etcd3test.CreatedFirst).
func TestRelistWhileOthersRequestProgress(t *testing.T) {
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
	newStore := func(res storage.ResourceConfig) *etcd3.Store {
		s, err := etcd3.New(etcd3.Config{Client: client, Prefix: "/cacher-progress-test", Resource: res, BookmarkInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pods := storagetest.Pods()
	podStore := newStore(pods)
	defer podStore.Close()
	res := storagetest.ConfigMaps()
	cmStore := newStore(res)
	defer cmStore.Close()

	// Another resource's watch, established (it has delivered an event).
	podWatch, err := podStore.Watch(ctx, pods.ResourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: everything(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer podWatch.Stop()
	if err := podStore.Create(ctx, pods.ResourcePrefix+"/ns/p", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	for e := range podWatch.ResultChan() {
		if e.Type == watch.Added {
			break
		}
	}

	up := &breakableStore{Store: cmStore}
	c, err := cacher.New(cacher.Config{Store: up, Resource: res, TooLargeResourceVersionWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: everything(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer before.Stop()

	// The cache's etcd watch breaks. Between its relist and its new etcd
	// watch, configmaps change and the pod watch's progress is requested;
	// the new etcd watch's events wait until the test has a watch on the
	// cache from before the changes.
	var revs []int64
	hookDone := make(chan struct{})
	gate := make(chan struct{})
	up.mu.Lock()
	up.gate = gate
	up.beforeWatch = func() {
		defer close(hookDone)
		for i := range 3 {
			out := &corev1.ConfigMap{}
			name := fmt.Sprintf("c%d", i)
			if err := cmStore.Create(ctx, res.ResourcePrefix+"/ns/"+name, cm(name, nil, "x"), out); err != nil {
				t.Error(err)
				return
			}
			rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
			revs = append(revs, rv)
		}
		reorder.Arm()
		if err := podStore.RequestWatchProgress(ctx); err != nil {
			t.Error(err)
		}
	}
	up.mu.Unlock()
	up.breakAll()
	for range before.ResultChan() {
	}
	select {
	case <-hookDone:
	case <-ctx.Done():
		t.Fatal("the cache did not relist")
	}
	if len(revs) != 3 {
		t.Fatal("writing the configmaps failed")
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	resumed, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true,
		ResourceVersion: strconv.FormatInt(revs[0]-1, 10), Predicate: everything(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Stop()
	close(gate)

	// The resumed watch gets the three changes, and no bookmark claims a
	// revision before them.
	for seen := 0; seen < len(revs); {
		var e watch.Event
		select {
		case e = <-resumed.ResultChan():
		case <-ctx.Done():
			t.Fatalf("resumed watch: %d of %d events", seen, len(revs))
		}
		m, err := meta.Accessor(e.Object)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
		switch {
		case e.Type == watch.Bookmark && rv >= revs[seen]:
			t.Fatalf("BOOKMARK at %d before the ADDED at %d (received %d of %d)", rv, revs[seen], seen, len(revs))
		case e.Type == watch.Bookmark:
		case e.Type == watch.Added && rv == revs[seen]:
			seen++
		default:
			t.Fatalf("got %s %s at %d, want ADDED c%d at %d", e.Type, m.GetName(), rv, seen, revs[seen])
		}
	}
	// And a NotOlderThan list at the last of them has all three.
	l := &corev1.ConfigMapList{}
	if err := c.GetList(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatInt(revs[2], 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Predicate: everything(false)}, l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 3 {
		t.Fatalf("NotOlderThan %d lists %d objects, want 3", revs[2], len(l.Items))
	}
}

// scriptedStore answers the cache's first etcd watch with scripted events
// (given the revision the watch starts after) instead of etcd's; later
// watches are etcd's.
type scriptedStore struct {
	*etcd3.Store
	script  func(after int64) []watch.Event
	mu      sync.Mutex
	watches int
}

func (s *scriptedStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	s.watches++
	first := s.watches == 1
	s.mu.Unlock()
	if !first {
		return s.Store.Watch(ctx, key, opts)
	}
	after, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, err
	}
	fw := watch.NewFakeWithChanSize(8, false)
	for _, e := range s.script(after) {
		fw.Action(e.Type, e.Object)
	}
	go func() {
		// Like etcd's watches, it ends with its context.
		<-ctx.Done()
		fw.Stop()
	}()
	return fw, nil
}

func (s *scriptedStore) watchCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches
}

// Defence in depth: if etcd's watch ever sends an event at or below a
// revision it already confirmed with a progress notification, the cache
// relists instead of keeping a state that skipped events.
func TestEventBelowABookmarkMakesTheCacheRelist(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	es, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	up := &scriptedStore{Store: es, script: func(after int64) []watch.Event {
		ghost := cm("ghost", nil, "x")
		ghost.ResourceVersion = strconv.FormatInt(after+1, 10)
		mark := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatInt(after+2, 10)}}
		return []watch.Event{{Type: watch.Bookmark, Object: mark}, {Type: watch.Added, Object: ghost}}
	}}
	c, err := cacher.New(cacher.Config{Store: up, Resource: res, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for up.watchCount() < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the cache kept the event that came after a bookmark above it instead of relisting")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	l := &corev1.ConfigMapList{}
	if err := c.GetList(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: everything(false)}, l); err != nil {
		t.Fatal(err)
	}
	for _, item := range l.Items {
		if item.Name == "ghost" {
			t.Fatal("after relisting, the cache still lists the object of the out-of-order event")
		}
	}
}
