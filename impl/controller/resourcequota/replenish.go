package resourcequota

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
)

// Replenishment: which changes of an observed object make the controller
// recount, at once, the quotas of the object's namespace that count its
// resource. A delete always does; an update only when ReplenishOnUpdate
// says so (kube-controller-manager's default update filter); anything
// else waits for the periodic full recount.

var serviceResource = corev1.Resource("services")

// ReplenishOnUpdate tells whether an update of an object of gr from
// oldObj to newObj is a replenishment, as upstream's DefaultUpdateFilter
// (kube-controller-manager 1.37, in-place resize on by default):
//
//   - a pod: when a container or init container whose status the old pod
//     had reports other resources in the new one (a resize carried out:
//     status.containerStatuses[].resources, matched by name; a status the
//     old pod lacked does not count, nor a change of spec alone), when it
//     enters or leaves the Terminating scope (spec.activeDeadlineSeconds
//     set, >= 0), or when it stops counting (quota.PodCounts: terminal
//     phase, deletion grace period over at now);
//   - a service: when its type moves between NodePort, LoadBalancer and
//     the rest (the types that use services.nodeports and
//     services.loadbalancers); a change of its ports alone does not;
//   - anything else, never. (Upstream's PersistentVolumeClaim case,
//     allocated storage under RecoverVolumeExpansionFailure, does not
//     arise: this API server serves no PersistentVolumeClaims.)
//
// A pod that starts counting again, or changes its QoS class, is not a
// replenishment: neither happens to a stored pod.
func ReplenishOnUpdate(gr schema.GroupResource, oldObj, newObj runtime.Object, now time.Time) bool {
	switch gr {
	case podResource:
		old, ok1 := oldObj.(*corev1.Pod)
		pod, ok2 := newObj.(*corev1.Pod)
		if !ok1 || !ok2 {
			return false
		}
		if statusResourcesChanged(old.Status.ContainerStatuses, pod.Status.ContainerStatuses) ||
			statusResourcesChanged(old.Status.InitContainerStatuses, pod.Status.InitContainerStatuses) {
			return true
		}
		if isTerminating(old) != isTerminating(pod) {
			return true
		}
		return quotaeval.PodCounts(old, now) && !quotaeval.PodCounts(pod, now)
	case serviceResource:
		old, ok1 := oldObj.(*corev1.Service)
		svc, ok2 := newObj.(*corev1.Service)
		if !ok1 || !ok2 {
			return false
		}
		return quotaServiceType(old) != quotaServiceType(svc)
	}
	return false
}

// statusResourcesChanged: a container of old reports other resources in
// new (looked up by name; one new lacks is no change).
func statusResourcesChanged(old, cur []corev1.ContainerStatus) bool {
	for i := range old {
		for j := range cur {
			if cur[j].Name != old[i].Name {
				continue
			}
			if !apiequality.Semantic.DeepEqual(old[i].Resources, cur[j].Resources) {
				return true
			}
			break
		}
	}
	return false
}

// isTerminating: the pod is in the Terminating quota scope.
func isTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// quotaServiceType is the service's type as quota tells them apart:
// NodePort, LoadBalancer, or "" for any other.
func quotaServiceType(svc *corev1.Service) corev1.ServiceType {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		return svc.Spec.Type
	}
	return ""
}

// Replenishes tells whether a replenishment for an object of gr
// recounts q: some name of q's status.hard (what the controller last
// wrote, as upstream; a quota not yet synced is recounted by its own
// add event) is one gr's quota evaluator matches (quota.MatchesResource).
func Replenishes(q *corev1.ResourceQuota, gr schema.GroupResource) bool {
	for n := range q.Status.Hard {
		if quotaeval.MatchesResource(gr, n) {
			return true
		}
	}
	return false
}
