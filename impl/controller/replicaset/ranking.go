package replicaset

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/controller/podstate"
)

// PodDeletionCostAnnotation lets users say which pods to remove first on
// scale-down (lower cost first).
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

type rankedPod struct {
	pod *corev1.Pod
	// colocated counts active related pods on the same node.
	colocated int
}

// phaseOrdinal orders phases for deletion: pending, then unknown, then running.
func phaseOrdinal(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 3
}

// deletionCost is the pod's pod-deletion-cost, 0 when absent or not a
// canonical int32 (no sign "+", no leading zeros), as upstream
// GetDeletionCostFromPodAnnotations.
func deletionCost(pod *corev1.Pod) int64 {
	v, ok := pod.Annotations[PodDeletionCostAnnotation]
	if !ok || v == "" {
		return 0
	}
	if first := v[0]; !(first == '-' || v == "0" || (first >= '1' && first <= '9')) {
		return 0
	}
	c, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return c
}

// maxRestarts returns the highest restart count of the pod's regular
// containers and, apart, of its sidecars (init containers with restartPolicy
// Always), which upstream compares only when the first are equal.
func maxRestarts(pod *corev1.Pod) (regular, sidecar int32) {
	regular = podstate.MaxRestarts(pod)
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if sidecars[cs.Name] && cs.RestartCount > sidecar {
			sidecar = cs.RestartCount
		}
	}
	return regular, sidecar
}

// logRank buckets the age of t at now by powers of two (upstream's
// logarithmic scale-down); a time not in the past ranks -1.
func logRank(t metav1.Time, now time.Time) int64 {
	d := now.Sub(t.Time)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// newerFirst compares two different times as upstream's ranking does: a zero
// time (or a zero now) goes first, otherwise the younger log-scale bucket,
// and within one bucket the pod with the lower UID. decided is false when
// the times are equal.
func newerFirst(ta, tb metav1.Time, a, b *corev1.Pod, now time.Time) (less, decided bool) {
	if ta.Equal(&tb) {
		return false, false
	}
	if now.IsZero() || ta.IsZero() || tb.IsZero() {
		if ta.IsZero() || tb.IsZero() {
			return ta.IsZero(), true
		}
		return ta.After(tb.Time), true
	}
	if la, lb := logRank(ta, now), logRank(tb, now); la != lb {
		return la < lb, true
	}
	return a.UID < b.UID, true
}

// Less reports whether a should be deleted before b. The order, as upstream
// (ActivePodsWithRanks with LogarithmicScaleDown):
//  1. unassigned before assigned;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost first;
//  5. more related pods on the same node first (doubled-up first);
//  6. if both ready at different times: more recently ready first (log-scale
//     buckets; within a bucket the lower UID, which ends the comparison);
//  7. more container restarts first (regular containers, then sidecars);
//  8. if created at different times: more recently created first (log-scale
//     buckets; within a bucket the lower UID);
//  9. finally by name/UID so the order is total and deterministic (upstream
//     leaves such pods in any order).
func Less(a, b rankedPod, now time.Time) bool {
	pa, pb := a.pod, b.pod
	if (pa.Spec.NodeName == "") != (pb.Spec.NodeName == "") {
		return pa.Spec.NodeName == ""
	}
	if oa, ob := phaseOrdinal(pa.Status.Phase), phaseOrdinal(pb.Status.Phase); oa != ob {
		return oa < ob
	}
	ra, rb := podstate.IsReady(pa), podstate.IsReady(pb)
	if ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(pa), deletionCost(pb); ca != cb {
		return ca < cb
	}
	if a.colocated != b.colocated {
		return a.colocated > b.colocated
	}
	if ra && rb {
		ta, tb := podstate.ReadyCondition(pa).LastTransitionTime, podstate.ReadyCondition(pb).LastTransitionTime
		if less, decided := newerFirst(ta, tb, pa, pb, now); decided {
			return less
		}
	}
	xa, sa := maxRestarts(pa)
	xb, sb := maxRestarts(pb)
	if xa != xb {
		return xa > xb
	}
	if sa != sb {
		return sa > sb
	}
	if less, decided := newerFirst(pa.CreationTimestamp, pb.CreationTimestamp, pa, pb, now); decided {
		return less
	}
	if pa.Name != pb.Name {
		return pa.Name > pb.Name
	}
	return pa.UID < pb.UID
}
