package kubelet

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	kubectlqos "k8s.io/kubectl/pkg/util/qos"

	"github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// requestOf is r's amount of the resource name (cpu in millicores).
func requestOf(r *framework.Resource, name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	}
	return r.ScalarResources[name]
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
// rejection it returns the reason and message of the event, as upstream's
// admit handlers: reason "OutOf<resource>" (OutOfcpu, OutOfhugepages-2Mi),
// message "Node didn't have enough resource: <resource>, requested: N,
// used: N, capacity: N" (cpu in millicores, anything else in units); the
// pod's status message is it after rejectedPrefix.
func Admit(allocatable v1.ResourceList, pod *v1.Pod, admitted []*v1.Pod) (ok bool, reason, message string) {
	pods := allocatable[v1.ResourcePods]
	if used := int64(len(admitted)); 1+used > pods.Value() {
		return rejectOutOf(v1.ResourcePods, 1, used, pods.Value())
	}
	req, _ := framework.PodRequests(pod)
	if !requestsAny(&req) {
		return true, "", ""
	}
	// What the admitted pods request, summed once for every resource.
	var used framework.Resource
	for _, p := range admitted {
		r, _ := framework.PodRequests(p)
		used.AddResource(&r)
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		q := allocatable[name]
		capacity := q.Value()
		if name == v1.ResourceCPU {
			capacity = q.MilliValue()
		}
		if ok, reason, message = admitResource(name, capacity, &req, &used); !ok {
			return ok, reason, message
		}
	}
	for _, name := range scalarNames(&req) {
		q, has := allocatable[name]
		if !has && framework.IsExtendedResourceName(name) {
			continue
		}
		if ok, reason, message = admitResource(name, q.Value(), &req, &used); !ok {
			return ok, reason, message
		}
	}
	return true, "", ""
}

// requestsAny: r names a positive amount of some resource (a pod that
// requests nothing always fits, and the admitted pods need not be summed).
func requestsAny(r *framework.Resource) bool {
	if r.MilliCPU > 0 || r.Memory > 0 || r.EphemeralStorage > 0 {
		return true
	}
	for _, v := range r.ScalarResources {
		if v > 0 {
			return true
		}
	}
	return false
}

// admitResource checks one resource of capacity (allocatable) for the
// pod's requests req beside the admitted pods' used.
func admitResource(name v1.ResourceName, capacity int64, req, used *framework.Resource) (bool, string, string) {
	r, u := requestOf(req, name), requestOf(used, name)
	if r <= 0 {
		return true, "", ""
	}
	if r+u > capacity {
		return rejectOutOf(name, r, u, capacity)
	}
	return true, "", ""
}

// rejectOutOf is upstream's refusal for a resource the node lacks.
func rejectOutOf(name v1.ResourceName, requested, used, capacity int64) (bool, string, string) {
	return false, "OutOf" + string(name),
		fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
}

// scalarNames are the scalar resources (hugepages-*, extended and
// attachable-volume resources) r names, sorted; nil for the common pod
// that names none (nothing allocated then).
func scalarNames(r *framework.Resource) []v1.ResourceName {
	if len(r.ScalarResources) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(r.ScalarResources))
}

// ReasonEvicted is the reason of a pod refused because of node pressure.
const ReasonEvicted = "Evicted"

// AdmitUnderPressure is upstream's eviction manager admission: under
// memory pressure alone, pods that are not BestEffort (or that tolerate
// the memory-pressure taint) are admitted; under any other pressure no pod
// is, except critical ones (priority at least system-cluster-critical's).
// The refusal is reason "Evicted", message "The node had condition:
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
	return false, ReasonEvicted, fmt.Sprintf("The node had condition: %v. ", conds)
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
