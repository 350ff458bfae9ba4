package quota

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ObjectUsage is what one object of resource gr uses: one of
// count/<resource>[.<group>], one of the legacy count name of core
// resources, and a pod's compute resources while it counts (PodCounts).
func ObjectUsage(gr schema.GroupResource, obj runtime.Object, now time.Time) corev1.ResourceList {
	countName := "count/" + gr.Resource
	if gr.Group != "" {
		countName += "." + gr.Group
	}
	out := corev1.ResourceList{corev1.ResourceName(countName): *resource.NewQuantity(1, resource.DecimalSI)}
	if gr.Group == "" && LegacyCounts[gr.Resource] {
		out[corev1.ResourceName(gr.Resource)] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	if pod, ok := obj.(*corev1.Pod); ok && gr == podResource && PodCounts(pod, now) {
		for n, v := range PodComputeUsage(pod) {
			out[n] = v
		}
	}
	return out
}

// PodCounts tells whether a pod still uses "pods" and compute quota: not
// once it has succeeded or failed, nor once its deletion grace period
// (deletionTimestamp + deletionGracePeriodSeconds) has passed, as upstream.
func PodCounts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// PodComputeUsage: one "pods"; the requests of cpu, memory,
// ephemeral-storage and hugepages-<size> bare and as requests.<name>, of
// extended resources (example.com/gpu) only as requests.<name>;
// limits.cpu, limits.memory and limits.ephemeral-storage, as upstream's
// podComputeUsageHelper. The pod's requests and limits are added up as
// kube-apiserver's pod quota evaluator does, by component-helpers'
// PodRequests and PodLimits: app containers
// and sidecars (restartable init containers) summed, raised to the peak
// while a regular init container runs (it plus the sidecars before it);
// pod-level values (spec.resources, PodLevelResources being on by default)
// in place of the sums; the overhead added to the requests and to the
// non-zero limits; and, in-place resize being on by default upstream, a
// container's status resources or allocated resources where larger than
// its spec (this API does not serve pods/resize, so they differ only as a
// node reports them).
func PodComputeUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	requests := resourcehelper.PodRequests(pod, opts)
	limits := resourcehelper.PodLimits(pod, opts)
	for n, v := range requests {
		switch {
		case isBareCompute(n) || strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix):
			out[n] = v.DeepCopy()
			out["requests."+n] = v.DeepCopy()
		case isExtended(n):
			out["requests."+n] = v.DeepCopy()
		}
	}
	for n, v := range limits {
		if isBareCompute(n) {
			out["limits."+n] = v.DeepCopy()
		}
	}
	return out
}

func isBareCompute(n corev1.ResourceName) bool {
	return n == corev1.ResourceCPU || n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage
}

// isExtended tells an extended resource name: one outside the
// kubernetes.io domain (a native name has no domain or that one), and not
// itself a requests.<name>.
func isExtended(n corev1.ResourceName) bool {
	s := string(n)
	native := !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
	return !native && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}
