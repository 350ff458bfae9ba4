package quota

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// PodComputeUsage: one "pods"; requests.<name> for every resource the pod
// requests, and cpu, memory and ephemeral-storage bare as requests;
// limits.cpu, limits.memory and limits.ephemeral-storage. The pod's
// requests (limits) are the sum over its containers, raised to any larger
// init container's (PodTotal), plus the pod overhead.
func PodComputeUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	requests := PodTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	limits := PodTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for n, v := range pod.Spec.Overhead {
		r := requests[n]
		r.Add(v)
		requests[n] = r
		if l, ok := limits[n]; ok {
			l.Add(v)
			limits[n] = l
		}
	}
	for n, v := range requests {
		if isBareCompute(n) {
			out[n] = v.DeepCopy()
		}
		out["requests."+n] = v.DeepCopy()
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

// PodTotal is what a pod needs of each resource of(c): the sum over its
// app containers, raised to the largest single init container's (init
// containers run one at a time, before the others).
func PodTotal(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		for n, v := range of(&pod.Spec.Containers[i]) {
			s := sum[n]
			s.Add(v)
			sum[n] = s
		}
	}
	for i := range pod.Spec.InitContainers {
		for n, v := range of(&pod.Spec.InitContainers[i]) {
			if s, ok := sum[n]; !ok || v.Cmp(s) > 0 {
				sum[n] = v.DeepCopy()
			}
		}
	}
	return sum
}
