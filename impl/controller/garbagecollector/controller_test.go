package garbagecollector

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/record"
)

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	rsGVR   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	depGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	nodeGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

var testResources = []Resource{
	{podsGVR, "Pod", true}, {rsGVR, "ReplicaSet", true}, {depGVR, "Deployment", true}, {nodeGVR, "Node", false},
}

type harness struct {
	t        *testing.T
	client   *metafake.FakeMetadataClient
	recorder *record.FakeRecorder
	cancel   func()
	wg       sync.WaitGroup
	before   int
}

func partial(apiVersion, kind, ns, name string, uid types.UID, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, OwnerReferences: owners},
	}
}

func startGC(t *testing.T, objs map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata) *harness {
	return startGCWith(t, objs, nil)
}

// startGCWith is startGC with a hook that may install reactors on the fake
// client before the collector starts.
func startGCWith(t *testing.T, objs map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata, hook func(*metafake.FakeMetadataClient)) *harness {
	h := &harness{t: t, before: runtime.NumGoroutine()}
	scheme := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h.client = metafake.NewSimpleMetadataClient(scheme)
	for gvr, list := range objs {
		for _, o := range list {
			if err := h.client.Tracker().Create(gvr, o, o.Namespace); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hook != nil {
		hook(h.client)
	}
	h.recorder = record.NewFakeRecorder(100)
	gc := New(h.client, nil, h.recorder, Config{Resources: testResources, Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(1)
	go func() { defer h.wg.Done(); _ = gc.Run(ctx) }()
	return h
}

func (h *harness) stop() {
	h.cancel()
	h.wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > h.before+2 {
		if time.Now().After(deadline) {
			h.t.Fatalf("goroutines leaked: %d before, %d after", h.before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) get(gvr schema.GroupVersionResource, ns, name string) (*metav1.PartialObjectMetadata, bool) {
	o, err := h.client.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return o, true
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBackgroundCollectsDependentsOfAbsentOwners(t *testing.T) {
	live := partial("apps/v1", "ReplicaSet", "ns", "live", "live")
	h := startGC(t, map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata{
		rsGVR: {live},
		podsGVR: {
			partial("v1", "Pod", "ns", "orphaned", "p1", ownerRef("ReplicaSet", "gone", "gone-uid", true)),
			partial("v1", "Pod", "ns", "two-owners", "p2", ownerRef("ReplicaSet", "gone", "gone-uid", true), ownerRef("ReplicaSet", "live", "live", false)),
			partial("v1", "Pod", "ns", "owned", "p3", ownerRef("ReplicaSet", "live", "live", true)),
			// Same name as the live owner, another uid: the owner is absent.
			partial("v1", "Pod", "ns", "stale-uid", "p4", ownerRef("ReplicaSet", "live", "old-uid", true)),
		},
	})
	defer h.stop()
	h.waitFor("pods of absent owners deleted", func() bool {
		_, a := h.get(podsGVR, "ns", "orphaned")
		_, b := h.get(podsGVR, "ns", "stale-uid")
		return !a && !b
	})
	h.waitFor("dangling reference removed from the pod with a live owner", func() bool {
		p, ok := h.get(podsGVR, "ns", "two-owners")
		return ok && len(p.OwnerReferences) == 1 && p.OwnerReferences[0].UID == "live"
	})
	if _, ok := h.get(podsGVR, "ns", "owned"); !ok {
		t.Fatal("a pod with a live owner was deleted")
	}
	// Now the live owner goes away (background): its dependents follow.
	if err := h.client.Resource(rsGVR).Namespace("ns").Delete(context.Background(), "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("dependents of the deleted owner collected", func() bool {
		_, a := h.get(podsGVR, "ns", "owned")
		_, b := h.get(podsGVR, "ns", "two-owners")
		return !a && !b
	})
}

func TestOrphanStripsReferencesThenFinalizer(t *testing.T) {
	owner := partial("apps/v1", "ReplicaSet", "ns", "rs", "rs")
	now := metav1.Now()
	owner.DeletionTimestamp = &now
	owner.Finalizers = []string{FinalizerOrphan}
	h := startGC(t, map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata{
		rsGVR:   {owner},
		podsGVR: {partial("v1", "Pod", "ns", "p", "p", ownerRef("ReplicaSet", "rs", "rs", true))},
	})
	defer h.stop()
	h.waitFor("orphan finalizer removed", func() bool {
		o, ok := h.get(rsGVR, "ns", "rs")
		return ok && len(o.Finalizers) == 0
	})
	p, ok := h.get(podsGVR, "ns", "p")
	if !ok || len(p.OwnerReferences) != 0 {
		t.Fatalf("dependent must survive without the owner reference: %+v", p)
	}
}

func TestForegroundDeletesDependentsThenFinalizer(t *testing.T) {
	owner := partial("apps/v1", "Deployment", "ns", "d", "d")
	now := metav1.Now()
	owner.DeletionTimestamp = &now
	owner.Finalizers = []string{FinalizerForeground}
	h := startGC(t, map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata{
		depGVR: {owner},
		rsGVR:  {partial("apps/v1", "ReplicaSet", "ns", "rs", "rs", ownerRef("Deployment", "d", "d", true))},
		podsGVR: {
			partial("v1", "Pod", "ns", "p", "p", ownerRef("ReplicaSet", "rs", "rs", true)),
		},
	})
	defer h.stop()
	h.waitFor("foreground finalizer removed", func() bool {
		o, ok := h.get(depGVR, "ns", "d")
		return ok && len(o.Finalizers) == 0
	})
	if _, ok := h.get(rsGVR, "ns", "rs"); ok {
		t.Fatal("the blocking dependent must be gone before the finalizer is removed")
	}
	h.waitFor("grand-dependent collected", func() bool { _, ok := h.get(podsGVR, "ns", "p"); return !ok })
}

func TestCrossNamespaceOwnerIsInvalid(t *testing.T) {
	h := startGC(t, map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata{
		rsGVR:   {partial("apps/v1", "ReplicaSet", "other", "rs", "rs")},
		podsGVR: {partial("v1", "Pod", "ns", "p", "p", ownerRef("ReplicaSet", "rs", "rs", true))},
		// A cluster-scoped object naming a namespaced owner kind: never collected on that basis.
		nodeGVR: {partial("v1", "Node", "", "n", "n", ownerRef("ReplicaSet", "nothing", "nothing", false))},
	})
	h.waitFor("pod with an owner only in another namespace collected", func() bool { _, ok := h.get(podsGVR, "ns", "p"); return !ok })
	h.stop()
	if _, ok := h.get(nodeGVR, "", "n"); !ok {
		t.Fatal("cluster-scoped dependent of a namespaced kind was deleted")
	}
	close(h.recorder.Events)
	var invalid int
	for e := range h.recorder.Events {
		if strings.Contains(e, EventOwnerRefInvalidNamespace) {
			invalid++
		}
	}
	if invalid == 0 {
		t.Fatal("no OwnerRefInvalidNamespace event")
	}
}
