package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The least CPU request and limit cgroups tell apart, as upstream's
// cm.MinShares (2 shares: 2m) and cm.MinMilliCPULimit (a 1 ms quota per
// 100 ms: 10m).
const (
	minShares        = 2
	minMilliCPULimit = 10
	sharesPerCPU     = 1024
)

// ContainerStatusResources is a running container's
// status.containerStatuses[].resources, as upstream's kubelet reports it
// (convertContainerStatusResources): the container's allocated
// requirements alloc, with what the runtime reports of its cgroups (r; nil
// when it reports nothing) in place of the allocated CPU limit (its CFS
// quota over its period), memory limit and CPU request (its shares, as
// upstream's sharesToMilliCPU rounds them up), each only where alloc has
// limits (requests) at all. A CPU limit (request) at or below the least
// cgroups tell apart both reported and allocated stays the allocated one,
// as upstream's.
//
// When the runtime reports what alloc says (every sync of a running pod
// but during a resize) the result is alloc itself, not a copy: it is only
// read. The allocated quantities stand for the reported ones then; they
// are the API server's canonical forms, which upstream's reported
// quantities also take.
func ContainerStatusResources(alloc *v1.ResourceRequirements, r *runtimeapi.LinuxContainerResources) *v1.ResourceRequirements {
	if r == nil {
		return alloc
	}
	cpuLim, setCPULim := int64(0), false
	if alloc.Limits != nil && r.CpuPeriod > 0 && r.CpuQuota > 0 {
		cpuLim = r.CpuQuota * 1000 / r.CpuPeriod
		a, named := alloc.Limits[v1.ResourceCPU]
		setCPULim = (cpuLim > minMilliCPULimit || a.MilliValue() > minMilliCPULimit) && (!named || a.MilliValue() != cpuLim)
	}
	mem, setMem := r.MemoryLimitInBytes, false
	if alloc.Limits != nil && mem > 0 {
		a, named := alloc.Limits[v1.ResourceMemory]
		setMem = !named || a.Value() != mem
	}
	cpuReq, setCPUReq := int64(0), false
	if alloc.Requests != nil && r.CpuShares >= minShares {
		cpuReq = (r.CpuShares*1000 + sharesPerCPU - 1) / sharesPerCPU
		a, named := alloc.Requests[v1.ResourceCPU]
		setCPUReq = (cpuReq > minShares || a.MilliValue() > minShares) && (!named || a.MilliValue() != cpuReq)
	}
	if !setCPULim && !setMem && !setCPUReq {
		return alloc
	}
	out := alloc.DeepCopy()
	if setCPULim {
		out.Limits[v1.ResourceCPU] = *resource.NewMilliQuantity(cpuLim, resource.DecimalSI)
	}
	if setMem {
		out.Limits[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	if setCPUReq {
		out.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(cpuReq, resource.DecimalSI)
	}
	return out
}
