package replicaset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestDeletionRankingAsUpstream pins the parts of upstream's
// ActivePodsWithRanks (LogarithmicScaleDown) that a plain cascade of keys
// gets wrong: within one log-scale bucket of ready or creation time the
// lower UID goes first and ends the comparison; sidecar restarts break a tie
// of regular restarts; a pod-deletion-cost that is not a canonical integer
// counts as 0.
func TestDeletionRankingAsUpstream(t *testing.T) {
	sidecar := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", RestartCount: n}}
		}
	}
	// 100s and 101s ago are in the same power-of-two bucket (2^36 ns).
	t100, t101 := now.Add(-100*time.Second), now.Add(-101*time.Second)
	tests := []struct {
		name          string
		first, second *corev1.Pod
	}{
		{"ready in the same bucket: lower UID first, restarts not looked at",
			newPod("a", onNode("n"), readySince(t101)), newPod("b", onNode("n"), readySince(t100), restarts(5))},
		{"created in the same bucket: lower UID first",
			newPod("a", onNode("n"), created(t101)), newPod("b", onNode("n"), created(t100))},
		{"equal restarts: more sidecar restarts first",
			newPod("a", onNode("n"), sidecar(3)), newPod("b", onNode("n"), sidecar(0))},
		{"a deletion cost with a plus sign counts as 0",
			newPod("b", onNode("n"), cost("+5")), newPod("a", onNode("n"), cost("1"))},
		{"a deletion cost with leading zeros counts as 0",
			newPod("b", onNode("n"), cost("007")), newPod("a", onNode("n"), cost("1"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := rankedPod{pod: tt.first}, rankedPod{pod: tt.second}
			if !Less(a, b, now) {
				t.Errorf("%s should be deleted before %s", tt.first.Name, tt.second.Name)
			}
			if Less(b, a, now) {
				t.Errorf("order must be antisymmetric")
			}
		})
	}
}
