package cacher

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// With watchers indexed by spec.nodeName, an event is checked against the
// watchers of its node(s) only, not against all of them.
func TestNodeNameIndexLimitsDispatch(t *testing.T) {
	dir := t.TempDir()
	e, err := embedded.Start(context.Background(), embedded.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res := storagetest.Pods()
	s, err := etcd3.New(etcd3.Config{Client: e.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := New(Config{Store: s, Resource: res, IndexField: "spec.nodeName"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := context.Background()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
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
