package status

import (
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// Merge is the status to write onto a pod whose stored status is cur when
// the kubelet generated st, possibly from an older view of the pod (the
// source lags, or a conflict retry re-read the pod). It is upstream's
// status manager merge, in semantics:
//
//   - the conditions the kubelet owns are st's; every other condition is
//     cur's, as the components that set them left it (a DisruptionTarget
//     or readiness gate set since st's view was read stays; one removed
//     since is not brought back);
//   - except st's DisruptionTarget when this write moves the pod into a
//     terminal phase: the kubelet decided it with that phase (an
//     eviction). Once the stored pod is terminal its DisruptionTarget
//     stands, so a later write from an older view cannot drop it;
//   - a terminal phase is final (KUBELET-5): a stored terminal phase, its
//     reason and message stay (Manager.Write refuses outright a write
//     that would make the pod non-terminal).
//
// Neither cur nor st's slices are changed. When st already carries cur's
// other conditions (almost always: most pods have none) st is returned as
// it is, without allocating.
func Merge(cur *v1.PodStatus, st v1.PodStatus) v1.PodStatus {
	curTerminal := podsync.IsTerminalPhase(cur.Phase)
	if curTerminal {
		st.Phase, st.Reason, st.Message = cur.Phase, cur.Reason, cur.Message
	}
	var decided *v1.PodCondition
	if dt := findCondition(st.Conditions, v1.DisruptionTarget); dt != nil && !curTerminal && podsync.IsTerminalPhase(st.Phase) {
		decided = dt
	}
	others := otherConditions(cur.Conditions, decided)
	if sameOtherConditions(st.Conditions, others) {
		return st
	}
	out := make([]v1.PodCondition, 0, len(st.Conditions)+len(others))
	for _, c := range st.Conditions {
		if ownedCondition(c.Type) {
			out = append(out, c)
		}
	}
	st.Conditions = append(out, others...)
	return st
}

// sameOtherConditions reports whether the conditions of cs the kubelet does
// not own are others, in order, and all follow the kubelet's own (the
// order GenerateAPIPodStatus and Merge write them in).
func sameOtherConditions(cs, others []v1.PodCondition) bool {
	n := 0
	for i := range cs {
		if ownedCondition(cs[i].Type) {
			if n > 0 {
				return false
			}
			continue
		}
		if n >= len(others) || !apiequality.Semantic.DeepEqual(cs[i], others[n]) {
			return false
		}
		n++
	}
	return n == len(others)
}
