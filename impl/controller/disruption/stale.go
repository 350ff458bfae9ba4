package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// StalePodDisruptionTimeout is how long a pod may carry
// DisruptionTarget=True without being deleted before the controller
// resets the condition to False (upstream's 2 minutes): the eviction or
// deletion that set it did not happen, for example because the delete
// that should have followed the mark failed.
const StalePodDisruptionTimeout = 2 * time.Minute

// StaleDisruption reports whether pod carries a DisruptionTarget=True
// condition that goes stale, and how long until it does (0: it is stale
// now). A pod being deleted or in a terminal phase, and a condition set by
// the kubelet (TerminationByKubelet, which may precede the deletion by
// any time), never go stale.
func StaleDisruption(pod *corev1.Pod, now time.Time, timeout time.Duration) (bool, time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(timeout-now.Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}

// enqueueStale schedules a look at a pod whose DisruptionTarget condition
// will go stale.
func (c *Controller) enqueueStale(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if stale, after := StaleDisruption(pod, c.now(), StalePodDisruptionTimeout); stale {
		if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			c.staleQueue.AddAfter(key, after)
		}
	}
}

// syncStale resets a stale DisruptionTarget condition to False.
func (c *Controller) syncStale(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s: %w", key, err)
	}
	now := c.now()
	stale, after := StaleDisruption(pod, now, StalePodDisruptionTimeout)
	if !stale {
		return nil
	}
	if after > 0 {
		c.staleQueue.AddAfter(key, after)
		return nil
	}
	next := pod.DeepCopy()
	for i := range next.Status.Conditions {
		if next.Status.Conditions[i].Type == corev1.DisruptionTarget {
			next.Status.Conditions[i] = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse,
				LastTransitionTime: metav1.NewTime(now)}
		}
	}
	// The cached resourceVersion guards the write: a pod changed since
	// (deleted at last, say) is a conflict and is looked at again.
	if _, err := c.client.CoreV1().Pods(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("resetting the stale DisruptionTarget condition of pod %s: %w", key, err)
	}
	return nil
}
