// Package podstate answers the questions controllers ask about a pod's
// observed status: is it active, ready, available (ready for minReadySeconds).
// The answers follow upstream's pod utilities exactly, since the replica
// counts in ReplicaSet and Deployment status are defined by them.
package podstate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// IsActive reports whether pod counts toward a ReplicaSet's replicas: not
// finished (Succeeded/Failed) and not being deleted.
func IsActive(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded &&
		pod.Status.Phase != corev1.PodFailed &&
		pod.DeletionTimestamp == nil
}

// ReadyCondition returns the pod's Ready condition, or nil.
func ReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	c := ReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsAvailable reports whether the pod has been ready for at least
// minReadySeconds at now (with minReadySeconds 0, ready means available).
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := ReadyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	min := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(min).After(now)
}

// MaxRestarts returns the highest restart count among the pod's containers.
func MaxRestarts(pod *corev1.Pod) int32 {
	var max int32
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount > max {
			max = cs.RestartCount
		}
	}
	return max
}
