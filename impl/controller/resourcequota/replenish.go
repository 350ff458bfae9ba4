package resourcequota

import (
	"strings"
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

var (
	serviceResource = corev1.Resource("services")
	pvcResource     = corev1.Resource("persistentvolumeclaims")
)

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
// add event) is one gr's quota evaluator matches (MatchesResource).
func Replenishes(q *corev1.ResourceQuota, gr schema.GroupResource) bool {
	for n := range q.Status.Hard {
		if MatchesResource(gr, n) {
			return true
		}
	}
	return false
}

// MatchesResource tells whether quota name n is one upstream's evaluator
// of gr matches: for pods, pods, count/pods, cpu, memory,
// ephemeral-storage and their requests. and limits. names,
// hugepages-<size> and requests.hugepages-<size>, and requests.<name> of
// an extended resource (or of a DRA device class,
// requests.deviceclass.resource.kubernetes.io/<class>); for persistent
// volume claims, also requests.storage and the per storage class names;
// for every other resource the names quota.CountedResource gives it
// (count/<resource>[.<group>], the legacy bare names, and for services
// services.loadbalancers and services.nodeports).
func MatchesResource(gr schema.GroupResource, n corev1.ResourceName) bool {
	switch gr {
	case podResource:
		return podQuotaName(n)
	case pvcResource:
		s := string(n)
		if n == corev1.ResourceRequestsStorage ||
			strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourceRequestsStorage)) ||
			strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)) {
			return true
		}
	}
	counted, ok := quotaeval.CountedResource(n)
	return ok && counted == gr
}

// storageClassSuffix ends the storage class part of a claim's per class
// quota name (<class>.storageclass.storage.k8s.io/requests.storage).
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// podNames are the fixed names upstream's pod evaluator matches.
var podNames = map[corev1.ResourceName]bool{
	"count/pods": true, corev1.ResourcePods: true,
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
	corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true, corev1.ResourceRequestsEphemeralStorage: true,
	corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true, corev1.ResourceLimitsEphemeralStorage: true,
}

// deviceClassRequests prefixes the implicit extended resource names of
// DRA device classes in a quota.
const deviceClassRequests = corev1.DefaultResourceRequestsPrefix + "deviceclass.resource.kubernetes.io/"

func podQuotaName(n corev1.ResourceName) bool {
	s := string(n)
	if podNames[n] || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
		return true
	}
	if !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	// An extended resource: not native (no domain, or kubernetes.io's).
	native := !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
	return !native || strings.HasPrefix(s, deviceClassRequests)
}
