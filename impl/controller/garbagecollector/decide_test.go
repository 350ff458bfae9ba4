package garbagecollector

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ownerRef(kind, name string, uid types.UID, block bool) metav1.OwnerReference {
	t := true
	r := metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &t}
	if block {
		r.BlockOwnerDeletion = &t
	}
	return r
}

func TestDecide(t *testing.T) {
	a, b := ownerRef("ReplicaSet", "a", "ua", true), ownerRef("Deployment", "b", "ub", false)
	tests := []struct {
		name string
		item Item
		want Action
	}{
		{"no owners: not garbage", Item{}, Action{Kind: None}},
		{"live owner keeps it", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerSolid}}, Action{Kind: None}},
		{"owner gone: background delete", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerDangling}},
			Action{Kind: Delete, Policy: metav1.DeletePropagationBackground}},
		{"two owners, one live: kept, dangling ref removed", Item{Owners: []metav1.OwnerReference{a, b}, OwnerStates: []OwnerState{OwnerDangling, OwnerSolid}},
			Action{Kind: RemoveOwnerRefs, OwnerUIDs: []types.UID{"ua"}}},
		{"two owners, one live, one in foreground deletion: unlinked from the waiting one", Item{Owners: []metav1.OwnerReference{a, b}, OwnerStates: []OwnerState{OwnerWaiting, OwnerSolid}},
			Action{Kind: RemoveOwnerRefs, OwnerUIDs: []types.UID{"ua"}}},
		{"two owners both gone", Item{Owners: []metav1.OwnerReference{a, b}, OwnerStates: []OwnerState{OwnerDangling, OwnerDangling}},
			Action{Kind: Delete, Policy: metav1.DeletePropagationBackground}},
		{"owner in foreground deletion, item owns things: foreground", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerWaiting}, HasDependents: true},
			Action{Kind: Delete, Policy: metav1.DeletePropagationForeground}},
		{"foreground with a cycle: unblock first", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerWaiting}, HasDependents: true, DependentDeletingDependents: true},
			Action{Kind: Delete, Policy: metav1.DeletePropagationForeground, UnblockOwnerRefs: true}},
		{"owner in foreground deletion, leaf item: background", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerWaiting}},
			Action{Kind: Delete, Policy: metav1.DeletePropagationBackground}},
		{"garbage with its own orphan finalizer", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerDangling}, Finalizers: []string{FinalizerOrphan}},
			Action{Kind: Delete, Policy: metav1.DeletePropagationOrphan}},
		{"garbage with its own foreground finalizer", Item{Owners: []metav1.OwnerReference{a}, OwnerStates: []OwnerState{OwnerDangling}, Finalizers: []string{FinalizerForeground}},
			Action{Kind: Delete, Policy: metav1.DeletePropagationForeground}},
		{"unresolvable reference: never deleted on that basis", Item{Owners: []metav1.OwnerReference{a, b}, OwnerStates: []OwnerState{OwnerUnresolvable, OwnerDangling}},
			Action{Kind: None}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.item); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRefHelpers(t *testing.T) {
	a, b := ownerRef("ReplicaSet", "a", "ua", true), ownerRef("Deployment", "b", "ub", false)
	if got := WithoutOwners([]metav1.OwnerReference{a, b}, "ua"); len(got) != 1 || got[0].UID != "ub" {
		t.Fatalf("WithoutOwners = %+v", got)
	}
	if got := WithoutOwners([]metav1.OwnerReference{a}, "ua"); got == nil || len(got) != 0 {
		t.Fatal("removing the last ref must give an empty, non-nil list (a merge patch must clear it)")
	}
	if got := Unblocked([]metav1.OwnerReference{a}); *got[0].BlockOwnerDeletion || !*a.BlockOwnerDeletion {
		t.Fatal("Unblocked must clear blockOwnerDeletion on a copy")
	}
	if got := WithoutFinalizer([]string{"x", FinalizerOrphan}, FinalizerOrphan); fmt.Sprint(got) != "[x]" {
		t.Fatalf("WithoutFinalizer = %v", got)
	}
}
