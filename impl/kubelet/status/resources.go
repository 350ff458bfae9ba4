package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// The least CPU request and limit cgroups tell apart, as upstream's
// cm.MinShares (2 shares: 2m) and cm.MinMilliCPULimit (a 1 ms quota per
// 100 ms: 10m).
const (
	minShares        = 2
	minMilliCPULimit = 10
	sharesPerCPU     = 1024
)

// maxShares is the kernel's largest cpu.shares, upstream's cm.MaxShares.
const maxShares = 262144

// milliCPUToShares is upstream's cm.MilliCPUToShares: 2 for none, else
// 1024 per CPU, between 2 and maxShares.
func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	return min(max(milli*sharesPerCPU/1000, minShares), maxShares)
}

// sharesAfterV2RoundTrip is what a cgroup given shares reads back on
// cgroup v2, where they are written as cpu.weight ([2, 262144] to
// [1, 10000], the kubelet's pod cgroup conversion) and read as that
// weight's shares again: the coarser weight loses the rest (51 shares,
// 50m, read back as 28). A read-back equal to it is upstream's
// CPUSharesEqualAfterV2RoundTrip.
func sharesAfterV2RoundTrip(shares int64) int64 {
	weight := int64(10000)
	if shares < maxShares {
		weight = 1 + (max(shares, minShares)-minShares)*9999/(maxShares-minShares)
	}
	return minShares + (weight-1)*(maxShares-minShares)/9999
}

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

// PodCgroup is what the kubelet read of a pod's cgroup for its pod-level
// status resources (PodStatusResources), in cgroup v1 units as upstream's
// GetPodCgroupConfig gives them. Its CPU values and its memory limit are
// read separately, as upstream's: what was not read (a read that failed,
// or a pod not Running, whose cgroup upstream does not read) is 0, which
// is none, as upstream's nil config. A memory limit is reported as read
// (cgroup v1's unlimited one is the kernel's page-rounded maximum, a
// limit there as upstream's; v2's "max" is -1, none).
type PodCgroup struct {
	CPUShares int64 // cpu.shares (cgroup v2's cpu.weight converted); below 2: none
	CPUQuota  int64 // µs per CPUPeriod; -1 or 0: none
	CPUPeriod int64 // µs; 0: none
	Memory    int64 // bytes; -1 or 0: none
}

// cpuRequest is upstream's CPURequestsFromConfig: the millicores of the
// shares (rounded up), none (false) below 2 shares.
func (c PodCgroup) cpuRequest() (int64, bool) {
	if c.CPUShares < minShares {
		return 0, false
	}
	return (c.CPUShares*1000 + sharesPerCPU - 1) / sharesPerCPU, true
}

// cpuLimit is upstream's CPULimitsFromConfig: the quota over the period
// in millicores, none without a period or a quota (or one under 1m).
func (c PodCgroup) cpuLimit() (int64, bool) {
	if c.CPUPeriod <= 0 || c.CPUQuota <= 0 {
		return 0, false
	}
	m := c.CPUQuota * 1000 / c.CPUPeriod
	return m, m > 0
}

// PodStatusResources are a pod's status.allocatedResources and
// status.resources as upstream 1.37's kubelet reports them for every pod
// (convertStatusToAPIStatus with InPlacePodLevelResourcesVerticalScaling,
// beta and on by default since 1.36, and PodLevelResources, beta and on
// since 1.34; pod as allocated, its status the last one reported):
//
//   - allocatedResources are the pod's requests as component-helpers'
//     PodRequests adds them up: every resource its containers request (app
//     containers and sidecars summed, raised to the init containers'
//     peak), the pod-level requests (cpu, memory, hugepages-*) in their
//     place, plus the overhead;
//   - resources, while the pod's reported phase is not Running, are the
//     pod-level requirements (their claims) with PodRequests as requests
//     and PodLimits as limits (the limits summed the same way, the
//     overhead added to those not zero: getEffectiveAllocatedResources);
//   - resources of a Running pod (convertToAPIPodLevelResourcesStatus)
//     are the pod-level requirements with what the pod cgroup cg has in
//     place of the CPU request (its shares; kept as allocated when both
//     are at or below 2m, or when the shares are what cgroup v2 reads
//     back of the pod-level request's, sharesAfterV2RoundTrip, as
//     upstream's since kubernetes/kubernetes#137660), the CPU limit (its CFS quota over its period;
//     kept when both are at or below 10m) and the memory limit; the
//     memory request is the pod-level one or, without one, PodRequests'.
//     What cg lacks (not read, no quota, no memory limit) is the last
//     reported value when the pod was Running then too, else the
//     pod-level value plus the overhead (a limit's only when not zero),
//     else none.
//
// Nothing is copied where the result equals what is there already: the
// last reported lists (every resync of a running pod), else a single
// container's own lists (a pod of one app container, no init
// containers, overhead or pod-level resources, whose PodRequests and
// PodLimits they are). Only read, never written.
func PodStatusResources(pod *v1.Pod, cg PodCgroup) (v1.ResourceList, *v1.ResourceRequirements) {
	old := &pod.Status
	var oldReqs, oldLims v1.ResourceList
	if old.Resources != nil {
		oldReqs, oldLims = old.Resources.Requests, old.Resources.Limits
	}
	one := onlyContainer(pod)
	var reqs, lims v1.ResourceList
	if one != nil {
		reqs, lims = one.Resources.Requests, one.Resources.Limits
	} else if samePodRequests(pod, old.AllocatedResources) {
		reqs = old.AllocatedResources
	} else {
		reqs = pick(listOf{base: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})}, old.AllocatedResources)
	}
	allocated := pick(listOf{base: reqs}, old.AllocatedResources)
	var podReqs, podLims v1.ResourceList
	var claims []v1.ResourceClaim
	if r := pod.Spec.Resources; r != nil {
		podReqs, podLims, claims = r.Requests, r.Limits, r.Claims
	}

	var wantReqs, wantLims listOf
	if pod.Status.Phase != v1.PodRunning {
		if one == nil {
			lims = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
		}
		wantReqs, wantLims = listOf{base: reqs}, listOf{base: lims}
	} else {
		wantReqs, wantLims = listOf{base: podReqs}, listOf{base: podLims}
		wasRunning := old.Phase == v1.PodRunning
		overhead := pod.Spec.Overhead
		// A value cg lacks: the last reported one, else the pod-level
		// one with the overhead.
		keep := func(l *listOf, name v1.ResourceName, olds v1.ResourceList, limit bool) {
			if q, ok := olds[name]; ok && wasRunning {
				l.set(name, q)
				return
			}
			q, ok := l.base[name]
			o, hasO := overhead[name]
			if ok && hasO && (!limit || !q.IsZero()) {
				q.Add(o)
				l.set(name, q)
			}
		}
		if m, ok := cg.cpuRequest(); ok {
			alloc := milliCPU(podReqs)
			if (m > minShares || alloc > minShares) && cg.CPUShares != sharesAfterV2RoundTrip(milliCPUToShares(alloc)) {
				wantReqs.set(v1.ResourceCPU, *resource.NewMilliQuantity(m, resource.DecimalSI))
			}
		} else {
			keep(&wantReqs, v1.ResourceCPU, oldReqs, false)
		}
		if _, ok := podReqs[v1.ResourceMemory]; ok {
			keep(&wantReqs, v1.ResourceMemory, oldReqs, false)
		} else if q, ok := reqs[v1.ResourceMemory]; ok {
			wantReqs.set(v1.ResourceMemory, q)
		}
		if m, ok := cg.cpuLimit(); ok {
			if m > minMilliCPULimit || milliCPU(podLims) > minMilliCPULimit {
				wantLims.set(v1.ResourceCPU, *resource.NewMilliQuantity(m, resource.DecimalSI))
			}
		} else {
			keep(&wantLims, v1.ResourceCPU, oldLims, true)
		}
		if cg.Memory > 0 {
			wantLims.set(v1.ResourceMemory, *resource.NewQuantity(cg.Memory, resource.BinarySI))
		} else {
			keep(&wantLims, v1.ResourceMemory, oldLims, true)
		}
	}
	var oneReqs, oneLims v1.ResourceList
	if one != nil {
		oneReqs, oneLims = one.Resources.Requests, one.Resources.Limits
	}
	if old.Resources != nil && len(old.Resources.Claims) == 0 && len(claims) == 0 && wantReqs.equal(oldReqs) && wantLims.equal(oldLims) {
		return allocated, old.Resources
	}
	if one != nil && len(claims) == 0 && len(one.Resources.Claims) == 0 && wantReqs.equal(oneReqs) && wantLims.equal(oneLims) {
		return allocated, &one.Resources
	}
	return allocated, &v1.ResourceRequirements{
		Requests: pick(wantReqs, oldReqs, oneReqs), Limits: pick(wantLims, oldLims, oneLims), Claims: claims,
	}
}

// samePodRequests reports whether l holds what component-helpers'
// PodRequests gives for pod (its names, their amounts in milli-units),
// without building that: a resync of a running pod of several
// containers finds its last reported allocatedResources so.
func samePodRequests(pod *v1.Pod, l v1.ResourceList) bool {
	s := &pod.Spec
	in := func(rl v1.ResourceList) bool {
		for name := range rl {
			if _, ok := l[name]; !ok {
				return false
			}
		}
		return true
	}
	for i := range s.Containers {
		if !in(s.Containers[i].Resources.Requests) {
			return false
		}
	}
	for i := range s.InitContainers {
		if !in(s.InitContainers[i].Resources.Requests) {
			return false
		}
	}
	if !in(s.Overhead) {
		return false
	}
	podLevel := resourcehelper.IsPodLevelRequestsSet(pod)
	if podLevel {
		for name := range s.Resources.Requests {
			if _, ok := l[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
				return false
			}
		}
	}
	for name, q := range l {
		if v, named := podRequest(pod, name, podLevel); !named || v != q.MilliValue() {
			return false
		}
	}
	return true
}

// podRequest is PodRequests' amount of one resource (milli-units) and
// whether anything names it: app containers and sidecars summed, raised
// to the peak while a regular init container runs (it plus the sidecars
// before it), a supported pod-level request in its place (podLevel:
// IsPodLevelRequestsSet), plus the overhead.
func podRequest(pod *v1.Pod, name v1.ResourceName, podLevel bool) (int64, bool) {
	s := &pod.Spec
	amount, named := podsync.ContainersAmount(pod, name, false, true)
	if podLevel && resourcehelper.IsSupportedPodLevelResource(name) {
		if q, ok := s.Resources.Requests[name]; ok {
			amount, named = q.MilliValue(), true
		}
	}
	if q, ok := s.Overhead[name]; ok {
		amount, named = amount+q.MilliValue(), true
	}
	return amount, named
}

// milliCPU is l's CPU in millicores, 0 for none.
func milliCPU(l v1.ResourceList) int64 {
	q := l[v1.ResourceCPU]
	return q.MilliValue()
}

// onlyContainer is pod's one app container when its requests and limits
// are the pod's (PodRequests, PodLimits): no other, no init containers,
// no overhead, no pod-level resources; nil otherwise.
func onlyContainer(pod *v1.Pod) *v1.Container {
	s := &pod.Spec
	if len(s.Containers) != 1 || len(s.InitContainers) != 0 || len(s.Overhead) != 0 || s.Resources != nil {
		return nil
	}
	return &s.Containers[0]
}

// listOf is a resource list described without building it: base's
// entries with cpu and memory replaced (or added) where set.
type listOf struct {
	base           v1.ResourceList
	cpu, mem       resource.Quantity
	setCPU, setMem bool
}

func (l *listOf) set(name v1.ResourceName, q resource.Quantity) {
	switch name {
	case v1.ResourceCPU:
		l.cpu, l.setCPU = q, true
	case v1.ResourceMemory:
		l.mem, l.setMem = q, true
	}
}

func (l *listOf) get(name v1.ResourceName) (resource.Quantity, bool) {
	switch {
	case name == v1.ResourceCPU && l.setCPU:
		return l.cpu, true
	case name == v1.ResourceMemory && l.setMem:
		return l.mem, true
	}
	q, ok := l.base[name]
	return q, ok
}

func (l *listOf) len() int {
	n := len(l.base)
	if _, ok := l.base[v1.ResourceCPU]; l.setCPU && !ok {
		n++
	}
	if _, ok := l.base[v1.ResourceMemory]; l.setMem && !ok {
		n++
	}
	return n
}

// equal reports whether m holds l's quantities (nil and empty alike).
func (l *listOf) equal(m v1.ResourceList) bool {
	if len(m) != l.len() {
		return false
	}
	for name, q := range m {
		w, ok := l.get(name)
		if !ok || w.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// pick is the first of candidates equal to l, else l built anew (nil
// when empty).
func pick(l listOf, candidates ...v1.ResourceList) v1.ResourceList {
	for _, c := range candidates {
		if l.equal(c) {
			return c
		}
	}
	if !l.setCPU && !l.setMem {
		return l.base
	}
	out := make(v1.ResourceList, l.len())
	for name, q := range l.base {
		out[name] = q
	}
	if l.setCPU {
		out[v1.ResourceCPU] = l.cpu
	}
	if l.setMem {
		out[v1.ResourceMemory] = l.mem
	}
	return out
}
