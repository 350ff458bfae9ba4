package garbagecollector

import (
	"fmt"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func obj(kind, ns, name string, uid types.UID) ObjectRef {
	return ObjectRef{APIVersion: "apps/v1", Kind: kind, Namespace: ns, Name: name, UID: uid}
}

func uids(l []types.UID) string {
	s := make([]string, len(l))
	for i, u := range l {
		s[i] = string(u)
	}
	sort.Strings(s)
	return fmt.Sprint(s)
}

func TestGraphBackgroundOwnerDeleted(t *testing.T) {
	g := NewGraph()
	rs := obj("ReplicaSet", "ns", "rs", "rs")
	g.Apply(Change{Type: Added, Object: rs})
	for _, p := range []string{"p1", "p2"} {
		eff := g.Apply(Change{Type: Added, Object: obj("Pod", "ns", p, types.UID(p)), Owners: []metav1.OwnerReference{ownerRef("ReplicaSet", "rs", "rs", true)}})
		if len(eff.AttemptToDelete) != 0 {
			t.Fatalf("a dependent of a live observed owner is not work: %+v", eff)
		}
	}
	snap, _ := g.Snapshot("rs")
	if len(snap.Dependents) != 2 || snap.BlockingCount != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	eff := g.Apply(Change{Type: Deleted, Object: rs})
	if uids(eff.AttemptToDelete) != "[p1 p2]" {
		t.Fatalf("owner deletion must examine its dependents, got %v", eff.AttemptToDelete)
	}
}

func TestGraphVirtualOwner(t *testing.T) {
	g := NewGraph()
	eff := g.Apply(Change{Type: Added, Object: obj("Pod", "ns", "p", "p"), Owners: []metav1.OwnerReference{ownerRef("ReplicaSet", "gone", "gone", false)}})
	if uids(eff.AttemptToDelete) != "[gone]" {
		t.Fatalf("an unseen owner must be verified, got %v", eff.AttemptToDelete)
	}
	snap, ok := g.Snapshot("gone")
	if !ok || snap.Observed || snap.Identity.Namespace != "ns" {
		t.Fatalf("virtual node %+v", snap)
	}
	eff = g.Apply(Change{Type: VirtualDeleted, Object: snap.Identity})
	if uids(eff.AttemptToDelete) != "[p]" {
		t.Fatalf("a verified-absent owner must release its dependents to deletion, got %v", eff.AttemptToDelete)
	}
	if _, ok := g.Snapshot("gone"); ok {
		t.Fatal("virtual node not removed")
	}
}

func TestGraphVirtualDeleteIgnoredForObservedNode(t *testing.T) {
	g := NewGraph()
	rs := obj("ReplicaSet", "ns", "rs", "rs")
	g.Apply(Change{Type: Added, Object: rs})
	if eff := g.Apply(Change{Type: VirtualDeleted, Object: rs}); len(eff.AttemptToDelete) != 0 {
		t.Fatal("a virtual delete must not remove an observed node")
	}
	if _, ok := g.Snapshot("rs"); !ok {
		t.Fatal("observed node removed")
	}
}

func TestGraphForegroundAndOrphanTransitions(t *testing.T) {
	g := NewGraph()
	d := obj("Deployment", "ns", "d", "d")
	g.Apply(Change{Type: Added, Object: d})
	g.Apply(Change{Type: Added, Object: obj("ReplicaSet", "ns", "rs", "rs"), Owners: []metav1.OwnerReference{ownerRef("Deployment", "d", "d", true)}})
	g.Apply(Change{Type: Added, Object: obj("ConfigMap", "ns", "cm", "cm"), Owners: []metav1.OwnerReference{ownerRef("Deployment", "d", "d", false)}})
	eff := g.Apply(Change{Type: Updated, Object: d, Deleting: true, Finalizers: []string{FinalizerForeground}})
	if uids(eff.AttemptToDelete) != "[cm d rs]" {
		t.Fatalf("foreground deletion must examine dependents and the owner, got %v", eff.AttemptToDelete)
	}
	snap, _ := g.Snapshot("d")
	if !snap.DeletingDependents || snap.BlockingCount != 1 || uids(snap.Blocking) != "[rs]" {
		t.Fatalf("snapshot %+v", snap)
	}
	// The blocking dependent goes: the owner is examined again.
	eff = g.Apply(Change{Type: Deleted, Object: obj("ReplicaSet", "ns", "rs", "rs"), Owners: []metav1.OwnerReference{ownerRef("Deployment", "d", "d", true)}})
	if uids(eff.AttemptToDelete) != "[d]" {
		t.Fatalf("got %v", eff.AttemptToDelete)
	}
	if snap, _ := g.Snapshot("d"); snap.BlockingCount != 0 {
		t.Fatal("still blocked")
	}

	o := obj("ReplicaSet", "ns", "o", "o")
	g.Apply(Change{Type: Added, Object: o})
	eff = g.Apply(Change{Type: Updated, Object: o, Deleting: true, Finalizers: []string{FinalizerOrphan}})
	if uids(eff.AttemptToOrphan) != "[o]" {
		t.Fatalf("orphan finalizer must schedule orphaning, got %+v", eff)
	}
}

func TestGraphDroppingBlockingRefUnblocksOwner(t *testing.T) {
	g := NewGraph()
	d := obj("Deployment", "ns", "d", "d")
	g.Apply(Change{Type: Added, Object: d, Deleting: true, Finalizers: []string{FinalizerForeground}})
	rs := obj("ReplicaSet", "ns", "rs", "rs")
	g.Apply(Change{Type: Added, Object: rs, Owners: []metav1.OwnerReference{ownerRef("Deployment", "d", "d", true)}})
	eff := g.Apply(Change{Type: Updated, Object: rs, Owners: nil})
	if uids(eff.AttemptToDelete) != "[d]" {
		t.Fatalf("got %v", eff.AttemptToDelete)
	}
	if snap, _ := g.Snapshot("d"); len(snap.Dependents) != 0 {
		t.Fatal("dependent link not removed")
	}
}

func TestGraphCrossNamespaceOwner(t *testing.T) {
	g := NewGraph()
	g.Apply(Change{Type: Added, Object: obj("ReplicaSet", "b", "rs", "rs")})
	pod := obj("Pod", "a", "p", "p")
	eff := g.Apply(Change{Type: Added, Object: pod, Owners: []metav1.OwnerReference{ownerRef("ReplicaSet", "rs", "rs", true)}})
	if len(eff.Invalid) != 1 || eff.Invalid[0].Dependent != pod || uids(eff.AttemptToDelete) != "[p]" {
		t.Fatalf("cross-namespace owner must be reported and the dependent examined: %+v", eff)
	}
	// Seen in the other order: dependent first (virtual owner in ns a), then the owner in ns b.
	g2 := NewGraph()
	g2.Apply(Change{Type: Added, Object: pod, Owners: []metav1.OwnerReference{ownerRef("ReplicaSet", "rs", "rs", true)}})
	eff = g2.Apply(Change{Type: Added, Object: obj("ReplicaSet", "b", "rs", "rs")})
	if len(eff.Invalid) != 1 || uids(eff.AttemptToDelete) != "[p]" {
		t.Fatalf("late-observed owner in another namespace: %+v", eff)
	}
}
