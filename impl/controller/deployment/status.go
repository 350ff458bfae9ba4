package deployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition sets c, unless a condition of its type with the same status
// and reason exists; an unchanged status keeps its lastTransitionTime.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// calculateStatus derives the Deployment's status from its ReplicaSets
// (counts, terminatingReplicas) and sets the Available condition: True once at least
// replicas-maxUnavailable pods are available.
func (p *planner) calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) appsv1.DeploymentStatus {
	d := p.d
	available := sumStatus(all, func(s appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	unavailable := max(sumSpec(all)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(all, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		ReadyReplicas:       sumStatus(all, func(s appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas }),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
		TerminatingReplicas: terminatingReplicas(all),
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	if available >= *d.Spec.Replicas-MaxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", p.now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", p.now))
	}
	return st
}

// terminatingReplicas sums the ReplicaSets' status.terminatingReplicas, as
// upstream with DeploymentReplicaSetTerminatingReplicas (on by default): a
// ReplicaSet its controller has not synced yet (observedGeneration 0, no
// count) adds nothing; one synced without a count makes the total unknown.
func terminatingReplicas(all []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range all {
		switch {
		case rs == nil:
		case rs.Status.TerminatingReplicas == nil && rs.Status.ObservedGeneration == 0:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

func (p *planner) syncDeploymentStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) {
	p.d.Status = p.calculateStatus(all, newRS)
}

func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	want := *d.Spec.Replicas
	return st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want && st.ObservedGeneration >= d.Generation
}

func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

func (p *planner) timedOut(st *appsv1.DeploymentStatus) bool {
	if !p.hasProgressDeadline() {
		return false
	}
	c := getCondition(*st, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewReplicaSetAvailable {
		return false
	}
	if c.Reason == ReasonProgressDeadlineExceeded {
		return true
	}
	deadline := time.Duration(*p.d.Spec.ProgressDeadlineSeconds) * time.Second
	return c.LastUpdateTime.Add(deadline).Before(p.now)
}

// syncRolloutStatus computes status during a rollout, including the
// Progressing condition : NewReplicaSetAvailable when complete,
// ReplicaSetUpdated while pods move, ProgressDeadlineExceeded when nothing
// moved for progressDeadlineSeconds. ReplicaSet failures are surfaced as
// the Deployment's ReplicaFailure condition.
func (p *planner) syncRolloutStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) {
	d := p.d
	st := p.calculateStatus(all, newRS)
	if !p.hasProgressDeadline() {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if p.hasProgressDeadline() && !complete {
		switch {
		case deploymentComplete(d, &st):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, msg, p.now))
		case deploymentProgressing(d, &st):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, msg, p.now)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, c)
		case p.timedOut(&st):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, msg, p.now))
		}
	}
	if f := replicaFailure(all, newRS); f != nil {
		setCondition(&st, *f)
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	d.Status = st
	p.plan.RequeueAfter = p.requeueForDeadline(&st)
}

func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	ordered := append([]*appsv1.ReplicaSet{newRS}, all...)
	for _, rs := range ordered {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason,
					Message: c.Message, LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime}
			}
		}
	}
	return nil
}

// requeueForDeadline is when to look again so the progress deadline is
// noticed without any event: just after lastUpdateTime+deadline.
func (p *planner) requeueForDeadline(st *appsv1.DeploymentStatus) time.Duration {
	c := getCondition(*st, appsv1.DeploymentProgressing)
	if !p.hasProgressDeadline() || c == nil || deploymentComplete(p.d, st) || c.Reason == ReasonProgressDeadlineExceeded {
		return 0
	}
	after := c.LastUpdateTime.Add(time.Duration(*p.d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(p.now)
	if after < time.Second {
		return time.Second
	}
	return after + time.Second
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition (reasons DeploymentPaused / DeploymentResumed).
func (p *planner) checkPausedConditions() {
	if !p.hasProgressDeadline() {
		return
	}
	d := p.d
	c := getCondition(d.Status, appsv1.DeploymentProgressing)
	if c != nil && c.Reason == ReasonProgressDeadlineExceeded {
		return
	}
	pausedCond := c != nil && c.Reason == ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", p.now))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed", p.now))
	}
}
