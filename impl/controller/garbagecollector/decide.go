package garbagecollector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/faults"
)

// OwnerState is what a live read says about one owner reference.
type OwnerState int

// Owner states, as upstream classifies references.
const (
	// OwnerSolid: the owner exists (same uid) and is not deleting dependents.
	OwnerSolid OwnerState = iota
	// OwnerDangling: no object with that uid at that name (dangling reference).
	OwnerDangling
	// OwnerWaiting: the owner is in foreground deletion, waiting for its
	// dependents (GC-2).
	OwnerWaiting
	// OwnerUnresolvable: the reference can never resolve (a cluster-scoped
	// dependent naming a namespaced kind, or an unknown kind). Such an item
	// is never deleted on the basis of its references.
	OwnerUnresolvable
)

// Item is what a worker knows about one dependent when deciding its fate.
type Item struct {
	Owners      []metav1.OwnerReference
	OwnerStates []OwnerState // parallel to Owners
	Finalizers  []string
	// HasDependents: the item owns something itself.
	HasDependents bool
	// DependentDeletingDependents: one of its dependents is itself in
	// foreground deletion (a possible cycle; unblock to avoid a deadlock).
	DependentDeletingDependents bool
}

// ActionKind is the kind of a garbage-collector write.
type ActionKind int

// The writes the garbage collector decides on.
const (
	None ActionKind = iota
	// Delete the item with Policy.
	Delete
	// RemoveOwnerRefs strips the references to OwnerUIDs from the item.
	RemoveOwnerRefs
)

// Action is one decided write.
type Action struct {
	Kind      ActionKind
	Policy    metav1.DeletionPropagation
	OwnerUIDs []types.UID
	// UnblockOwnerRefs clears blockOwnerDeletion on the item's references
	// before a foreground delete (cycle breaking).
	UnblockOwnerRefs bool
}

// Decide is the garbage collector's decision for one dependent, from the
// live state of its owners:
//   - any solid owner keeps it (GC-1); references to dangling or
//     waiting owners are removed from it;
//   - otherwise, with an owner waiting for dependents and dependents of its
//     own, it is deleted in the foreground too (GC-2);
//   - otherwise it is garbage: deleted with the policy its own finalizers ask
//     for, background by default (LIVE-2).
func Decide(it Item) Action {
	var solid, dangling, waiting []types.UID
	for i, r := range it.Owners {
		switch it.OwnerStates[i] {
		case OwnerUnresolvable:
			return Action{Kind: None}
		case OwnerSolid:
			solid = append(solid, r.UID)
		case OwnerDangling:
			dangling = append(dangling, r.UID)
		case OwnerWaiting:
			waiting = append(waiting, r.UID)
		}
	}
	switch {
	case len(it.Owners) == 0:
		return Action{Kind: None}
	case len(solid) > 0 && !(len(dangling) > 0 && faults.Enabled(faults.GCDeletesWithLiveOwner)): // mutation: one owner gone deletes it (GC-1)
		if len(dangling) == 0 && len(waiting) == 0 {
			return Action{Kind: None}
		}
		return Action{Kind: RemoveOwnerRefs, OwnerUIDs: append(dangling, waiting...)}
	case len(waiting) > 0 && it.HasDependents:
		return Action{Kind: Delete, Policy: metav1.DeletePropagationForeground, UnblockOwnerRefs: it.DependentDeletingDependents}
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case has(it.Finalizers, FinalizerOrphan):
		policy = metav1.DeletePropagationOrphan
	case has(it.Finalizers, FinalizerForeground):
		policy = metav1.DeletePropagationForeground
	}
	return Action{Kind: Delete, Policy: policy}
}

// WithoutOwners returns refs minus the references to uids.
func WithoutOwners(refs []metav1.OwnerReference, uids ...types.UID) []metav1.OwnerReference {
	drop := map[types.UID]bool{}
	for _, u := range uids {
		drop[u] = true
	}
	out := []metav1.OwnerReference{}
	for _, r := range refs {
		if !drop[r.UID] {
			out = append(out, r)
		}
	}
	return out
}

// Unblocked returns refs with blockOwnerDeletion cleared.
func Unblocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, len(refs))
	f := false
	for i, r := range refs {
		out[i] = r
		if blocks(r) {
			out[i].BlockOwnerDeletion = &f
		}
	}
	return out
}

// WithoutFinalizer returns finalizers minus f.
func WithoutFinalizer(finalizers []string, f string) []string {
	out := []string{}
	for _, x := range finalizers {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}
