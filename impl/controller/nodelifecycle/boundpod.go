package nodelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// BoundPodDecision is what the controller does with a pod it sees bound to
// a node for the first time (upstream's processPod).
type BoundPodDecision int

const (
	// BoundPodIgnore: nothing to do; the monitor passes look after the
	// pod from now on.
	BoundPodIgnore BoundPodDecision = iota
	// BoundPodRetry: the node is not in the cache; try the pod again later.
	BoundPodRetry
	// BoundPodMarkNotReady: the node's Ready is not True; mark the pod
	// not Ready (if it claims Ready, PodsToMarkNotReady).
	BoundPodMarkNotReady
)

func (d BoundPodDecision) String() string {
	switch d {
	case BoundPodIgnore:
		return "Ignore"
	case BoundPodRetry:
		return "Retry"
	case BoundPodMarkNotReady:
		return "MarkNotReady"
	}
	return fmt.Sprintf("BoundPodDecision(%d)", int(d))
}

// DecideBoundPod decides for a pod newly bound to a node (or first seen
// bound) from the controller's health record of the node (nil when no
// monitor pass has recorded it) and whether the node is in the cache, as
// upstream's processPod: no record, or a record without a Ready condition,
// is nothing to do (the node is new; the monitor passes will handle it); a
// recorded node no longer in the cache is retried; a recorded Ready that is
// not True marks the pod not Ready, whoever made it so — the kubelet
// reporting False or the controller Unknown.
func DecideBoundPod(health *Health, nodeFound bool) BoundPodDecision {
	switch {
	case health == nil:
		return BoundPodIgnore
	case !nodeFound:
		return BoundPodRetry
	case health.Ready == "" || health.Ready == corev1.ConditionTrue:
		return BoundPodIgnore
	default:
		return BoundPodMarkNotReady
	}
}

// enqueueBound queues newObj for processPod when it is bound and either
// new to the informer (oldObj nil) or bound to another node than oldObj,
// as upstream's podUpdated: a status update of a bound pod is not queued.
func (c *Controller) enqueueBound(oldObj, newObj any) {
	p, ok := newObj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	if old, ok := oldObj.(*corev1.Pod); ok && old.Spec.NodeName == p.Spec.NodeName {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
		c.podUpdates.Add(key)
	}
}

// processPod applies DecideBoundPod to the pod key: a failed marking, or
// a node missing from the cache, fails the sync so the key is retried.
func (c *Controller) processPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	c.mu.Lock()
	var health *Health
	if h, ok := c.health[pod.Spec.NodeName]; ok {
		copied := *h
		health = &copied
	}
	c.mu.Unlock()
	_, nodeErr := c.nodeLister.Get(pod.Spec.NodeName)
	switch DecideBoundPod(health, nodeErr == nil) {
	case BoundPodRetry:
		return fmt.Errorf("reading node %s of pod %s from the cache: %w", pod.Spec.NodeName, key, nodeErr)
	case BoundPodMarkNotReady:
		for _, p := range PodsToMarkNotReady([]*corev1.Pod{pod}) {
			if err := c.markNotReady(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}
