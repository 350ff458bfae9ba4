package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestObservedGeneration: as upstream's kubelet with
// PodObservedGenerationTracking (GA, locked on, since 1.35), every status
// generated carries the pod's metadata.generation as
// status.observedGeneration, and so does every condition the kubelet owns
// (PodReadyToStartContainers, Initialized, Ready, ContainersReady,
// PodScheduled) on every status, whether or not the condition's status
// changed; a condition another component owns keeps its own.
func TestObservedGeneration(t *testing.T) {
	run := runtimeWith()
	p := basePod()
	p.Generation = 1
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	p.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue, ObservedGeneration: 1}}
	owned := []v1.PodConditionType{PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}
	check := func(what string, s v1.PodStatus, want int64) {
		t.Helper()
		if s.ObservedGeneration != want {
			t.Errorf("%s: status.observedGeneration %d, want %d", what, s.ObservedGeneration, want)
		}
		for _, ct := range owned {
			if c := find2(s, ct); c.Type != ct || c.ObservedGeneration != want {
				t.Errorf("%s: condition %s observedGeneration %d, want %d", what, ct, c.ObservedGeneration, want)
			}
		}
		if c := find2(s, "example.com/gate"); c.ObservedGeneration != 1 {
			t.Errorf("%s: another component's condition observedGeneration %d, want its own 1", what, c.ObservedGeneration)
		}
	}
	s1 := GenerateAPIPodStatus(Input{Pod: p, Runtime: run, RuntimeType: "sim", Now: now})
	check("generation 1", s1, 1)

	// The spec changed in place (an image): generation 3. The conditions'
	// statuses hold, their observedGeneration moves all the same, their
	// transition times stay.
	p2 := p.DeepCopy()
	p2.Generation = 3
	p2.Status = s1
	s2 := GenerateAPIPodStatus(Input{Pod: p2, Runtime: run, RuntimeType: "sim", Now: now.Add(time.Minute)})
	check("generation 3", s2, 3)
	for _, ct := range owned {
		if a, b := find2(s1, ct), find2(s2, ct); a.Status == b.Status && !a.LastTransitionTime.Equal(&b.LastTransitionTime) {
			t.Errorf("%s: transition time moved with the generation alone", ct)
		}
	}
}

// TestRejectedObservedGeneration: a pod the kubelet rejects reports the
// generation it rejected, as upstream's status manager SetPodStatus sets
// status.observedGeneration on every status.
func TestRejectedObservedGeneration(t *testing.T) {
	p := basePod()
	p.Generation = 2
	if s := Rejected(p, "OutOfcpu", "Pod was rejected"); s.ObservedGeneration != 2 || s.Phase != v1.PodFailed {
		t.Fatalf("rejected: phase %s observedGeneration %d, want Failed 2", s.Phase, s.ObservedGeneration)
	}
}
