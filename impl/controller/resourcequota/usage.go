package resourcequota

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
)

// Observed is what the controller sees of one namespace: its objects by
// resource, and the time (for pods whose deletion grace period is over).
type Observed struct {
	Objects map[schema.GroupResource][]runtime.Object
	Now     time.Time
}

var podResource = corev1.Resource("pods")

// Usage is the pure decision of the controller: what the observed objects
// that q covers use of every resource in q's spec.hard whose objects were
// observed (a key of observed.Objects, even with no objects: zero); names
// of resources not observed are left out. It counts as the
// ResourceQuota admission plugin charges a create (status.used is the sum
// of the charges of the objects that exist), except that a pod
// stops using compute resources and "pods" once it is terminal or its
// deletion grace period has passed; its count/pods stays until it is gone.
func Usage(q *corev1.ResourceQuota, observed Observed) corev1.ResourceList {
	used := corev1.ResourceList{}
	for n := range q.Spec.Hard {
		if _, ok := observed.Objects[trackedResource(n)]; ok {
			used[n] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	for _, gr := range Tracked(q) {
		for _, obj := range observed.Objects[gr] {
			if !quotaeval.Covers(q, gr, obj) {
				continue
			}
			for n, v := range ObjectUsage(gr, obj, observed.Now) {
				if u, ok := used[n]; ok {
					u.Add(v)
					used[n] = u
				}
			}
		}
	}
	return used
}

// Tracked lists the resources whose objects q counts, in spec.hard's
// order of names: count/<resource>[.<group>] and the legacy count names
// count their resource; every other name (pods, cpu, requests.*,
// limits.*, …) is a pod's usage.
func Tracked(q *corev1.ResourceQuota) []schema.GroupResource {
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	for _, n := range sortedNames(q.Spec.Hard) {
		gr := trackedResource(n)
		if !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	return out
}

// NextStatus is the status the controller writes for q: hard copied from
// spec.hard, used recomputed by Usage for the observed resources and kept
// as it was (zero if absent) for resources the controller does not
// observe, so it never gives back what only the admission plugin counts.
func NextStatus(q *corev1.ResourceQuota, observed Observed) corev1.ResourceQuotaStatus {
	used := Usage(q, observed)
	for n := range q.Spec.Hard {
		if _, ok := used[n]; ok {
			continue
		}
		if u, ok := q.Status.Used[n]; ok {
			used[n] = u.DeepCopy()
		} else {
			used[n] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	return corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: used}
}

func trackedResource(n corev1.ResourceName) schema.GroupResource {
	if gr, ok := quotaeval.CountedResource(n); ok {
		return gr
	}
	return podResource
}

// ObjectUsage is what one object of resource gr uses: one of
// count/<resource>[.<group>], one of the legacy count name of core
// resources, and a pod's compute resources while it counts (PodCounts).
func ObjectUsage(gr schema.GroupResource, obj runtime.Object, now time.Time) corev1.ResourceList {
	countName := "count/" + gr.Resource
	if gr.Group != "" {
		countName += "." + gr.Group
	}
	out := corev1.ResourceList{corev1.ResourceName(countName): *resource.NewQuantity(1, resource.DecimalSI)}
	if gr.Group == "" && quotaeval.LegacyCounts[gr.Resource] {
		out[corev1.ResourceName(gr.Resource)] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	if pod, ok := obj.(*corev1.Pod); ok && gr == podResource && PodCounts(pod, now) {
		for n, v := range podComputeUsage(pod) {
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

// podComputeUsage: one "pods"; requests.<name> for every resource the pod
// requests, and cpu, memory and ephemeral-storage bare as requests;
// limits.cpu, limits.memory and limits.ephemeral-storage. The pod's
// requests (limits) are the sum over its containers, raised to any larger
// init container's, plus the pod overhead.
func podComputeUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	requests := podTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	limits := podTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
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

// podTotal sums of(c) over the app containers and raises each resource to
// the largest single init container's.
func podTotal(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
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
