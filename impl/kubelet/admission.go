package kubelet

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// podRequests is the pod's effective request of a resource: the larger of
// the sum over app containers and sidecars, and the peak while init
// containers run (each regular one plus the sidecars started before it),
// plus overhead (as the scheduler and the kubelet compute it).
func podRequests(pod *v1.Pod, name v1.ResourceName) int64 {
	value := func(q resource.Quantity) int64 {
		if name == v1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	req := func(c *v1.Container) int64 {
		if q, ok := c.Resources.Requests[name]; ok {
			return value(q)
		}
		return 0
	}
	var sum int64
	for i := range pod.Spec.Containers {
		sum += req(&pod.Spec.Containers[i])
	}
	// Sidecars run alongside every init container after them and every
	// app container; regular init containers alongside the sidecars
	// before them.
	var sidecars, initPeak int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podsync.IsSidecar(c) {
			sidecars += req(c)
			initPeak = max(initPeak, sidecars)
		} else {
			initPeak = max(initPeak, sidecars+req(c))
		}
	}
	sum = max(sum+sidecars, initPeak)
	if q, ok := pod.Spec.Overhead[name]; ok {
		sum += value(q)
	}
	return sum
}

// Admit decides whether pod fits the node's allocatable given the pods
// already admitted (and not terminal). On rejection it returns the reason
// and message the pod fails with, as upstream: reason "OutOf<resource>",
// message "Node didn't have enough resource: <resource>, requested: N,
// used: N, capacity: N" (cpu in millicores, memory in bytes).
func Admit(allocatable v1.ResourceList, pod *v1.Pod, admitted []*v1.Pod) (ok bool, reason, message string) {
	type check struct {
		name      v1.ResourceName
		requested int64
		used      int64
		capacity  int64
	}
	pods := allocatable[v1.ResourcePods]
	checks := []check{{name: v1.ResourcePods, requested: 1, used: int64(len(admitted)), capacity: pods.Value()}}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		req := podRequests(pod, name)
		if req == 0 {
			continue
		}
		var used int64
		for _, p := range admitted {
			used += podRequests(p, name)
		}
		q := allocatable[name]
		capacity := q.Value()
		if name == v1.ResourceCPU {
			capacity = q.MilliValue()
		}
		checks = append(checks, check{name: name, requested: req, used: used, capacity: capacity})
	}
	for _, c := range checks {
		if c.requested+c.used > c.capacity {
			return false, fmt.Sprintf("OutOf%s", c.name),
				fmt.Sprintf("Pod was rejected: Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", c.name, c.requested, c.used, c.capacity)
		}
	}
	return true, "", ""
}

// ReasonEvicted is the reason of a pod refused because of node pressure.
const ReasonEvicted = "Evicted"

// AdmitUnderPressure is upstream's eviction manager admission: under
// memory pressure alone, pods that are not BestEffort (or that tolerate
// the memory-pressure taint) are admitted; under any other pressure no pod
// is, except critical ones (priority at least system-cluster-critical's).
// The refusal is reason "Evicted", message "Pod was rejected: The node had condition:
// [<conditions>]. ".
func AdmitUnderPressure(p Pressure, pod *v1.Pod) (ok bool, reason, message string) {
	conds := p.Conditions()
	if len(conds) == 0 || isCriticalPod(pod) {
		return true, "", ""
	}
	if len(conds) == 1 && conds[0] == v1.NodeMemoryPressure {
		if !isBestEffort(pod) {
			return true, "", ""
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
				return true, "", ""
			}
		}
	}
	return false, ReasonEvicted, fmt.Sprintf("Pod was rejected: The node had condition: %v. ", conds)
}

// isBestEffort: no container (init or app) requests or limits cpu or memory.
func isBestEffort(pod *v1.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, rl := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name, q := range rl {
					if (name == v1.ResourceCPU || name == v1.ResourceMemory) && !q.IsZero() {
						return false
					}
				}
			}
		}
	}
	return true
}

// systemCriticalPriority is scheduling.SystemCriticalPriority (2e9).
const systemCriticalPriority = int32(2000000000)

func isCriticalPod(pod *v1.Pod) bool {
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}
