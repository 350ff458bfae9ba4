package cacher

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// With watchers indexed by spec.nodeName, an event is checked against the
// watchers of its node(s) only, not against all of them.
func TestNodeNameIndexLimitsDispatch(t *testing.T) {
	c, res := newPodCacher(t, Config{})
	ctx := context.Background()
	const nodes = 100
	watches := make([]watch.Interface, nodes)
	for i := range nodes {
		w, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0",
			Predicate: storage.SelectionPredicate{GetAttrs: storagetest.PodAttrs,
				Field: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node%d", i))}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches[i] = w
	}
	c.mu.RLock()
	unindexed, indexed := len(c.unindexed), len(c.indexed)
	before := c.considered
	c.mu.RUnlock()
	if unindexed != 0 || indexed != nodes {
		t.Fatalf("%d unindexed watchers and %d index values, want 0 and %d", unindexed, indexed, nodes)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "node7"}}
	if err := c.Create(ctx, res.ResourcePrefix+"/ns/p", pod, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watches[7].ResultChan():
		if ev.Type != watch.Added {
			t.Fatalf("node7 watcher got %v", ev.Type)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("node7 watcher got nothing")
	}
	c.mu.RLock()
	considered := c.considered - before
	c.mu.RUnlock()
	if considered != 1 {
		t.Fatalf("the event was checked against %d watchers, want 1", considered)
	}
}

// A watcher of every pod is offered every pod event, so it may fall
// further behind than a node's watcher before it is closed
// (AllEventsWatcherBufferSize): here neither reads while 50 pods of one
// node are created; the node's watcher (4 slots) is closed, the watcher of
// every pod gets all 50 events.
func TestWatcherOfEveryPodFallsFurtherBehind(t *testing.T) {
	c, res := newPodCacher(t, Config{WatcherBufferSize: 4})
	ctx := context.Background()
	watchPods := func(field fields.Selector) watch.Interface {
		t.Helper()
		w, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0",
			Predicate: storage.SelectionPredicate{GetAttrs: storagetest.PodAttrs, Label: labels.Everything(), Field: field}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	node := watchPods(fields.OneTermEqualSelector("spec.nodeName", "node1"))
	defer node.Stop()
	every := watchPods(fields.Everything())
	defer every.Stop()
	paced := watchPods(fields.Everything()) // read as the pods are created
	defer paced.Stop()
	const n = 50
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, Spec: corev1.PodSpec{NodeName: "node1"}}
		if err := c.Create(ctx, res.ResourcePrefix+"/ns/"+pod.Name, pod, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-paced.ResultChan():
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d did not come", i)
		}
	}
	// The last event's dispatch, under the lock, has offered it to all.
	c.mu.Lock()
	nodeClosed, everyClosed := node.(*cacheWatcher).terminated, every.(*cacheWatcher).terminated
	c.mu.Unlock()
	if !nodeClosed || everyClosed {
		t.Fatalf("node's watcher closed %v, want true; every pod's watcher closed %v, want false", nodeClosed, everyClosed)
	}
	for i := range n {
		select {
		case ev, ok := <-every.ResultChan():
			if !ok || ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != fmt.Sprintf("p%d", i) {
				t.Fatalf("event %d: %v %v (open %v), want ADDED p%d", i, ev.Type, ev.Object, ok, i)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d did not come", i)
		}
	}
}

// newPodCacher starts an embedded etcd and a ready watch cache of pods
// indexed by spec.nodeName, configured by cfg otherwise; the test's end
// stops them.
func newPodCacher(t *testing.T, cfg Config) (*Cacher, storage.ResourceConfig) {
	t.Helper()
	e, err := embedded.Start(context.Background(), embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	res := storagetest.Pods()
	s, err := etcd3.New(etcd3.Config{Client: e.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cfg.Store, cfg.Resource, cfg.IndexField = s, res, "spec.nodeName"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if err := c.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, res
}
