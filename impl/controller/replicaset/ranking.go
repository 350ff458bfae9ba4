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

func deletionCost(pod *corev1.Pod) int64 {
	v, ok := pod.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	c, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return c
}

// logRank buckets the age of t at now by powers of two, so pods of similar
// age compare equal (upstream's logarithmic scale-down); a zero time ranks
// lowest (-1, "youngest").
func logRank(t metav1.Time, now time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	d := now.Sub(t.Time)
	if d <= 0 {
		return 0
	}
	return int64(math.Log2(float64(d)))
}

// Less reports whether a should be deleted before b. The order, as upstream:
//  1. unassigned before assigned;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost first;
//  5. more related pods on the same node first (doubled-up first);
//  6. if both ready: more recently ready first (log-scale buckets);
//  7. more container restarts first;
//  8. more recently created first (log-scale buckets);
//  9. and finally by name/UID so the order is total and deterministic.
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
		if la, lb := logRank(ta, now), logRank(tb, now); la != lb {
			return la < lb
		}
	}
	if xa, xb := podstate.MaxRestarts(pa), podstate.MaxRestarts(pb); xa != xb {
		return xa > xb
	}
	if la, lb := logRank(pa.CreationTimestamp, now), logRank(pb.CreationTimestamp, now); la != lb {
		return la < lb
	}
	if pa.Name != pb.Name {
		return pa.Name > pb.Name
	}
	return pa.UID < pb.UID
}
