package cacher_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// View hands over what Get would read: the cached object itself (not a
// copy, the same object every time) for reads the cache serves, an object
// read from etcd for the quorum read, a zeroed one for a missing object
// with IgnoreNotFound, and Get's errors.
func TestViewReadsWhatGetReads(t *testing.T) {
	res := storagetest.Pods()
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := res.ResourcePrefix + "/ns/web"
	created := &corev1.Pod{}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	if err := c.Create(ctx, key, pod, created); err != nil {
		t.Fatal(err)
	}
	newPod := func() runtime.Object { return &corev1.Pod{} }
	view := func(opts storage.GetOptions, key string) (runtime.Object, error) {
		var got runtime.Object
		err := c.View(ctx, key, opts, newPod, func(obj runtime.Object) { got = obj })
		return got, err
	}
	fromCache := storage.GetOptions{ResourceVersion: created.ResourceVersion}
	first, err := view(fromCache, key)
	if err != nil {
		t.Fatal(err)
	}
	again, err := view(storage.GetOptions{ResourceVersion: "0"}, key)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Fatal("two reads from the cache handed over different objects: copies, not the cached object")
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, key, fromCache, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, got) || first == runtime.Object(got) {
		t.Fatalf("View %v, Get %v", first, got)
	}
	quorum, err := view(storage.GetOptions{}, key)
	if err != nil {
		t.Fatal(err)
	}
	if quorum == first || !reflect.DeepEqual(quorum, got) {
		t.Fatal("the quorum read did not hand over a fresh object read from etcd")
	}
	missing := res.ResourcePrefix + "/ns/none"
	zero, err := view(storage.GetOptions{ResourceVersion: "0", IgnoreNotFound: true}, missing)
	if err != nil || !reflect.DeepEqual(zero, &corev1.Pod{}) {
		t.Fatalf("missing with IgnoreNotFound: %v, %v", zero, err)
	}
	if _, err := view(storage.GetOptions{ResourceVersion: "0"}, missing); !storage.IsNotFound(err) {
		t.Fatalf("missing: %v, want not found", err)
	}
	called := false
	if err := c.View(ctx, key, storage.GetOptions{ResourceVersion: "x"}, newPod, func(runtime.Object) { called = true }); err == nil || called {
		t.Fatalf("bad resourceVersion: %v, view called %v", err, called)
	}
}
