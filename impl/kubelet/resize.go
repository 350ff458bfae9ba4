package kubelet

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// In-place pod resize (InPlacePodVerticalScaling, GA since Kubernetes
// 1.35), as upstream's kubelet: a change of a running pod's container
// resources (the API server's pods/resize) is a request the kubelet
// admits against the node before allocating it (upstream's allocation
// manager, admitResize), then actuates on the running containers through
// CRI UpdateContainerResources and the sandbox's UpdatePodSandboxResources
// in upstream's order (doPodResizeAction, planResize), or by restarting a
// container whose resizePolicy says RestartContainer. The pod reports
// PodResizePending (Infeasible, Deferred) until its resize is allocated,
// then PodResizeInProgress until the runtime reports the allocated values,
// with upstream's events.
//
// The pod-level resources (spec.resources,
// InPlacePodLevelResourcesVerticalScaling, beta and on since 1.36) are
// resized alike: allocated with the containers' (podLevelKey), admitted
// by the pod's requests they replace, applied to the sandbox (its pod
// cgroup) and to the containers whose limits they stand in for.
//
// What is kept: the decisions here are pure; the kubelet keeps a pod's
// allocation (podResize) only once its resources changed (or, for a pod
// with pod-level resources, once it finds a sandbox an earlier kubelet
// made, whose values it does not know: planPodResize), so a pod never
// resized costs nothing (its allocation is its spec), and its sync only
// compares integers (resizeNeeded, sandboxResizeNeeded).

// Events of an in-place resize, as upstream's.
const (
	EventResizeStarted    = "ResizeStarted"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeError      = "ResizeError"
)

// podResize is what the kubelet keeps of a pod whose resources changed
// since it was admitted (Kubelet.resizes, guarded by Kubelet.mu).
type podResize struct {
	// allocated are the resources allocated to each resizable container
	// (app containers and sidecars), by name, and the pod-level ones
	// (podLevelKey; absent for a pod without): what the pod runs with,
	// and what other pods are admitted beside, until a resize to the
	// spec's is admitted.
	allocated map[string]v1.ResourceRequirements
	// pending is the PodResizePending condition (Infeasible, Deferred),
	// inProgress the PodResizeInProgress one; nil when not reported.
	pending, inProgress *v1.PodCondition
	// sandbox is what the pod's sandbox was last given as its resources
	// (nil: not known, before the kubelet resized it; for a pod with
	// pod-level resources what it was made with, sandboxResources of the
	// pod as admitted, since a pod-level resize may change nothing else).
	sandbox *runtimeapi.LinuxContainerResources
	// cpuLimitsBefore are the CPU limits (millicores) of the resizable
	// containers in the allocation the last admitted resize replaced:
	// what a container whose cgroup values do not show its CPU limit (no
	// CFS period: made by a kubelet not enforcing quotas) is taken to run
	// with until it is updated (cpuLimitDiff); nil before any resize this
	// kubelet admitted (such a container is then taken as allocated).
	cpuLimitsBefore map[string]int64
	// rechecked: the last sync applied resize steps and asked for an
	// immediate sync to see the runtime report them; a further sync that
	// still finds steps to apply waits for the usual resync instead.
	rechecked bool
}

// limitsBefore is r's cpuLimitsBefore, nil for a pod never resized (r nil).
func (r *podResize) limitsBefore() map[string]int64 {
	if r == nil {
		return nil
	}
	return r.cpuLimitsBefore
}

// cpuLimitsOf are the CPU limits (millicores, 0 for none; a pod-level
// limit standing in for a container's) of pod's resizable containers.
func cpuLimitsOf(pod *v1.Pod) map[string]int64 {
	out := map[string]int64{}
	resizableContainers(pod, func(c *v1.Container, _ int, _ bool) {
		_, _, lim, _ := containerAmounts(pod, c)
		out[c.Name] = lim
	})
	return out
}

// conditions are the resize conditions to report, nil for none.
func (r *podResize) conditions() []v1.PodCondition {
	if r == nil || (r.pending == nil && r.inProgress == nil) {
		return nil
	}
	var out []v1.PodCondition
	for _, c := range []*v1.PodCondition{r.pending, r.inProgress} {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// resizable reports whether a container's resources may be resized in
// place: app containers and sidecars (upstream's IsResizableContainer;
// other init containers only with its alpha
// InPlacePodVerticalScalingInitContainers gate).
func resizable(c *v1.Container, init bool) bool { return !init || podsync.IsSidecar(c) }

// resizableContainers calls fn for every resizable container of pod, the
// sidecars first (upstream's order: init containers, then the others).
func resizableContainers(pod *v1.Pod, fn func(c *v1.Container, index int, init bool)) {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; resizable(c, true) {
			fn(c, i, true)
		}
	}
	for i := range pod.Spec.Containers {
		fn(&pod.Spec.Containers[i], i, false)
	}
}

func sameRequirements(a, b *v1.ResourceRequirements) bool {
	return framework.SameQuantities(a.Requests, b.Requests) && framework.SameQuantities(a.Limits, b.Limits)
}

// podLevelKey is the key of the pod-level resources in an allocation
// (podResize.allocated): no container's name (names are DNS labels).
const podLevelKey = ""

// podLevelOf are pod's pod-level resources, empty for none.
func podLevelOf(pod *v1.Pod) *v1.ResourceRequirements {
	if pod.Spec.Resources == nil {
		return &v1.ResourceRequirements{}
	}
	return pod.Spec.Resources
}

// podLevelAllocated reports whether alloc allocates pod its pod-level
// resources (none where it has none).
func podLevelAllocated(pod *v1.Pod, alloc map[string]v1.ResourceRequirements) bool {
	a, ok := alloc[podLevelKey]
	if !ok && pod.Spec.Resources == nil {
		return true
	}
	return sameRequirements(&a, podLevelOf(pod))
}

// resourcesChanged reports whether a resizable container's resources or
// the pod-level ones differ between two versions of a pod (its
// containers are the same: the API server allows no other change of
// them).
func resourcesChanged(old, pod *v1.Pod) bool {
	changed := !sameRequirements(podLevelOf(old), podLevelOf(pod))
	resizableContainers(pod, func(c *v1.Container, i int, init bool) {
		list := old.Spec.Containers
		if init {
			list = old.Spec.InitContainers
		}
		if i >= len(list) || list[i].Name != c.Name || !sameRequirements(&list[i].Resources, &c.Resources) {
			changed = true
		}
	})
	return changed
}

// allocationOf is the allocation of pod's resizable containers and
// pod-level resources as its spec has them (copies).
func allocationOf(pod *v1.Pod) map[string]v1.ResourceRequirements {
	a := map[string]v1.ResourceRequirements{}
	resizableContainers(pod, func(c *v1.Container, _ int, _ bool) { a[c.Name] = *c.Resources.DeepCopy() })
	if pod.Spec.Resources != nil {
		a[podLevelKey] = *pod.Spec.Resources.DeepCopy()
	}
	return a
}

// allocated reports whether every resizable container of pod, and the
// pod level, has the resources alloc allocated it.
func allocated(pod *v1.Pod, alloc map[string]v1.ResourceRequirements) bool {
	same := podLevelAllocated(pod, alloc)
	resizableContainers(pod, func(c *v1.Container, _ int, _ bool) {
		if a, ok := alloc[c.Name]; ok && !sameRequirements(&a, &c.Resources) {
			same = false
		}
	})
	return same
}

// withAllocation is pod as allocated (upstream's UpdatePodFromAllocation):
// pod itself when alloc is what its spec says, else a copy whose
// resizable containers and pod level have their allocated resources (its
// container lists and pod-level resources are its own; the rest is
// shared with pod, read only).
func withAllocation(pod *v1.Pod, alloc map[string]v1.ResourceRequirements) *v1.Pod {
	if alloc == nil || allocated(pod, alloc) {
		return pod
	}
	p := new(v1.Pod)
	*p = *pod
	p.Spec.Containers = append([]v1.Container(nil), pod.Spec.Containers...)
	p.Spec.InitContainers = append([]v1.Container(nil), pod.Spec.InitContainers...)
	resizableContainers(p, func(c *v1.Container, _ int, _ bool) {
		if a, ok := alloc[c.Name]; ok {
			c.Resources = a
		}
	})
	if !podLevelAllocated(pod, alloc) {
		p.Spec.Resources = nil
		if a, ok := alloc[podLevelKey]; ok {
			p.Spec.Resources = &a
		}
	}
	return p
}

// Messages of a resize the node refuses, as upstream's.
const (
	messageResizeSwap        = "In-place resize of containers with swap is not supported."
	messageNotEnoughCapacity = "Node didn't have enough capacity: "
)

// admitResize decides whether the node can allocate a resize of pod to
// the resources its spec asks for (upstream's handlePodResourcesResize
// through its resize and predicate admit handlers): Infeasible when the
// node could never fit it — a container whose memory request changes on
// a node that lets it or its allocated self swap (swap), or the pod's
// CPU or memory requests above the node's allocatable, memory named
// first ("Node didn't have enough capacity: memory, requested: N,
// capacity: N", CPU in millicores) — Deferred when it does not fit now
// beside the other admitted pods (others, as allocated), with admission's
// message ("Node didn't have enough resource: cpu, requested: N, used: N,
// capacity: N"). allocatedPod is pod as allocated now.
func admitResize(allocatable v1.ResourceList, pod, allocatedPod *v1.Pod, others []*v1.Pod, nodeMemory int64, swap nodeSwap) (ok bool, reason, message string) {
	swapChange := false
	resizableContainers(pod, func(c *v1.Container, i int, init bool) {
		list := allocatedPod.Spec.Containers
		if init {
			list = allocatedPod.Spec.InitContainers
		}
		a := &list[i]
		was, now := a.Resources.Requests[v1.ResourceMemory], c.Resources.Requests[v1.ResourceMemory]
		if was.Cmp(now) == 0 || resizePolicy(a, v1.ResourceMemory) == v1.RestartContainer {
			return
		}
		if containerSwapBehavior(pod, c, swap) != NoSwap || containerSwapBehavior(allocatedPod, a, swap) != NoSwap {
			swapChange = true
		}
	})
	if swapChange {
		return false, v1.PodReasonInfeasible, messageResizeSwap
	}
	req, _ := framework.PodRequests(pod)
	cpu, mem := allocatable[v1.ResourceCPU], allocatable[v1.ResourceMemory]
	switch {
	case req.Memory > mem.Value():
		return false, v1.PodReasonInfeasible, fmt.Sprintf("%smemory, requested: %d, capacity: %d", messageNotEnoughCapacity, req.Memory, mem.Value())
	case req.MilliCPU > cpu.MilliValue():
		return false, v1.PodReasonInfeasible, fmt.Sprintf("%scpu, requested: %d, capacity: %d", messageNotEnoughCapacity, req.MilliCPU, cpu.MilliValue())
	}
	if ok, _, message := Admit(allocatable, pod, others); !ok {
		return false, v1.PodReasonDeferred, message
	}
	return true, "", ""
}

// resizePolicy is a container's restart policy for resizing resource
// name: NotRequired unless its resizePolicy says otherwise.
func resizePolicy(c *v1.Container, name v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return v1.NotRequired
}

// cgroupParams are the node's parts of a container's or sandbox's cgroup
// values (linuxResources, sandboxResources): Config.Memory, HugePages,
// oomGroupKill, swap and cfs (Config.cgroupParams). The zero value is a
// node of no memory with upstream's defaults.
type cgroupParams struct {
	nodeMemory int64
	hugePages  []HugePages
	oomGroup   bool
	swap       nodeSwap
	cfs        cpuCFS
}

// runningResizable is the running instance, in the pod's ready sandbox,
// of a resizable container that reports its cgroup values, or nil.
func runningResizable(rs *podstate.Pod, sb *podstate.Sandbox, c *v1.Container, init bool) *podstate.Container {
	rc := rs.LatestIn(sb.ID, c.Name, init)
	if rc == nil || rc.State != podstate.ContainerRunning || rc.Resources == nil {
		return nil
	}
	return rc
}

// quota is a CFS quota as a number to compare: none (0, or -1 as a
// runtime may report it) is 0.
func quota(q int64) int64 { return max(q, 0) }

// cpuLimitDiff compares a container's allocated CPU limit lim
// (millicores, 0 for none) with the one its CFS quota stands for (cur,
// as the runtime reports it), as upstream compares the allocated limit
// with the actuated one, both in millicores: the quota over the
// container's own period, so that a kubelet restarted with another
// --cpu-cfs-quota-period, or with quotas turned on, resizes no running
// container (upstream's actuated_pods_state records limits, not quotas).
// A container without a period (made by a kubelet not enforcing quotas)
// does not show its limit: it is taken as before (its limit before the
// last admitted resize, ok false for none), else as lim.
func cpuLimitDiff(lim int64, cur *runtimeapi.LinuxContainerResources, before int64, ok bool) int {
	if cur.CpuPeriod <= 0 {
		if !ok {
			return 0
		}
		return cmp.Compare(lim, before)
	}
	return cmp.Compare(milliCPUToQuota(lim, cur.CpuPeriod), quota(cur.CpuQuota))
}

// runningCPULimit is the CPU limit (millicores, 0 for none) a running
// container runs with, its cgroup values cur as the runtime reports them,
// given its allocated limit lim and its limit before the last admitted
// resize (before, ok: cpuLimitDiff's): lim when its quota stands for it
// over its own period; a container without a period as cpuLimitDiff takes
// it; otherwise the quota over its period back in millicores (upstream's
// quotaToMilliCPU, none for no quota). Upstream's actuated CPU limit,
// which a memory-only update of the container carries over
// (updatePodContainerResources), its quota made again over the kubelet's
// period (generateContainerResources).
func runningCPULimit(lim int64, cur *runtimeapi.LinuxContainerResources, before int64, ok bool) int64 {
	switch {
	case cur.CpuPeriod <= 0 && ok:
		return before
	case cur.CpuPeriod <= 0, cpuLimitDiff(lim, cur, before, ok) == 0:
		return lim
	case cur.CpuQuota <= 0:
		return 0
	}
	return cur.CpuQuota * milliCPUPerCPU / cur.CpuPeriod
}

// resizeNeeded reports whether a running resizable container of pod (as
// allocated) has cgroup values other than its allocation's, as the
// runtime reports them (upstream's isPodResizeInProgress): a resize to
// actuate, or one not yet applied; its CPU limit as cpuLimitDiff compares
// it (limitsBefore: podResize.cpuLimitsBefore). Only integers are
// compared: it runs on every sync of a running pod and allocates nothing.
func resizeNeeded(pod *v1.Pod, rs *podstate.Pod, limitsBefore map[string]int64, cfs cpuCFS) bool {
	sb := rs.LatestSandbox()
	if sb == nil || !sb.Ready {
		return false
	}
	needed := false
	resizableContainers(pod, func(c *v1.Container, _ int, init bool) {
		rc := runningResizable(rs, sb, c, init)
		if rc == nil || needed {
			return
		}
		cpuReq, hasCPUReq, cpuLim, memLim := containerAmounts(pod, c)
		shares, _, mem := cgroupValues(cpuReq, hasCPUReq, cpuLim, memLim, cfs)
		r := rc.Resources
		// With quotas not enforced the container's own (one an earlier
		// kubelet gave it) is no difference (planResize).
		before, ok := limitsBefore[c.Name]
		needed = r.CpuShares != shares || (!cfs.off && cpuLimitDiff(cpuLim, r, before, ok) != 0) || r.MemoryLimitInBytes != mem
	})
	return needed
}

// sandboxResizeNeeded reports whether the ready sandbox of a pod with
// pod-level resources (pod as allocated) was last given cgroup values
// other than the allocation's (r.sandbox), as upstream's
// isPodResizeInProgress compares the pod cgroup's: a pod-level resize
// that changes no container's values (a pod-level request, or limits the
// containers set for themselves). Not known (r.sandbox nil: a kubelet
// restarted with the pod's allocation saved, which may not have reached
// the sandbox) is needed: the sandbox and the pod cgroup are given the
// allocation's values once (planResize). Integers only, as resizeNeeded.
func sandboxResizeNeeded(pod *v1.Pod, rs *podstate.Pod, r *podResize, cfs cpuCFS) bool {
	if r == nil || pod.Spec.Resources == nil {
		return false
	}
	if sb := rs.LatestSandbox(); sb == nil || !sb.Ready {
		return false
	}
	if r.sandbox == nil {
		return true
	}
	cpuReq, hasCPUReq := podAmount(pod, v1.ResourceCPU, false)
	cpuLim, _ := podAmount(pod, v1.ResourceCPU, true)
	memLim, _ := podAmount(pod, v1.ResourceMemory, true)
	shares, q, mem := cgroupValues(cpuReq, hasCPUReq, cpuLim, memLim, cfs)
	was := r.sandbox
	// A limit no longer named stays as it was (planResize).
	return was.CpuShares != shares || (q != 0 && quota(was.CpuQuota) != q) || (mem != 0 && was.MemoryLimitInBytes != mem)
}

// resizeStep is one CRI call of a resize: a container's
// UpdateContainerResources, or (container "") the sandbox's
// UpdatePodSandboxResources; res is the resource it changes (cpu or
// memory; "" for the sandbox told everything at once).
type resizeStep struct {
	containerID, name   string
	res                 v1.ResourceName
	resources, overhead *runtimeapi.LinuxContainerResources
}

// resizePlan is how to bring a running pod's cgroups to its allocation.
type resizePlan struct {
	// kills and starts restart the containers whose resizePolicy asks
	// for it ("Container <name> resize requires restart").
	kills  []podsync.Kill
	starts []podsync.Start
	// steps are the CRI calls, in order.
	steps []resizeStep
	// sandbox is what the sandbox's resources are once every step is done.
	sandbox *runtimeapi.LinuxContainerResources
	// memoryDecreases are the memory limits the steps lower, the pod's
	// (its sandbox's) first: checked against the current usage before any
	// step is made (checkMemoryDecreases).
	memoryDecreases []memoryDecrease
}

// memoryDecrease is a memory limit a resize lowers in place: a running
// container's (its id and name), or the pod's (containerID and name "":
// its sandbox's limit).
type memoryDecrease struct {
	containerID, name string
	limit             int64
}

func (p *resizePlan) empty() bool { return len(p.kills) == 0 && len(p.steps) == 0 }

// containerUpdate is one container's part of a resize of one resource.
type containerUpdate struct {
	step resizeStep
	up   bool // an increase (applied after the decreases)
}

// planResize is how to bring pod's running resizable containers (pod as
// allocated) to their allocated cgroup values from what the runtime
// reports (rs), as upstream's computePodResizeAction and
// doPodResizeAction: a container whose changed resource's resizePolicy is
// RestartContainer is restarted (whatever the pod's restartPolicy); the
// others are updated in place, memory first, then CPU, each resource's
// decreases before its increases, the sandbox's limits raised before the
// containers' and lowered after them; a memory update keeps the
// container's CPU shares and limit as they are until the CPU's, the limit's
// quota over the node's current period (runningCPULimit), as upstream's
// updatePodContainerResources, so a memory-only resize made by a kubelet
// restarted with another --cpu-cfs-quota-period, or with quotas turned
// on, moves the container to the node's period. sandboxWas is what
// the sandbox was last given (nil: unknown — it is then told its new
// resources once, after the containers). Containers in skip (by id) are
// left alone (the sync kills them anyway).
func planResize(pod *v1.Pod, rs *podstate.Pod, sandboxWas *runtimeapi.LinuxContainerResources, limitsBefore map[string]int64, p cgroupParams, skip func(id string) bool) resizePlan {
	var plan resizePlan
	sb := rs.LatestSandbox()
	if sb == nil || !sb.Ready {
		return plan
	}
	var mem, cpu []containerUpdate
	var containerDecreases []memoryDecrease
	resizableContainers(pod, func(c *v1.Container, index int, init bool) {
		rc := runningResizable(rs, sb, c, init)
		if rc == nil || skip(rc.ID) {
			return
		}
		want := linuxResources(pod, c, p)
		cur := rc.Resources
		if p.cfs.off {
			// CFS quotas not enforced (--cpu-cfs-quota=false): the
			// container keeps whatever quota it has, one an earlier
			// kubelet gave it included, as upstream's (it compares the
			// CPU limit that quota stands for with the allocated one,
			// and its update sets no quota, which the runtime takes as
			// no change).
			want.CpuQuota, want.CpuPeriod = cur.CpuQuota, cur.CpuPeriod
		}
		memDiff := cmp.Compare(want.MemoryLimitInBytes, cur.MemoryLimitInBytes)
		cpuDiff := 0
		if !p.cfs.off {
			// The limit as resizeNeeded compares it (cpuLimitDiff).
			_, _, cpuLim, _ := containerAmounts(pod, c)
			before, ok := limitsBefore[c.Name]
			cpuDiff = cpuLimitDiff(cpuLim, cur, before, ok)
		}
		if cpuDiff == 0 {
			cpuDiff = cmp.Compare(want.CpuShares, cur.CpuShares)
		}
		if memDiff == 0 && cpuDiff == 0 {
			return
		}
		if (memDiff != 0 && resizePolicy(c, v1.ResourceMemory) == v1.RestartContainer) ||
			(cpuDiff != 0 && resizePolicy(c, v1.ResourceCPU) == v1.RestartContainer) {
			plan.kills = append(plan.kills, podsync.Kill{ContainerID: rc.ID, Name: c.Name, Init: init,
				Message: fmt.Sprintf("Container %s resize requires restart", c.Name), GracePeriod: podsync.GracePeriod(pod)})
			plan.starts = append(plan.starts, podsync.Start{Index: index, Init: init, Attempt: rc.Attempt + 1})
			return
		}
		if memDiff != 0 {
			r := proto.Clone(want).(*runtimeapi.LinuxContainerResources)
			r.CpuShares = cur.CpuShares
			if p.cfs.off {
				r.CpuQuota, r.CpuPeriod = cur.CpuQuota, cur.CpuPeriod
			} else {
				// The CPU limit the container runs with, over the
				// node's period.
				_, _, cpuLim, _ := containerAmounts(pod, c)
				before, ok := limitsBefore[c.Name]
				r.CpuQuota = milliCPUToQuota(runningCPULimit(cpuLim, cur, before, ok), p.cfs.periodUS())
			}
			mem = append(mem, containerUpdate{step: resizeStep{containerID: rc.ID, name: c.Name, res: v1.ResourceMemory, resources: r}, up: memDiff > 0})
			if memDiff < 0 && want.MemoryLimitInBytes > 0 {
				containerDecreases = append(containerDecreases, memoryDecrease{containerID: rc.ID, name: c.Name, limit: want.MemoryLimitInBytes})
			}
		}
		if cpuDiff != 0 {
			cpu = append(cpu, containerUpdate{step: resizeStep{containerID: rc.ID, name: c.Name, res: v1.ResourceCPU, resources: want}, up: cpuDiff > 0})
		}
	})
	newSandbox, overhead := sandboxResources(pod, p)
	// The sandbox's own changes (a pod-level resize), by resource; a pod
	// without pod-level resources has its sandbox's values follow its
	// containers'. A pod-level sandbox whose values are not known
	// (sandboxWas nil: sandboxResizeNeeded) is given the allocation's.
	podLevel := sandboxWas != nil && pod.Spec.Resources != nil
	sandboxMem := podLevel && newSandbox.MemoryLimitInBytes != 0 && newSandbox.MemoryLimitInBytes != sandboxWas.MemoryLimitInBytes
	sandboxCPU := podLevel && (newSandbox.CpuShares != sandboxWas.CpuShares || (newSandbox.CpuQuota != 0 && newSandbox.CpuQuota != quota(sandboxWas.CpuQuota)))
	sandboxUnknown := sandboxWas == nil && pod.Spec.Resources != nil
	if len(mem) == 0 && len(cpu) == 0 && len(plan.kills) == 0 && !sandboxMem && !sandboxCPU && !sandboxUnknown {
		return plan
	}
	if sandboxWas == nil {
		plan.steps = append(append(ordered(mem), ordered(cpu)...), resizeStep{resources: newSandbox, overhead: overhead})
		plan.sandbox = newSandbox
		plan.memoryDecreases = containerDecreases
		return plan
	}
	// What the sandbox has as the steps go; a limit the pod no longer
	// names stays as it was (upstream: "This does not support removing
	// limits").
	now := proto.Clone(sandboxWas).(*runtimeapi.LinuxContainerResources)
	final := proto.Clone(newSandbox).(*runtimeapi.LinuxContainerResources)
	if final.MemoryLimitInBytes == 0 {
		final.MemoryLimitInBytes = now.MemoryLimitInBytes
	}
	if final.CpuQuota == 0 {
		final.CpuQuota = now.CpuQuota
	}
	if final.CpuPeriod == 0 { // quotas not enforced: the sandbox keeps its own
		final.CpuPeriod = now.CpuPeriod
	}
	sandboxStep := func(res v1.ResourceName, set func(r *runtimeapi.LinuxContainerResources)) {
		r := proto.Clone(now).(*runtimeapi.LinuxContainerResources)
		set(r)
		if proto.Equal(r, now) {
			return
		}
		plan.steps = append(plan.steps, resizeStep{res: res, resources: r, overhead: overhead})
		now = r
	}
	// Memory: the sandbox's limit raised before the containers, lowered
	// after them (memory requests are not in cgroups).
	if len(mem) > 0 || len(plan.kills) > 0 || sandboxMem {
		up := final.MemoryLimitInBytes > now.MemoryLimitInBytes
		if !up && final.MemoryLimitInBytes > 0 && final.MemoryLimitInBytes < now.MemoryLimitInBytes {
			plan.memoryDecreases = append(plan.memoryDecreases, memoryDecrease{limit: final.MemoryLimitInBytes})
		}
		if up {
			sandboxStep(v1.ResourceMemory, func(r *runtimeapi.LinuxContainerResources) { r.MemoryLimitInBytes = final.MemoryLimitInBytes })
		}
		plan.steps = append(plan.steps, ordered(mem)...)
		if !up {
			sandboxStep(v1.ResourceMemory, func(r *runtimeapi.LinuxContainerResources) { r.MemoryLimitInBytes = final.MemoryLimitInBytes })
		}
	}
	// CPU: limits before requests on the way up, requests before limits
	// on the way down (requests <= limits throughout).
	if len(cpu) > 0 || len(plan.kills) > 0 || sandboxCPU {
		sandboxStep(v1.ResourceCPU, func(r *runtimeapi.LinuxContainerResources) {
			if final.CpuQuota > now.CpuQuota {
				r.CpuQuota, r.CpuPeriod = final.CpuQuota, final.CpuPeriod
			}
			if final.CpuShares > now.CpuShares {
				r.CpuShares = final.CpuShares
			}
		})
		plan.steps = append(plan.steps, ordered(cpu)...)
		sandboxStep(v1.ResourceCPU, func(r *runtimeapi.LinuxContainerResources) {
			r.CpuShares, r.CpuQuota, r.CpuPeriod = final.CpuShares, final.CpuQuota, final.CpuPeriod
		})
	}
	plan.sandbox = now
	plan.memoryDecreases = append(plan.memoryDecreases, containerDecreases...)
	return plan
}

// checkMemoryDecreases is upstream's best-effort check before a resize
// lowers memory limits in place (validateMemoryResizeAction, Kubernetes
// 1.34+): a lowered limit must stay above the current memory usage (the
// runtime's usage_bytes) of the pod (its sandbox's limit; podUsage, nil
// if not reported) or container (containerUsage by container id),
// since the kernel cannot take back memory in use (cgroup v2 would
// OOM-kill). Every decrease at or below its usage, or whose usage was not
// reported, is an error; the kubelet then makes none of the resize's CRI
// calls and reports the errors as PodResizeInProgress Error, retrying
// the resize at each sync. Nil when every decrease is safe.
func checkMemoryDecreases(ds []memoryDecrease, containerUsage map[string]uint64, podUsage *uint64) error {
	var errs []error
	for _, d := range ds {
		if d.containerID == "" {
			switch {
			case podUsage == nil:
				errs = append(errs, errors.New("missing pod memory usage"))
			case *podUsage >= uint64(d.limit):
				errs = append(errs, fmt.Errorf("attempting to set pod memory limit (%d) below current usage (%d)", d.limit, *podUsage))
			}
			continue
		}
		usage, ok := containerUsage[d.containerID]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("missing container %q memory usage", d.name))
		case usage >= uint64(d.limit):
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", d.name, d.limit, usage))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// ordered are the updates' steps, the decreases first, each kind in the
// containers' order (upstream's).
func ordered(us []containerUpdate) []resizeStep {
	var out []resizeStep
	for _, up := range []bool{false, true} {
		for _, u := range us {
			if u.up == up {
				out = append(out, u.step)
			}
		}
	}
	return out
}

// resizeSummary is what upstream's resize events say of a pod's
// resources: each init and app container's, the generation and, for a
// pending or failed resize, why.
type resizeSummary struct {
	InitContainers []containerAllocation `json:"initContainers,omitempty"`
	Containers     []containerAllocation `json:"containers,omitempty"`
	Generation     int64                 `json:"generation"`
	Error          string                `json:"error,omitempty"`
}

type containerAllocation struct {
	Name      string                  `json:"name"`
	Resources v1.ResourceRequirements `json:"resources,omitempty"`
}

// resizeEventMessage is upstream's resize event message: prefix, then
// the JSON summary of pod's containers' resources (pod as allocated for
// ResizeStarted, ResizeCompleted and ResizeError; as desired for a
// pending resize), generation and errMsg.
func resizeEventMessage(prefix string, pod *v1.Pod, generation int64, errMsg string) string {
	s := resizeSummary{Generation: generation, Error: errMsg}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s.InitContainers = append(s.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s.Containers = append(s.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}

// resizeCondition is a resize condition of type t set now for generation.
func resizeCondition(t v1.PodConditionType, reason, message string, generation int64, now metav1.Time) *v1.PodCondition {
	return &v1.PodCondition{Type: t, Status: v1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: now}
}
