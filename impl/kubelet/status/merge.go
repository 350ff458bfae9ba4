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
//   - the order is upstream's mergePodStatus's: cur's other conditions
//     first, in cur's order (st's DisruptionTarget in place of cur's),
//     then st's own in st's order, with st's DisruptionTarget where st
//     has it when cur had none (GenerateAPIPodStatus's order);
//   - a terminal phase is final (KUBELET-5): a stored terminal phase, its
//     reason and message stay (Manager.Write refuses outright a write
//     that would make the pod non-terminal).
//
// Neither cur nor st's slices are changed. When st is already in that
// order with cur's other conditions (almost always) st is returned as it
// is, without allocating.
func Merge(cur *v1.PodStatus, st v1.PodStatus) v1.PodStatus {
	curTerminal := podsync.IsTerminalPhase(cur.Phase)
	if curTerminal {
		st.Phase, st.Reason, st.Message = cur.Phase, cur.Reason, cur.Message
	}
	var decided *v1.PodCondition
	if dt := findCondition(st.Conditions, v1.DisruptionTarget); dt != nil && !curTerminal && podsync.IsTerminalPhase(st.Phase) {
		decided = dt
	}
	// st's DisruptionTarget is kept where st has it when cur has none.
	keepDecided := decided != nil && findCondition(cur.Conditions, v1.DisruptionTarget) == nil
	if merged(cur.Conditions, st.Conditions, decided, keepDecided) {
		return st
	}
	out, _ := appendOtherConditions(make([]v1.PodCondition, 0, len(cur.Conditions)+len(st.Conditions)), cur.Conditions, decided)
	for _, c := range st.Conditions {
		if ownedCondition(c.Type) || (keepDecided && c.Type == v1.DisruptionTarget) {
			out = append(out, c)
		}
	}
	st.Conditions = out
	return st
}

// merged reports whether st is already what Merge makes of cur and st:
// cur's other conditions (decided in place of the one of its type) and
// then only conditions Merge keeps of st (its own, and its
// DisruptionTarget if keepDecided). It allocates nothing.
func merged(cur, st []v1.PodCondition, decided *v1.PodCondition, keepDecided bool) bool {
	n := 0
	for i := range cur {
		c := &cur[i]
		if ownedCondition(c.Type) {
			continue
		}
		if decided != nil && c.Type == decided.Type {
			c = decided
		}
		if n >= len(st) || !apiequality.Semantic.DeepEqual(&st[n], c) {
			return false
		}
		n++
	}
	for _, c := range st[n:] {
		if !ownedCondition(c.Type) && !(keepDecided && c.Type == v1.DisruptionTarget) {
			return false
		}
	}
	return true
}
