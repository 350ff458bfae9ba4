package props

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The trace validator accepts an observed step the model can take and
// rejects one it cannot: a bound pod moving to another node (SCHED-1's
// step form) is no sequence of model actions.
func TestTraceValidation(t *testing.T) {
	m, err := NewModel(2)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAbstraction(m)
	first := testObservation()
	s0, ok := ModelState(a, first, nil)
	if !ok {
		t.Fatal("test observation outside the model's bounds")
	}

	t.Run("scaling down one replica is a model behaviour", func(t *testing.T) {
		ob := testObservation()
		ob.Deployments[0].Spec.Replicas = ptr(int32(1))
		ob.Deployments[0].Generation = 3
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, Depth: 4, SmallDiff: 4}
		v.Step(s0)
		if msg := v.Step(s1); msg != "" || v.Validated != 1 {
			t.Fatalf("validated %d, failure: %s", v.Validated, msg)
		}
	})
	t.Run("a bound pod moving to another node is not", func(t *testing.T) {
		ob := testObservation()
		ob.Pods[1].Spec.NodeName = "node-2"
		ob.Sandboxes[1].Node = "node-2"
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, Depth: 4, SmallDiff: 4}
		v.Step(s0)
		msg := v.Step(s1)
		if msg == "" || !strings.Contains(msg, "podNode") {
			t.Fatalf("moving a bound pod validated (validated %d, skipped %d), message %q", v.Validated, v.Skipped, msg)
		}
	})
	t.Run("a step too large to search is skipped, not failed", func(t *testing.T) {
		ob := testObservation()
		ob.Pods = nil
		ob.Sandboxes = nil
		ob.Pods = append(ob.Pods, testPod("x", "u9", "", v1.PodPending, "d1-a"))
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, Depth: 4, SmallDiff: 2}
		v.Step(s0)
		if msg := v.Step(s1); msg != "" || v.Skipped != 1 {
			t.Fatalf("skipped %d, failure %q", v.Skipped, msg)
		}
	})
}
