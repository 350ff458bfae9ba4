package garbagecollector

import (
	"context"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	metafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// With Config.SharedInformers the graph learns of pods from the typed pod
// informer the controller manager runs anyway — no metadata watch of pods
// of its own — and when Run returns its handlers are off that informer,
// which keeps running for its other users.
func TestGraphFromASharedTypedInformer(t *testing.T) {
	owner := ownerRef("ReplicaSet", "gone", "gone-uid", true)
	typedPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphaned", UID: "p1", OwnerReferences: []metav1.OwnerReference{owner}}}
	typed := fake.NewClientset(typedPod)
	pods := coreinformers.NewPodInformer(typed, metav1.NamespaceAll, time.Second, cache.Indexers{})
	informerCtx, stopInformer := context.WithCancel(context.Background())
	informerDone := make(chan struct{})
	go func() { defer close(informerDone); pods.RunWithContext(informerCtx) }()
	defer func() { stopInformer(); <-informerDone }()
	for !pods.HasSynced() {
		time.Sleep(time.Millisecond)
	}

	scheme := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metafake.NewSimpleMetadataClient(scheme)
	if err := meta.Tracker().Create(podsGVR, partial("v1", "Pod", "ns", "orphaned", "p1", owner), "ns"); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	gc := New(meta, nil, record.NewFakeRecorder(100), Config{Resources: testResources, Workers: 2,
		SharedInformers: func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
			if gvr == podsGVR {
				return pods
			}
			return nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }()
	h := &harness{t: t, client: meta}
	h.waitFor("the pod of an absent owner deleted", func() bool {
		_, ok := h.get(podsGVR, "ns", "orphaned")
		return !ok
	})
	for _, a := range meta.Actions() {
		if a.GetResource() == podsGVR && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
			t.Errorf("the collector watched pods' metadata itself: %s", a.GetVerb())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.waitFor("the collector's goroutines and handlers to go", func() bool { return runtime.NumGoroutine() <= before })
	if pods.IsStopped() {
		t.Error("the shared informer stopped with the collector")
	}
}
