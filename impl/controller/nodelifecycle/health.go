package nodelifecycle

import (
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint keys this controller manages, as upstream.
const (
	TaintNotReady           = corev1.TaintNodeNotReady           // node.kubernetes.io/not-ready
	TaintUnreachable        = corev1.TaintNodeUnreachable        // node.kubernetes.io/unreachable
	TaintMemoryPressure     = corev1.TaintNodeMemoryPressure     // node.kubernetes.io/memory-pressure
	TaintDiskPressure       = corev1.TaintNodeDiskPressure       // node.kubernetes.io/disk-pressure
	TaintPIDPressure        = corev1.TaintNodePIDPressure        // node.kubernetes.io/pid-pressure
	TaintNetworkUnavailable = corev1.TaintNodeNetworkUnavailable // node.kubernetes.io/network-unavailable
	TaintUnschedulable      = corev1.TaintNodeUnschedulable      // node.kubernetes.io/unschedulable
)

// Health is what the controller remembers about a node between passes:
// when it last saw the kubelet alive (by its own clock, so node clock skew
// does not matter) and the heartbeat values it saw then.
type Health struct {
	ProbeTime  time.Time
	Heartbeat  metav1.Time
	LeaseRenew time.Time
	// RetryMarkPods: a pass failed to mark the node's pods not Ready, so
	// the next pass marks them again while the node is not Ready
	// (upstream's nodesToRetry). The loop sets it after the marking.
	RetryMarkPods bool
	// Ready is the node's Ready status as the controller last read or
	// wrote it ("" while the node has no Ready condition): upstream's
	// node health status, by which a pod newly bound to the node is
	// marked not Ready (DecideBoundPod). DecideNode sets it to the status
	// the pass leaves; the loop records the one read until the pass's
	// status write succeeds, and keeps it if the write fails.
	Ready corev1.ConditionStatus
}

// Timing holds the grace periods.
type Timing struct {
	// MonitorGrace: a node not heard from for this long is Unknown.
	MonitorGrace time.Duration
	// StartupGrace: the same for a node that never posted a Ready condition.
	StartupGrace time.Duration
}

// NodeDecision is the outcome of one health check of one node.
type NodeDecision struct {
	Health Health
	// Conditions is the node's new status.conditions, or nil if unchanged.
	Conditions []corev1.NodeCondition
	// Taints is the node's new spec.taints, or nil if unchanged.
	Taints []corev1.Taint
	// RecordNotReady and MarkPodsNotReady: once Conditions are written,
	// record the node's NodeNotReady event, and mark its pods not Ready
	// (DecideNotReady).
	RecordNotReady, MarkPodsNotReady bool
}

func readyCondition(conds []corev1.NodeCondition) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == corev1.NodeReady {
			return &conds[i]
		}
	}
	return nil
}

// DecideNode checks one node's health : the kubelet is
// alive while its Ready heartbeat or its Lease renewTime keeps changing;
// after the grace period without either, every kubelet-owned condition
// becomes Unknown ("Kubelet stopped posting node status."). Then the taints
// follow the conditions : Ready=False → not-ready, Ready=Unknown
// → unreachable (NoExecute and NoSchedule), pressure conditions and
// spec.unschedulable → their NoSchedule taints; recovered conditions drop
// their taints.
func DecideNode(node *corev1.Node, lease *coordinationv1.Lease, prev *Health, now time.Time, t Timing) NodeDecision {
	var h Health
	ready := readyCondition(node.Status.Conditions)
	grace := t.MonitorGrace
	switch {
	case prev != nil:
		h = *prev
	case ready == nil:
		h.ProbeTime = node.CreationTimestamp.Time
	default:
		h.ProbeTime = now
	}
	if ready == nil {
		grace = t.StartupGrace
	} else if !ready.LastHeartbeatTime.Equal(&h.Heartbeat) {
		h.Heartbeat = ready.LastHeartbeatTime
		h.ProbeTime = now
	}
	if lease != nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.Time.After(h.LeaseRenew) {
		h.LeaseRenew = lease.Spec.RenewTime.Time
		h.ProbeTime = now
	}
	dec := NodeDecision{Health: h}
	conds := node.Status.Conditions
	if now.After(h.ProbeTime.Add(grace)) {
		next, changed := markUnknown(node, now)
		if changed {
			dec.Conditions = next
			conds = next
		}
	}
	// A node without a Ready condition counts as observed Unknown, as
	// upstream's stand-in condition for a node that never posted status.
	observed := corev1.ConditionUnknown
	if ready != nil {
		observed = ready.Status
	}
	current := readyCondition(conds)
	dec.RecordNotReady, dec.MarkPodsNotReady = DecideNotReady(observed, current, h.RetryMarkPods)
	dec.Health.Ready = ""
	if current != nil {
		dec.Health.Ready = current.Status
	}
	if taints, changed := desiredTaints(node.Spec.Taints, conds, NoExecuteReady(observed, current), node.Spec.Unschedulable, now); changed {
		dec.Taints = taints
	}
	return dec
}

// NoExecuteReady is the Ready status the not-ready/unreachable NoExecute
// taint of a node follows after a monitor pass: the status the pass read
// (observed, Unknown for a node without a Ready condition), not the one it
// wrote (current), as upstream's processTaintBaseEviction, which is given
// the observed condition. So when the controller turns Ready from True to
// Unknown, the unreachable NoSchedule taint comes at once (it follows the
// conditions) and the NoExecute one is queued by the next pass, which reads
// Unknown. "" (the node still has no Ready condition) leaves the NoExecute
// taints as they are.
func NoExecuteReady(observed corev1.ConditionStatus, current *corev1.NodeCondition) corev1.ConditionStatus {
	if current == nil {
		return ""
	}
	return observed
}

// kubeletConditions are the conditions a silent kubelet leaves Unknown.
var kubeletConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

func markUnknown(node *corev1.Node, now time.Time) ([]corev1.NodeCondition, bool) {
	conds := append([]corev1.NodeCondition(nil), node.Status.Conditions...)
	changed := false
	for _, ct := range kubeletConditions {
		found := false
		for i := range conds {
			if conds[i].Type != ct {
				continue
			}
			found = true
			if conds[i].Status != corev1.ConditionUnknown {
				conds[i].Status = corev1.ConditionUnknown
				conds[i].Reason = "NodeStatusUnknown"
				conds[i].Message = "Kubelet stopped posting node status."
				conds[i].LastTransitionTime = metav1.NewTime(now)
				changed = true
			}
		}
		if !found {
			conds = append(conds, corev1.NodeCondition{
				Type: ct, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: metav1.NewTime(now),
			})
			changed = true
		}
	}
	return conds, changed
}

func conditionStatus(conds []corev1.NodeCondition, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

var managedKeys = map[string]bool{
	TaintNotReady: true, TaintUnreachable: true, TaintMemoryPressure: true, TaintDiskPressure: true,
	TaintPIDPressure: true, TaintNetworkUnavailable: true, TaintUnschedulable: true,
}

// desiredTaints returns the node's taints as they should be, and whether
// that changes them: the NoSchedule condition taints and the unschedulable
// taint follow conds and unschedulable; the not-ready/unreachable NoExecute
// taint follows noExecuteReady (NoExecuteReady; "" keeps the current ones).
func desiredTaints(current []corev1.Taint, conds []corev1.NodeCondition, noExecuteReady corev1.ConditionStatus, unschedulable bool, now time.Time) ([]corev1.Taint, bool) {
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	want := map[keyEffect]bool{}
	switch conditionStatus(conds, corev1.NodeReady) {
	case corev1.ConditionFalse:
		want[keyEffect{TaintNotReady, corev1.TaintEffectNoSchedule}] = true
	case corev1.ConditionUnknown:
		want[keyEffect{TaintUnreachable, corev1.TaintEffectNoSchedule}] = true
	}
	switch noExecuteReady {
	case corev1.ConditionFalse:
		want[keyEffect{TaintNotReady, corev1.TaintEffectNoExecute}] = true
	case corev1.ConditionUnknown:
		want[keyEffect{TaintUnreachable, corev1.TaintEffectNoExecute}] = true
	case "":
		for _, t := range current {
			if isConditionNoExecute(t) {
				want[keyEffect{t.Key, t.Effect}] = true
			}
		}
	}
	for ct, key := range map[corev1.NodeConditionType]string{
		corev1.NodeMemoryPressure: TaintMemoryPressure, corev1.NodeDiskPressure: TaintDiskPressure,
		corev1.NodePIDPressure: TaintPIDPressure, corev1.NodeNetworkUnavailable: TaintNetworkUnavailable,
	} {
		if conditionStatus(conds, ct) == corev1.ConditionTrue {
			want[keyEffect{key, corev1.TaintEffectNoSchedule}] = true
		}
	}
	if unschedulable {
		want[keyEffect{TaintUnschedulable, corev1.TaintEffectNoSchedule}] = true
	}
	var out []corev1.Taint
	changed := false
	have := map[keyEffect]bool{}
	for _, t := range current {
		ke := keyEffect{t.Key, t.Effect}
		if managedKeys[t.Key] && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule) && !want[ke] {
			changed = true
			continue
		}
		have[ke] = true
		out = append(out, t)
	}
	var added []corev1.Taint
	for ke := range want {
		if have[ke] {
			continue
		}
		t := corev1.Taint{Key: ke.key, Effect: ke.effect}
		if ke.effect == corev1.TaintEffectNoExecute {
			added := metav1.NewTime(now)
			t.TimeAdded = &added
		}
		added = append(added, t)
		changed = true
	}
	sort.Slice(added, func(i, j int) bool {
		if added[i].Key != added[j].Key {
			return added[i].Key < added[j].Key
		}
		return added[i].Effect < added[j].Effect
	})
	out = append(out, added...)
	if out == nil {
		out = []corev1.Taint{}
	}
	return out, changed
}

// DecideNotReady is upstream's monitorNodeHealth rule for when a monitor
// pass records the node's NodeNotReady event and marks its pods not Ready.
// observed is the node's Ready status as the pass read it (Unknown for a
// node with no Ready condition), current its Ready condition after the pass
// (nil if it still has none), retry whether an earlier pass failed to mark
// its pods (Health.RetryMarkPods).
//
// Only the pass on which the controller itself turns Ready from True does
// both; after a failed marking, later passes mark the pods again (without
// the event) while the node read is not Ready. So a kubelet that reports
// Ready=False itself keeps its pods' readiness, also when it then goes
// silent and the controller turns its Ready from False to Unknown.
func DecideNotReady(observed corev1.ConditionStatus, current *corev1.NodeCondition, retry bool) (recordEvent, markPods bool) {
	if current == nil {
		return false, false
	}
	if observed == corev1.ConditionTrue && current.Status != corev1.ConditionTrue {
		return true, true
	}
	return false, retry && observed != corev1.ConditionTrue
}

// PodsToMarkNotReady returns the pods of pods whose Ready condition is not
// already False: marking them turns it False (upstream's MarkPodsNotReady,
// which also marks terminating and finished pods; a pod with no Ready
// condition is left alone).
func PodsToMarkNotReady(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				if c.Status != corev1.ConditionFalse {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}
