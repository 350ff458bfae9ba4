package status

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

func condition(t v1.PodConditionType, reason string) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: v1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(now)}
}

// conditionSummary lists a status's conditions as type/reason, in order.
func conditionSummary(s v1.PodStatus) []string {
	var out []string
	for _, c := range s.Conditions {
		out = append(out, string(c.Type)+"/"+c.Reason)
	}
	return out
}

func TestMerge(t *testing.T) {
	ready := condition(v1.PodReady, "")
	byKubelet := condition(v1.DisruptionTarget, "TerminationByKubelet")
	byTaints := condition(v1.DisruptionTarget, "DeletionByTaintManager")
	gate := condition("example.com/gate", "")
	status := func(phase v1.PodPhase, reason string, cs ...v1.PodCondition) v1.PodStatus {
		return v1.PodStatus{Phase: phase, Reason: reason, Conditions: cs}
	}
	for _, tc := range []struct {
		name        string
		cur, st     v1.PodStatus
		phase       v1.PodPhase
		reason      string
		want        []string
		sameAsWrite bool // st returned as it is
	}{
		{"no other conditions: st as it is",
			status(v1.PodRunning, ""), status(v1.PodRunning, "", ready),
			v1.PodRunning, "", []string{"Ready/"}, true},
		{"an eviction's DisruptionTarget moves the pod to Failed",
			status(v1.PodRunning, "", ready), status(v1.PodFailed, "Evicted", ready, byKubelet),
			v1.PodFailed, "Evicted", []string{"Ready/", "DisruptionTarget/TerminationByKubelet"}, true},
		{"a write from an older view keeps the evicted pod's DisruptionTarget",
			status(v1.PodFailed, "Evicted", ready, byKubelet), status(v1.PodFailed, "Evicted", ready),
			v1.PodFailed, "Evicted", []string{"DisruptionTarget/TerminationByKubelet", "Ready/"}, false},
		{"a DisruptionTarget another component set meanwhile stays",
			status(v1.PodRunning, "", ready, byTaints), status(v1.PodSucceeded, "", ready),
			v1.PodSucceeded, "", []string{"DisruptionTarget/DeletionByTaintManager", "Ready/"}, false},
		{"a DisruptionTarget removed since the view is not brought back",
			status(v1.PodRunning, "", ready), status(v1.PodRunning, "", ready, byTaints),
			v1.PodRunning, "", []string{"Ready/"}, false},
		{"the stored terminal pod's DisruptionTarget stands",
			status(v1.PodFailed, "", ready, byTaints), status(v1.PodFailed, "Evicted", ready, byKubelet),
			v1.PodFailed, "", []string{"DisruptionTarget/DeletionByTaintManager", "Ready/"}, false},
		{"a terminal phase is final (KUBELET-5)",
			status(v1.PodSucceeded, ""), status(v1.PodFailed, "Evicted", ready),
			v1.PodSucceeded, "", []string{"Ready/"}, true},
		{"other conditions come first, in the stored pod's order",
			status(v1.PodRunning, "", gate, ready, byTaints), status(v1.PodRunning, "", ready),
			v1.PodRunning, "", []string{"example.com/gate/", "DisruptionTarget/DeletionByTaintManager", "Ready/"}, false},
		{"st already in order with the stored pod's others: as it is",
			status(v1.PodRunning, "", ready, gate), status(v1.PodRunning, "", gate, ready),
			v1.PodRunning, "", []string{"example.com/gate/", "Ready/"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, st := tc.cur.DeepCopy(), tc.st.DeepCopy()
			got := Merge(cur, *st)
			if got.Phase != tc.phase || got.Reason != tc.reason {
				t.Errorf("phase %s %q, want %s %q", got.Phase, got.Reason, tc.phase, tc.reason)
			}
			if s := conditionSummary(got); !slices.Equal(s, tc.want) {
				t.Errorf("conditions %v, want %v", s, tc.want)
			}
			same := len(got.Conditions) > 0 && len(st.Conditions) > 0 && &got.Conditions[0] == &st.Conditions[0]
			if len(got.Conditions) > 0 && same != tc.sameAsWrite {
				t.Errorf("st's conditions reused: %v, want %v", same, tc.sameAsWrite)
			}
			if !Equal(cur, &tc.cur) || !Equal(st, &tc.st) {
				t.Error("Merge changed its arguments")
			}
		})
	}
}

// A DisruptionTarget decided with a terminal phase is reported with every
// status of that phase, whatever the view holds; not once the stored
// phase is another terminal one.
func TestTerminalConditionIsReported(t *testing.T) {
	dt := condition(v1.DisruptionTarget, "TerminationByKubelet")
	evicted := &podsync.Terminal{Phase: v1.PodFailed, Reason: "Evicted", Condition: &dt}
	pod := func(phase v1.PodPhase, reason string, cs ...v1.PodCondition) *v1.Pod {
		return &v1.Pod{
			Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
			Status: v1.PodStatus{Phase: phase, Reason: reason, Conditions: cs},
		}
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string // DisruptionTarget's reason, "" for none
	}{
		{"from a running view", pod(v1.PodRunning, ""), "TerminationByKubelet"},
		{"replacing the view's", pod(v1.PodRunning, "", condition(v1.DisruptionTarget, "EvictionByEvictionAPI")), "TerminationByKubelet"},
		{"from a view that lost it", pod(v1.PodFailed, "Evicted"), "TerminationByKubelet"},
		{"not on a pod that finished otherwise", pod(v1.PodSucceeded, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := GenerateAPIPodStatus(Input{Pod: tc.pod, Runtime: &podstate.Pod{}, Terminal: evicted, PodIsTerminal: true, Now: now})
			got := ""
			if c := findCondition(st.Conditions, v1.DisruptionTarget); c != nil {
				got = c.Reason
			}
			if got != tc.want {
				t.Errorf("DisruptionTarget %q, want %q (conditions %v)", got, tc.want, conditionSummary(st))
			}
		})
	}
}
