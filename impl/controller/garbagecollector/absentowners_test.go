package garbagecollector

import (
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

func rsRef(ns, name string, uid types.UID) ObjectRef {
	return ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: name, UID: uid}
}

func TestAbsentOwnerCache(t *testing.T) {
	c := NewAbsentOwnerCache(2)
	a, b, d := rsRef("ns", "a", "uid-a"), rsRef("ns", "b", "uid-b"), rsRef("ns", "d", "uid-d")
	if c.Has(a) {
		t.Fatal("empty cache has a")
	}
	c.Add(a)
	c.Add(b)
	if !c.Has(a) || !c.Has(b) {
		t.Fatal("added references missing")
	}
	// a was used last: adding d evicts b, the least recently used.
	c.Has(a)
	c.Add(d)
	if c.Len() != 2 || !c.Has(a) || c.Has(b) || !c.Has(d) {
		t.Fatalf("after eviction: len %d, a %v, b %v, d %v", c.Len(), c.Has(a), c.Has(b), c.Has(d))
	}
	// The key is the whole reference: the same uid under another name or
	// namespace is not known absent.
	for _, other := range []ObjectRef{rsRef("ns", "other-name", "uid-a"), rsRef("other-ns", "a", "uid-a"), {APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "a", UID: "uid-a"}} {
		if c.Has(other) {
			t.Fatalf("%v counted as absent", other)
		}
	}
	// Forget drops every entry with the uid, and only those.
	c.Add(rsRef("ns2", "a", "uid-a"))
	c.Forget("uid-a")
	if c.Has(a) || c.Has(rsRef("ns2", "a", "uid-a")) || !c.Has(d) || c.Len() != 1 {
		t.Fatalf("after Forget: a %v, d %v, len %d", c.Has(a), c.Has(d), c.Len())
	}
	c.Forget("unknown")
	if c.Len() != 1 {
		t.Fatal("forgetting an unknown uid changed the cache")
	}
	if NewAbsentOwnerCache(0).max != DefaultAbsentOwnerCacheSize {
		t.Fatal("default size not applied")
	}
}

func TestAbsenceFollowsGraphChanges(t *testing.T) {
	scheme := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	gc := New(metafake.NewSimpleMetadataClient(scheme), nil, record.NewFakeRecorder(10), Config{Resources: testResources})
	rs := rsRef("ns", "web", "rs-uid")
	lonely := rsRef("ns", "lonely", "lonely-uid")
	pod := ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p", UID: "p-uid"}
	for _, ch := range []Change{
		{Type: Added, Object: rs},
		{Type: Added, Object: lonely},
		{Type: Added, Object: pod, Owners: []metav1.OwnerReference{ownerRef("ReplicaSet", "web", "rs-uid", true)}},
	} {
		gc.trackAbsence(&ch)
		gc.graph.Apply(ch)
	}
	for _, ch := range []Change{{Type: Deleted, Object: rs}, {Type: Deleted, Object: lonely}} {
		gc.trackAbsence(&ch)
		gc.graph.Apply(ch)
	}
	if !gc.absent.Has(rs) {
		t.Fatal("an owner deleted with dependents is not known absent")
	}
	if gc.absent.Has(lonely) {
		t.Fatal("an object deleted without dependents was cached")
	}
	// Seen alive again (a stale read had claimed otherwise): forgotten.
	gc.trackAbsence(&Change{Type: Updated, Object: rs})
	if gc.absent.Has(rs) {
		t.Fatal("an observed object is still known absent")
	}
}

// TestAbsentOwnerReadOnce: twenty pods of one deleted ReplicaSet are
// collected with a handful of reads of the owner, not one per pod.
func TestAbsentOwnerReadOnce(t *testing.T) {
	var ownerGets atomic.Int32
	var pods []*metav1.PartialObjectMetadata
	for i := range 20 {
		pods = append(pods, partial("v1", "Pod", "ns", fmt.Sprintf("p%d", i), types.UID(fmt.Sprintf("p%d", i)), ownerRef("ReplicaSet", "gone", "gone-uid", true)))
	}
	h := startGCWith(t, map[schema.GroupVersionResource][]*metav1.PartialObjectMetadata{podsGVR: pods}, func(c *metafake.FakeMetadataClient) {
		c.PrependReactor("get", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.(k8stesting.GetAction).GetName() == "gone" {
				ownerGets.Add(1)
			}
			return false, nil, nil
		})
	})
	defer h.stop()
	h.waitFor("every pod of the absent owner deleted", func() bool {
		for i := range 20 {
			if _, ok := h.get(podsGVR, "ns", fmt.Sprintf("p%d", i)); ok {
				return false
			}
		}
		return true
	})
	// Unloaded it is one read. With 2 workers (startGCWith), two may miss
	// at once, and the virtual owner node is checked by a live read of its
	// own (once, or again if a dependent re-creates it): a small bound, far
	// below the 21 reads without the cache.
	if n := ownerGets.Load(); n > 5 {
		t.Fatalf("the absent owner was read %d times for 20 dependents", n)
	}
}
