package kubelet

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubectlqos "k8s.io/kubectl/pkg/util/qos"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// oom_score_adj values of upstream's kubelet (pkg/kubelet/qos): a
// Guaranteed (or node-critical) container's, a BestEffort container's.
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// systemNodeCritical is the priority class of pods the node needs
// (scheduling.SystemNodeCritical).
const systemNodeCritical = "system-node-critical"

// containerOOMScoreAdj is the oom_score_adj of container c of pod on a
// node of memoryCapacity bytes, as upstream's GetContainerOOMScoreAdjust
// with its feature gates at their defaults (PodLevelResources on, the
// tie-break and DRA node-allocatable gates off): a system-node-critical
// pod's (critical, i.e. static, mirror or of priority at least
// system-cluster-critical's, and of class system-node-critical) and a
// Guaranteed pod's containers -997, a BestEffort pod's 1000; a Burstable
// pod's 1000 less the container's memory request in thousandths of the
// capacity, kept within 3 (above any Guaranteed process's score) and 999
// (below BestEffort). With a pod-level memory request, what it holds
// beyond the containers' aggregate request is shared equally among all
// containers (init ones too) and added to each one's request. A sidecar
// (restartable init container) scores no higher than the app container
// of the smallest request.
func containerOOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int64 {
	if isNodeCriticalPod(pod) {
		return guaranteedOOMScoreAdj
	}
	switch podQOS(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	var share int64
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		share = podMemoryShare(pod)
	}
	adj := 1000 - 1000*(c.Resources.Requests.Memory().Value()+share)/memoryCapacity
	if isSidecarOf(pod, c) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := range pod.Spec.Containers[1:] {
			least = min(least, pod.Spec.Containers[i+1].Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*(least+share)/memoryCapacity)
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == besteffortOOMScoreAdj {
		return besteffortOOMScoreAdj - 1
	}
	return adj
}

// podMemoryShare is each container's share of the pod-level memory
// request the containers' aggregate request (sidecars and init peaks
// counted as the scheduler does) leaves over: the rest divided by the
// number of containers, init ones included (upstream's
// remainingPodMemReqPerContainer). 0 without a pod-level memory request.
func podMemoryShare(pod *v1.Pod) int64 {
	podReq := pod.Spec.Resources.Requests.Memory()
	if podReq.IsZero() {
		return 0
	}
	aggregate := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return (podReq.Value() - aggregate.Memory().Value()) / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
}

// isSidecarOf: c is one of pod's restartable init containers (upstream
// tells them by name among the init containers).
func isSidecarOf(pod *v1.Pod, c *v1.Container) bool {
	if !podsync.IsSidecar(c) {
		return false
	}
	return slices.ContainsFunc(pod.Spec.InitContainers, func(ic v1.Container) bool { return ic.Name == c.Name })
}

// isNodeCriticalPod is upstream's IsNodeCriticalPod: a critical pod
// (eviction.IsCritical: static, mirror, or of priority at least
// system-cluster-critical's) of priority class system-node-critical.
func isNodeCriticalPod(pod *v1.Pod) bool {
	return pod.Spec.PriorityClassName == systemNodeCritical && eviction.IsCritical(pod)
}

// podQOS is the pod's QoS class as upstream's GetPodQOS: status.qosClass
// (the registry sets it on create) when set, else upstream's ComputePodQOS
// as k8s.io/kubectl v0.37.2 ships it — the function the registry uses.
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	return kubectlqos.GetPodQOS(pod)
}

// hugepageLimits are the CRI hugepage limits of a container's limits on a
// node of the huge page sizes node, as upstream's
// GetHugepageLimitsFromResources: one per node page size, in the node's
// order (by page size; upstream's is sysfs's listing order), named in
// runc's units ("2MB", "1GB"), the container's hugepages-<size> limit in
// bytes, else its pod's pod-level one (podLimits, podLevelLimits: the
// pod-level hugepage limits propagated to containers that set none, as
// upstream's since kubernetes/kubernetes#131089), else 0, so that it gets
// no pages of a size neither asked for. A limit of a size the node does
// not have, or whose size does not parse or is not whole in its largest
// unit, is left out, as upstream does. Nil for a node without huge pages.
func hugepageLimits(node []HugePages, podLimits, limits v1.ResourceList) []*runtimeapi.HugepageLimit {
	if len(node) == 0 {
		return nil
	}
	hls := make([]*runtimeapi.HugepageLimit, 0, len(node))
	for _, h := range node {
		// Config.HugePages sizes all have a unit (checkHugePages).
		if unit, err := hugePageUnitSize(h.PageSize); err == nil {
			hls = append(hls, &runtimeapi.HugepageLimit{PageSize: unit})
		}
	}
	set := func(l v1.ResourceList) {
		for name, q := range l {
			size, ok := hugePageSizeOf(name)
			if !ok {
				continue
			}
			unit, _ := hugePageUnitSize(size) // hugePageSizeOf checked it
			for _, hl := range hls {
				if hl.PageSize == unit {
					hl.Limit = uint64(q.Value())
				}
			}
		}
	}
	set(podLimits) // the container's own, next, take their place
	set(limits)
	return hls
}

// podLevelLimits are pod's pod-level limits (spec.resources.limits), nil
// without.
func podLevelLimits(pod *v1.Pod) v1.ResourceList {
	if pod.Spec.Resources == nil {
		return nil
	}
	return pod.Spec.Resources.Limits
}

// hugePageUnits are runc's hugepage size units.
var hugePageUnits = []string{"B", "KB", "MB", "GB", "TB", "PB"}

// hugePageUnitSize is a page size of size bytes in the largest of runc's
// units it is a whole number of 1024ths above (1048576 = "1MB"), as
// upstream's HugePageUnitSizeFromByteSize; an error for a size whose
// count in that unit is still above 1024.
func hugePageUnitSize(size int64) (string, error) {
	i := 0
	for size%1024 == 0 && i < len(hugePageUnits)-1 {
		size /= 1024
		i++
	}
	if size > 1024 && i < len(hugePageUnits)-1 {
		return "", fmt.Errorf("hugepage size %d%s is not a whole number of its largest unit", size, hugePageUnits[i])
	}
	return fmt.Sprintf("%d%s", size, hugePageUnits[i]), nil
}
