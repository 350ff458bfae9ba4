package garbagecollector

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"pgregory.net/rapid"
)

// propertyAPI is a fake metadata API with the deletion semantics the
// garbage collector relies on: propagationPolicy adds the orphan or
// foregroundDeletion finalizer, an object with finalizers only gets a
// deletionTimestamp, and it disappears once its last finalizer is removed.
func propertyAPI(t *rapid.T) *metafake.FakeMetadataClient {
	scheme := metafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := metafake.NewSimpleMetadataClient(scheme)
	tracker := c.Tracker()
	c.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteActionImpl)
		obj, err := tracker.Get(da.Resource, da.Namespace, da.Name)
		if err != nil {
			return true, nil, err
		}
		m := obj.(*metav1.PartialObjectMetadata).DeepCopy()
		if p := da.DeleteOptions.Preconditions; p != nil && p.UID != nil && *p.UID != m.UID {
			return true, nil, apierrors.NewConflict(da.Resource.GroupResource(), da.Name, fmt.Errorf("uid precondition"))
		}
		if m.DeletionTimestamp != nil {
			return true, nil, nil
		}
		if pp := da.DeleteOptions.PropagationPolicy; pp != nil {
			switch *pp {
			case metav1.DeletePropagationForeground:
				m.Finalizers = append(m.Finalizers, FinalizerForeground)
			case metav1.DeletePropagationOrphan:
				m.Finalizers = append(m.Finalizers, FinalizerOrphan)
			}
		}
		if len(m.Finalizers) == 0 {
			return true, nil, tracker.Delete(da.Resource, da.Namespace, da.Name)
		}
		now := metav1.Now()
		m.DeletionTimestamp = &now
		return true, nil, tracker.Update(da.Resource, m, da.Namespace)
	})
	c.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled, out, err := k8stesting.ObjectReaction(tracker)(a)
		if err != nil || !handled {
			return handled, out, err
		}
		if m := out.(*metav1.PartialObjectMetadata); m.DeletionTimestamp != nil && len(m.Finalizers) == 0 {
			return true, out, tracker.Delete(a.GetResource(), a.GetNamespace(), m.Name)
		}
		return true, out, nil
	})
	return c
}

// TestCollectorProperties builds random ownership graphs, deletes random
// objects with random propagation policies, interleaves the collector's
// work items with informer deliveries, and checks:
//   - GC-1: the collector deletes an object only when every owner is gone or
//     itself in foreground deletion;
//   - GC-2: the foregroundDeletion finalizer is removed only when no
//     dependent with blockOwnerDeletion remains;
//   - LIVE-2: once the work runs out, no deletion is stuck and every
//     remaining owner reference points at a live owner.
func TestCollectorProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		client := propertyAPI(rt)
		gc := New(client, nil, record.NewFakeRecorder(1000), Config{Resources: testResources})
		gc.mapping = newMapping(testResources)
		ctx := context.Background()
		n := rapid.IntRange(1, 7).Draw(rt, "objects")
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprint("o", i)
			var owners []metav1.OwnerReference
			for j := 0; j < i; j++ {
				if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("edge %d->%d", i, j)) == 0 {
					owners = append(owners, ownerRef("ReplicaSet", names[j], types.UID(names[j]), rapid.Bool().Draw(rt, "block")))
				}
			}
			if rapid.IntRange(0, 5).Draw(rt, fmt.Sprint("dangling ", i)) == 0 {
				owners = append(owners, ownerRef("ReplicaSet", "gone", "gone-uid", rapid.Bool().Draw(rt, "block")))
			}
			if err := client.Tracker().Create(rsGVR, partial("apps/v1", "ReplicaSet", "ns", names[i], types.UID(names[i]), owners...), "ns"); err != nil {
				rt.Fatal(err)
			}
		}
		world := func() map[string]*metav1.PartialObjectMetadata {
			out := map[string]*metav1.PartialObjectMetadata{}
			for _, name := range names {
				if o, err := client.Tracker().Get(rsGVR, "ns", name); err == nil {
					out[name] = o.(*metav1.PartialObjectMetadata).DeepCopy()
				}
			}
			return out
		}
		// deliver plays the informer: every difference becomes a graph change.
		seen := map[string]*metav1.PartialObjectMetadata{}
		deliver := func() {
			now := world()
			for _, name := range names {
				old, had := seen[name]
				cur, has := now[name]
				var ch *Change
				switch {
				case has && (!had || !equality.Semantic.DeepEqual(old.ObjectMeta, cur.ObjectMeta)):
					typ := Added
					if had {
						typ = Updated
					}
					ch = &Change{Type: typ, Object: ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: name, UID: cur.UID},
						Owners: cur.OwnerReferences, Deleting: cur.DeletionTimestamp != nil, Finalizers: cur.Finalizers}
				case had && !has:
					ch = &Change{Type: Deleted, Object: ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: name, UID: old.UID}, Owners: old.OwnerReferences}
				}
				if ch != nil {
					gc.changes.Add(ch)
				}
			}
			seen = now
			for gc.changes.Len() > 0 {
				ch, _ := gc.changes.Get()
				eff := gc.graph.Apply(*ch)
				gc.changes.Done(ch)
				for _, u := range eff.AttemptToDelete {
					gc.attemptToDelete.Add(string(u))
				}
				for _, u := range eff.AttemptToOrphan {
					gc.attemptToOrphan.Add(string(u))
				}
			}
		}
		deliver()

		solid := func(w map[string]*metav1.PartialObjectMetadata, r metav1.OwnerReference) bool {
			o, ok := w[r.Name]
			return ok && o.UID == r.UID && !(o.DeletionTimestamp != nil && has(o.Finalizers, FinalizerForeground))
		}
		gcStep := func(orphan bool) {
			q, work := gc.attemptToDelete, gc.attemptToDeleteItem
			if orphan {
				q, work = gc.attemptToOrphan, gc.orphanDependents
			}
			if q.Len() == 0 {
				return
			}
			before := world()
			key, _ := q.Get()
			if err := work(ctx, key); err != nil && err != errNotYetObserved {
				q.Add(key) // conflicts: retry later
			}
			q.Done(key)
			after := world()
			for name, b := range before {
				a, still := after[name]
				deletedByGC := (!still && b.DeletionTimestamp == nil) || (still && a.DeletionTimestamp != nil && b.DeletionTimestamp == nil)
				if deletedByGC {
					for _, r := range b.OwnerReferences {
						if solid(before, r) {
							rt.Fatalf("GC-1: %s deleted while its owner %s is live", name, r.Name)
						}
					}
					if len(b.OwnerReferences) == 0 {
						rt.Fatalf("GC-1: %s deleted without owners", name)
					}
				}
				if still && has(b.Finalizers, FinalizerForeground) && !has(a.Finalizers, FinalizerForeground) || !still && has(b.Finalizers, FinalizerForeground) {
					for dn, d := range after {
						for _, r := range d.OwnerReferences {
							if r.UID == b.UID && blocks(r) {
								rt.Fatalf("GC-2: foreground finalizer of %s removed while %s blocks it", name, dn)
							}
						}
					}
				}
			}
			deliver()
		}
		rt.Repeat(map[string]func(*rapid.T){
			"userDelete": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "victim")
				policy := rapid.SampledFrom([]metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}).Draw(rt, "policy")
				_ = client.Resource(rsGVR).Namespace("ns").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
				deliver()
			},
			"attemptToDelete": func(rt *rapid.T) { gcStep(false) },
			"attemptToOrphan": func(rt *rapid.T) { gcStep(true) },
		})
		// Drain: the collector finishes what it started.
		for i := 0; i < 1000 && gc.attemptToDelete.Len()+gc.attemptToOrphan.Len() > 0; i++ {
			gcStep(false)
			gcStep(true)
		}
		w := world()
		for name, o := range w {
			if o.DeletionTimestamp != nil {
				rt.Fatalf("LIVE-2: %s stuck in deletion with finalizers %v", name, o.Finalizers)
			}
			for _, r := range o.OwnerReferences {
				if owner, ok := w[r.Name]; !ok || owner.UID != r.UID {
					rt.Fatalf("LIVE-2: %s still refers to absent owner %s", name, r.Name)
				}
			}
		}
	})
}
