package quota

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var pvcResource = corev1.Resource("persistentvolumeclaims")

// MatchesResource tells whether quota name n is one upstream's quota
// evaluator of gr matches (its MatchingResources): for pods, pods,
// count/pods, cpu, memory, ephemeral-storage and their requests. and
// limits. names, hugepages-<size> and requests.hugepages-<size>, and
// requests.<name> of an extended resource (or of a DRA device class,
// requests.deviceclass.resource.kubernetes.io/<class>); for persistent
// volume claims, also requests.storage and the per storage class names;
// for every other resource the names CountedResource gives it
// (count/<resource>[.<group>], the legacy bare names, and for services
// services.loadbalancers and services.nodeports). Admission restricts a
// write by the names of a quota's status.hard its resource matches; the
// controller replenishes a quota whose status.hard names one.
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
	counted, ok := CountedResource(n)
	return ok && counted == gr
}

// MatchingResources is the names of list that gr's evaluator matches
// (MatchesResource), sorted.
func MatchingResources(gr schema.GroupResource, list corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n := range list {
		if MatchesResource(gr, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
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
