package kubelet

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	kubectlqos "k8s.io/kubectl/pkg/util/qos"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// podRequests is the pod's effective request of a resource, as upstream's
// PodRequests (which the scheduler and the kubelet's admission share):
// the larger of the sum over app containers and sidecars, and the peak
// while init containers run (each regular one plus the sidecars started
// before it); a pod-level request (spec.resources, PodLevelResources
// being on by default) of cpu, memory or a hugepages size in its place;
// plus overhead. CPU in millicores, anything else in units.
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
	if q, ok := podLevelRequest(pod, name); ok {
		sum = value(q)
	} else {
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
	}
	if q, ok := pod.Spec.Overhead[name]; ok {
		sum += value(q)
	}
	return sum
}

// podLevelRequest is the pod-level request of name when it replaces the
// containers' aggregate: a resource pod-level resources support (cpu,
// memory, hugepages-*; upstream's IsSupportedPodLevelResource) that
// spec.resources.requests names.
func podLevelRequest(pod *v1.Pod, name v1.ResourceName) (resource.Quantity, bool) {
	if pod.Spec.Resources == nil || !resourcehelper.IsSupportedPodLevelResource(name) {
		return resource.Quantity{}, false
	}
	q, ok := pod.Spec.Resources.Requests[name]
	return q, ok
}

// Admit decides whether pod fits the node's allocatable given the pods
// already admitted (and not terminal), as upstream's kubelet admission
// through the scheduler's resource fit: the pod count first, then cpu,
// memory and ephemeral-storage, then every scalar resource the pod
// requests (hugepages-<size>, extended resources, by name; upstream's
// order among them is its map's). A zero request always fits; an
// extended resource the node does not have is not checked (upstream's
// removeMissingExtendedResources: it may be a cluster-level resource),
// while hugepages the node does not have are checked against none. On
// rejection it returns the reason and message the pod fails with, as
// upstream: reason "OutOf<resource>" (OutOfcpu, OutOfhugepages-2Mi),
// message "Pod was rejected: Node didn't have enough resource:
// <resource>, requested: N, used: N, capacity: N" (cpu in millicores,
// anything else in units).
func Admit(allocatable v1.ResourceList, pod *v1.Pod, admitted []*v1.Pod) (ok bool, reason, message string) {
	pods := allocatable[v1.ResourcePods]
	if used := int64(len(admitted)); 1+used > pods.Value() {
		return rejectOutOf(v1.ResourcePods, 1, used, pods.Value())
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		q := allocatable[name]
		capacity := q.Value()
		if name == v1.ResourceCPU {
			capacity = q.MilliValue()
		}
		if ok, reason, message = admitResource(name, capacity, pod, admitted); !ok {
			return ok, reason, message
		}
	}
	for _, name := range scalarRequests(pod) {
		q, has := allocatable[name]
		if !has && framework.IsExtendedResourceName(name) {
			continue
		}
		if ok, reason, message = admitResource(name, q.Value(), pod, admitted); !ok {
			return ok, reason, message
		}
	}
	return true, "", ""
}

// admitResource checks one resource of capacity (allocatable) for pod
// beside the admitted pods' requests of it.
func admitResource(name v1.ResourceName, capacity int64, pod *v1.Pod, admitted []*v1.Pod) (bool, string, string) {
	req := podRequests(pod, name)
	if req <= 0 {
		return true, "", ""
	}
	var used int64
	for _, p := range admitted {
		used += podRequests(p, name)
	}
	if req+used > capacity {
		return rejectOutOf(name, req, used, capacity)
	}
	return true, "", ""
}

// rejectOutOf is upstream's refusal for a resource the node lacks.
func rejectOutOf(name v1.ResourceName, requested, used, capacity int64) (bool, string, string) {
	return false, "OutOf" + string(name),
		fmt.Sprintf("Pod was rejected: Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
}

// scalarRequests are the scalar resources (hugepages-*, extended and
// attachable-volume resources) the pod's containers, init containers,
// pod-level requests or overhead name, sorted; nil for the common pod
// that names none (nothing allocated then).
func scalarRequests(pod *v1.Pod) []v1.ResourceName {
	var names []v1.ResourceName
	add := func(rl v1.ResourceList) {
		for name := range rl {
			if framework.IsScalarResourceName(name) && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			add(list[i].Resources.Requests)
		}
	}
	if pod.Spec.Resources != nil {
		add(pod.Spec.Resources.Requests)
	}
	add(pod.Spec.Overhead)
	slices.Sort(names)
	return names
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

// isBestEffort: the pod's QoS class (upstream's GetPodQOS: status.qosClass,
// else ComputePodQOS, pod-level resources included) is BestEffort.
func isBestEffort(pod *v1.Pod) bool {
	return kubectlqos.GetPodQOS(pod) == v1.PodQOSBestEffort
}

// systemCriticalPriority is scheduling.SystemCriticalPriority (2e9).
const systemCriticalPriority = int32(2000000000)

func isCriticalPod(pod *v1.Pod) bool {
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}
