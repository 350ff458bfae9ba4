package eviction

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestDecideTwoHardAllocatableThresholds: --eviction-hard naming both
// memory.available and allocatableMemory.available gives two hard
// allocatableMemory.available thresholds (the user's and the copy,
// AllocatableThresholds). They are distinct thresholds, as upstream's
// mergeThresholds tells them apart by value (hasThreshold): the copy, met
// last interval and not yet reclaimed to its value plus its minimum
// reclaim, stays met while the user's is met again, and so still evicts
// once the user's is over.
func TestDecideTwoHardAllocatableThresholds(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi,allocatableMemory.available<200Mi", HardSet: true,
		MinimumReclaim: "memory.available=500Mi"})
	cfg.Thresholds = AllocatableThresholds(cfg.Thresholds)
	p := pod("hog", 100*mi, 0)
	stats := []PodStats{{Pod: p, Memory: map[string]int64{"app": 500 * mi}}}
	decide := func(state State, allocatable int64) Decision {
		return Decide(Input{Config: cfg, Pods: stats, State: state, Now: t0, Observations: Observations{
			SignalMemoryAvailable:            {Available: 4096 * mi, Capacity: 8192 * mi},
			SignalAllocatableMemoryAvailable: {Available: allocatable * mi, Capacity: 4096 * mi},
		}})
	}
	d := decide(State{}, 50) // both met
	if len(d.Met) != 2 {
		t.Fatalf("at 50Mi met %+v, want both allocatable thresholds", d.Met)
	}
	d = decide(d.State, 150) // the user's met; the copy until 600Mi
	if len(d.Met) != 2 {
		t.Fatalf("at 150Mi met %+v, want both allocatable thresholds", d.Met)
	}
	d = decide(d.State, 300) // the copy only
	if len(d.Met) != 1 || d.Met[0].Value.String() != "100Mi" {
		t.Fatalf("at 300Mi met %+v, want the copied 100Mi threshold", d.Met)
	}
	if d.Evict == nil || d.Evict.Pod != p {
		t.Errorf("at 300Mi evicted %+v, want hog", d.Evict)
	}
	if len(d.Conditions) != 1 || d.Conditions[0] != v1.NodeMemoryPressure {
		t.Errorf("conditions %v", d.Conditions)
	}
}
