package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeproof/kubeproof/impl/controller/podstate"
)

// Reasons of the ReplicaFailure condition, as upstream.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// CalculateStatus derives the ReplicaSet's status from the active pods it
// owns: replicas, fully labeled, ready and available counts,
// observedGeneration, terminatingReplicas (the terminating pods it controls;
// upstream's DeploymentReplicaSetTerminatingReplicas, on by default), and the ReplicaFailure condition, set while creating
// or deleting pods fails (manageErr with the direction of the failed change)
// and removed once a sync succeeds.
func CalculateStatus(rs *appsv1.ReplicaSet, owned, terminating []*corev1.Pod, manageErr error, wantedMore bool, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	for _, p := range owned {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if podstate.IsReady(p) {
			ready++
			if podstate.IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	st.Replicas = int32(len(owned))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	n := int32(len(terminating))
	st.TerminatingReplicas = &n
	st.ObservedGeneration = rs.Generation

	idx := -1
	for i, c := range st.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure {
			idx = i
		}
	}
	switch {
	case manageErr != nil && idx < 0:
		reason := ReasonFailedDelete
		if wantedMore {
			reason = ReasonFailedCreate
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && idx >= 0:
		st.Conditions = append(st.Conditions[:idx:idx], st.Conditions[idx+1:]...)
		if len(st.Conditions) == 0 {
			st.Conditions = nil
		}
	}
	return st
}

// RequeueAfterForAvailability returns how long to wait before the next pod
// becomes available by minReadySeconds alone (no event will announce it), or
// 0 when nothing is waiting.
func RequeueAfterForAvailability(rs *appsv1.ReplicaSet, owned []*corev1.Pod, now time.Time) time.Duration {
	if rs.Spec.MinReadySeconds == 0 {
		return 0
	}
	var next time.Duration
	min := time.Duration(rs.Spec.MinReadySeconds) * time.Second
	for _, p := range owned {
		c := podstate.ReadyCondition(p)
		if c == nil || c.Status != corev1.ConditionTrue || podstate.IsAvailable(p, rs.Spec.MinReadySeconds, now) {
			continue
		}
		wait := c.LastTransitionTime.Add(min).Sub(now)
		if wait <= 0 {
			wait = time.Second
		}
		if next == 0 || wait < next {
			next = wait
		}
	}
	return next
}
