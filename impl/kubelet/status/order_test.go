package status

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// TestConditionOrder: the conditions the kubelet does not own come first,
// in the API pod's order (upstream's generateAPIPodStatus keeps them so,
// and its status manager's mergePodStatus writes the stored pod's first),
// then the resize conditions, then a DisruptionTarget the kubelet decided
// that the pod did not have yet (in place of the pod's own if it had one),
// then PodReadyToStartContainers, Initialized, Ready, ContainersReady and
// PodScheduled. Both the status generated and the one Merge writes onto
// the stored pod have this order.
func TestConditionOrder(t *testing.T) {
	gateB := condition("z.example.com/lb", "")
	gateA := condition("a.example.com/dns", "")
	preempted := condition(v1.DisruptionTarget, v1.PodReasonPreemptionByScheduler)
	evictedDT := condition(v1.DisruptionTarget, v1.PodReasonTerminationByKubelet)
	evicted := &podsync.Terminal{Phase: v1.PodFailed, Reason: "Evicted", Condition: &evictedDT}
	inProgress := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue}
	own := []string{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}
	// The kubelet's conditions as a status it wrote before left them.
	written := []v1.PodCondition{
		condition(PodReadyToStartContainers, ""), condition(v1.PodInitialized, ""), condition(v1.PodReady, ""),
		condition(v1.ContainersReady, ""), condition(v1.PodScheduled, ""),
	}
	runningPod := func(cs ...v1.PodCondition) *v1.Pod {
		return &v1.Pod{
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}, ReadinessGates: []v1.PodReadinessGate{
				{ConditionType: gateB.Type}, {ConditionType: gateA.Type},
			}},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: cs},
		}
	}
	rs := &podstate.Pod{
		Sandboxes:  []podstate.Sandbox{{ID: "s", Ready: true, IP: "10.0.0.1"}},
		Containers: []podstate.Container{{ID: "c1", Name: "app", SandboxID: "s", State: podstate.ContainerRunning}},
	}
	stopped := &podstate.Pod{
		Sandboxes:  []podstate.Sandbox{{ID: "s", IP: "10.0.0.1"}},
		Containers: []podstate.Container{{ID: "c1", Name: "app", SandboxID: "s", State: podstate.ContainerExited, ExitCode: 137}},
	}
	cat := func(a []string, b ...string) []string { return append(append([]string(nil), b...), a...) }
	for _, tc := range []struct {
		name string
		in   Input
		want []string
	}{
		{"plain pod", Input{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: written}}, Runtime: rs},
			own},
		{"readiness gates set by a controller, in the API's order",
			Input{Pod: runningPod(append(append([]v1.PodCondition(nil), written...), gateB, gateA)...), Runtime: rs},
			cat(own, "z.example.com/lb", "a.example.com/dns")},
		{"a DisruptionTarget from the API (preemption)",
			Input{Pod: runningPod(append([]v1.PodCondition{gateA}, append(append([]v1.PodCondition(nil), written...), preempted)...)...), Runtime: rs},
			cat(own, "a.example.com/dns", "DisruptionTarget/PreemptionByScheduler")},
		{"an evicted pod: the kubelet's DisruptionTarget after the others",
			Input{Pod: runningPod(append(append([]v1.PodCondition(nil), written...), gateB)...), Runtime: stopped,
				Terminal: evicted, PodIsTerminal: true},
			cat(own, "z.example.com/lb", "DisruptionTarget/TerminationByKubelet")},
		{"an evicted pod another component had marked: the kubelet's in its place",
			Input{Pod: runningPod(append([]v1.PodCondition{preempted}, append(append([]v1.PodCondition(nil), written...), gateB)...)...), Runtime: stopped,
				Terminal: evicted, PodIsTerminal: true},
			cat(own, "DisruptionTarget/TerminationByKubelet", "z.example.com/lb")},
		{"a resize in progress",
			Input{Pod: runningPod(append([]v1.PodCondition{gateA}, written...)...), Runtime: rs, Resize: []v1.PodCondition{inProgress}},
			cat(own, "a.example.com/dns", "PodResizeInProgress")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.RuntimeType, tc.in.Now = "sim", now
			st := GenerateAPIPodStatus(tc.in)
			if got := orderSummary(st); !slices.Equal(got, tc.want) {
				t.Errorf("generated conditions %v, want %v", got, tc.want)
			}
			// Written onto the stored pod it was generated from.
			cur := tc.in.Pod.Status.DeepCopy()
			merged := Merge(cur, st)
			if got := orderSummary(merged); !slices.Equal(got, tc.want) {
				t.Errorf("merged conditions %v, want %v", got, tc.want)
			}
			if len(st.Conditions) > 0 && &merged.Conditions[0] != &st.Conditions[0] {
				t.Error("Merge copied a status already in order")
			}
			// Written onto a stored pod whose own conditions lead (as this
			// kubelet wrote them before): the others still come first.
			reordered := *cur
			reordered.Conditions = nil
			for _, c := range cur.Conditions {
				if ownedCondition(c.Type) {
					reordered.Conditions = append(reordered.Conditions, c)
				}
			}
			for _, c := range cur.Conditions {
				if !ownedCondition(c.Type) {
					reordered.Conditions = append(reordered.Conditions, c)
				}
			}
			if got := orderSummary(Merge(&reordered, st)); !slices.Equal(got, tc.want) {
				t.Errorf("merged onto the kubelet-first order: %v, want %v", got, tc.want)
			}
		})
	}
}

// orderSummary lists a status's condition types in order, a
// DisruptionTarget's with its reason.
func orderSummary(s v1.PodStatus) []string {
	var out []string
	for _, c := range s.Conditions {
		if c.Type == v1.DisruptionTarget {
			out = append(out, string(c.Type)+"/"+c.Reason)
			continue
		}
		out = append(out, string(c.Type))
	}
	return out
}
