package kubelet

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// The effects of an in-place resize (resize.go decides): noting a pod
// whose resources changed, allocating, actuating, and the resize
// conditions and events.

// noteResizeLocked is HandlePod's (k.mu held): a pod admitted with
// resources other than those pod now asks for starts being kept as
// resized, allocated what old (the version the kubelet had) said; with
// pod-level resources, its sandbox known to have old's (what it was made
// with), which a pod-level resize changes. Pods
// of the same generation are not compared (a status write does not
// change the spec; a resize bumps the generation), unless the API server
// keeps none.
func (k *Kubelet) noteResizeLocked(rec *podRecord, old, pod *v1.Pod) {
	if !rec.admitted || rec.rejected || old == nil || old == pod || (old.Generation == pod.Generation && pod.Generation != 0) {
		return
	}
	if _, ok := k.resizes[pod.UID]; ok || !resourcesChanged(old, pod) {
		return
	}
	if k.resizes == nil {
		k.resizes = map[types.UID]*podResize{}
	}
	r := &podResize{allocated: allocationOf(old)}
	if old.Spec.Resources != nil || pod.Spec.Resources != nil {
		r.sandbox, _ = sandboxResources(old, k.cfg.cgroupParams())
	}
	k.resizes[pod.UID] = r
	k.saveAllocationsLocked()
}

// backfillResizeLocked is HandlePod's for a pod first handed to the
// kubelet (k.mu held): a pod whose allocation the kubelet kept from
// before it started (resizestate.go) reports again the PodResizePending
// condition its status carries, as upstream's HandlePodAdditions
// backfills the resize conditions of the pods it is given from their
// statuses. So, while its resize waits for the pod source and the other
// pods' admission (allocateResize), the condition is not dropped, and a
// retry finding the same reason and message keeps it as it was.
func (k *Kubelet) backfillResizeLocked(pod *v1.Pod) {
	r := k.resizes[pod.UID]
	if r == nil || r.pending != nil {
		return
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodResizePending {
			r.pending = &c
			return
		}
	}
}

// admittedOthersLocked are the pods admitted beside rec's that still
// hold resources (not rejected, not terminal), each as allocated (k.mu
// held).
func (k *Kubelet) admittedOthersLocked(rec *podRecord) []*v1.Pod {
	return k.appendAllocatedLocked(nil, func(r *podRecord) bool {
		return r != rec && r.admitted && !r.rejected && r.pod != nil && r.terminal == nil && !podsync.IsTerminalPhase(r.pod.Status.Phase)
	})
}

// appendAllocatedLocked appends to out the pod of every record keep
// accepts, as allocated: with its resize's allocation while one is
// pending (k.mu held).
func (k *Kubelet) appendAllocatedLocked(out []*v1.Pod, keep func(*podRecord) bool) []*v1.Pod {
	for uid, r := range k.pods {
		if !keep(r) {
			continue
		}
		p := r.pod
		if x := k.resizes[uid]; x != nil {
			p = withAllocation(p, x.allocated)
		}
		out = append(out, p)
	}
	return out
}

// allocateResize is the pod as allocated for this sync, and its resize
// state (nil for a pod never resized: the pod itself is its allocation).
// A resize the pod's spec asks for is admitted now or reported pending
// (PodResizePending Infeasible or Deferred, with upstream's warning event
// when its reason or message changes); an admitted one is allocated,
// reported in progress, with upstream's ResizeStarted event. Until the
// pod source has delivered every pod and each went through admission, a
// resize is neither admitted nor reported: the pod runs as allocated.
func (k *Kubelet) allocateResize(rec *podRecord, pod *v1.Pod, now time.Time) (*v1.Pod, *podResize) {
	k.mu.Lock()
	r := k.resizes[pod.UID]
	if r == nil {
		k.mu.Unlock()
		return pod, nil
	}
	delete(k.resizesAwaiting, pod.UID) // waiting again below if still so
	var eventType, reason, message string
	t := metav1.NewTime(now)
	switch {
	case pod.DeletionTimestamp != nil || podsync.IsTerminalPhase(pod.Status.Phase):
		// A pod going away is not resized any more.
	case allocated(pod, r.allocated):
		r.pending = nil
	case !k.sourceSynced:
		// Not before the pod source has delivered every pod, as
		// upstream's allocation manager skips its pending resizes until
		// its sources are ready: a kubelet just restarted would admit
		// it beside only the pods handed to it so far, and refuse
		// those still to come. MarkSourceSynced syncs every pod again.
	case k.admissionPendingLocked(rec):
		// Nor before every pod handed to the kubelet went through
		// admission (a pod is admitted at its first sync), as upstream
		// admits a batch of new pods before it retries resizes: the
		// resize would take what those are about to be admitted with.
		// Tried again once the last of them is decided
		// (wakeAwaitingResizesLocked), not polled.
		if k.resizesAwaiting == nil {
			k.resizesAwaiting = map[types.UID]struct{}{}
		}
		k.resizesAwaiting[pod.UID] = struct{}{}
	default:
		was := withAllocation(pod, r.allocated)
		ok, why, msg := admitResize(k.allocatable, pod, was, k.admittedOthersLocked(rec), k.cfg.Memory.Value(), k.cfg.swap)
		switch {
		case ok:
			r.allocated, r.pending = allocationOf(pod), nil
			r.cpuLimitsBefore = cpuLimitsOf(was)
			k.saveAllocationsLocked()
			r.inProgress = resizeCondition(v1.PodResizeInProgress, "", "", pod.Generation, t)
			eventType, reason, message = v1.EventTypeNormal, EventResizeStarted, resizeEventMessage("Pod resize started", pod, pod.Generation, "")
		case r.pending == nil || r.pending.Reason != why || r.pending.Message != msg:
			r.pending = resizeCondition(v1.PodResizePending, why, msg, pod.Generation, t)
			reason = EventResizeDeferred
			if why == v1.PodReasonInfeasible {
				reason = EventResizeInfeasible
			}
			eventType, message = v1.EventTypeWarning, resizeEventMessage("Pod resize "+why, pod, pod.Generation, msg)
		case r.pending.ObservedGeneration != pod.Generation:
			c := *r.pending
			c.ObservedGeneration = pod.Generation
			r.pending = &c
		}
	}
	alloc := withAllocation(pod, r.allocated)
	k.mu.Unlock()
	if reason != "" {
		k.podEvent(pod, eventType, reason, "%s", message)
	}
	return alloc, r
}

// admissionPendingLocked reports whether a pod other than rec's was handed
// to the kubelet and not yet admitted or rejected (k.mu held): one neither
// finished nor going away, which its first sync admits.
func (k *Kubelet) admissionPendingLocked(rec *podRecord) bool {
	for _, r := range k.pods {
		if r != rec && r.pod != nil && !r.admitted && !r.rejected && r.pod.DeletionTimestamp == nil && !podsync.IsTerminalPhase(r.pod.Status.Phase) {
			return true
		}
	}
	return false
}

// wakeAwaitingResizesLocked is the pods whose resize waits for other
// pods' admission (allocateResize), to be synced again, once none is
// left to admit (k.mu held; empty while some is, or none waits). Called
// wherever a pod stops waiting for admission: admitted or rejected
// (admit), deleted or finished (HandlePod), gone from the API
// (HandlePodDeleted). The pods returned stop waiting; the caller enqueues
// them once k.mu is released.
func (k *Kubelet) wakeAwaitingResizesLocked() []types.UID {
	if len(k.resizesAwaiting) == 0 || k.admissionPendingLocked(nil) {
		return nil
	}
	uids := make([]types.UID, 0, len(k.resizesAwaiting))
	for uid := range k.resizesAwaiting {
		uids = append(uids, uid)
	}
	k.resizesAwaiting = nil
	return uids
}

// ensureResize is the resize state of a pod whose running containers
// have cgroup values other than its allocation's while the kubelet kept
// none (a kubelet restarted during a resize: the spec is the
// allocation), or whose sandbox an earlier kubelet made for its
// pod-level resources (its values not known), made now.
func (k *Kubelet) ensureResize(pod *v1.Pod) *podResize {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r := k.resizes[pod.UID]; r != nil {
		return r
	}
	if k.resizes == nil {
		k.resizes = map[types.UID]*podResize{}
	}
	r := &podResize{allocated: allocationOf(pod)}
	k.resizes[pod.UID] = r
	k.saveAllocationsLocked()
	return r
}

// planPodResize is the resize this sync actuates for pod (as allocated;
// rs the runtime's view, a the sync's decisions): none unless a running
// container's cgroup values, or the sandbox's of a pod with pod-level
// resources, are not its allocation's (a sandbox the sync makes anew is
// made with them; one an earlier kubelet made for a pod with pod-level
// resources is taken as unknown). Its restarts join a's kills and starts.
func (k *Kubelet) planPodResize(pod *v1.Pod, rs *podstate.Pod, r *podResize, a *podsync.Actions) (*podResize, resizePlan) {
	if a.CreateSandbox && r != nil && pod.Spec.Resources != nil {
		// The new sandbox is made with the allocation's values.
		r.sandbox, _ = sandboxResources(pod, k.cfg.cgroupParams())
	}
	if a.KillPod || a.CreateSandbox {
		return r, resizePlan{}
	}
	if r == nil && pod.Spec.Resources != nil {
		if sb := rs.LatestSandbox(); sb != nil && sb.Ready && sb.CreatedAt.Before(k.started) {
			// Made by an earlier kubelet, for this pod's pod-level
			// resources as they were then (a resize while no kubelet
			// ran): what the sandbox has is not known, so it is given
			// the allocation's values once (sandboxResizeNeeded).
			r = k.ensureResize(pod)
		}
	}
	if !resizeNeeded(pod, rs, r.limitsBefore(), k.cfg.cfs) && !sandboxResizeNeeded(pod, rs, r, k.cfg.cfs) {
		return r, resizePlan{}
	}
	if r == nil {
		r = k.ensureResize(pod)
	}
	killed := func(id string) bool {
		for _, kill := range a.ContainersToKill {
			if kill.ContainerID == id {
				return true
			}
		}
		return false
	}
	plan := planResize(pod, rs, r.sandbox, r.cpuLimitsBefore, k.cfg.cgroupParams(), killed)
	a.ContainersToKill = append(a.ContainersToKill, plan.kills...)
	a.ContainersToStart = append(a.ContainersToStart, plan.starts...)
	return r, plan
}

// actuateResize makes the plan's CRI calls in order, stopping at the
// first that fails (the next sync plans again from what the runtime then
// reports), as upstream's doPodResizeAction; a runtime without
// UpdatePodSandboxResources (gRPC Unimplemented) is skipped, as
// upstream's. On a node whose cgroups the kubelet manages it also changes
// the pod's cgroup (podcgroups.go), in upstream's order: for memory, then
// CPU, the values that grow before that resource's steps and those that
// shrink after them (so a runtime without UpdatePodSandboxResources,
// containerd 1.6, has its pod cgroup follow the resize too).
func (k *Kubelet) actuateResize(ctx context.Context, pod *v1.Pod, rs *podstate.Pod, r *podResize, plan *resizePlan) error {
	if len(plan.steps) == 0 {
		return nil
	}
	sb := rs.LatestSandbox()
	if len(plan.memoryDecreases) > 0 {
		if err := k.checkMemoryUsage(ctx, sb.ID, plan.memoryDecreases); err != nil {
			return err
		}
	}
	pc, err := k.startPodCgroupResize(pod)
	if err != nil {
		return err
	}
	// cgroupSteps writes the pod cgroup's growing (up) or shrinking values
	// of res.
	cgroupSteps := func(res v1.ResourceName, up bool) error {
		if pc == nil {
			return nil
		}
		return k.podCgroupResizeStep(pc, res, up)
	}
	var cur v1.ResourceName // the resource whose steps are being made
	var done [2]bool        // memory's and CPU's steps made
	for _, s := range plan.steps {
		if pc != nil && s.res != "" && s.res != cur {
			if cur != "" {
				if err := cgroupSteps(cur, false); err != nil {
					return err
				}
			}
			if err := cgroupSteps(s.res, true); err != nil {
				return err
			}
			cur = s.res
			done[boolIndex(s.res == v1.ResourceCPU)] = true
		}
		if s.containerID == "" {
			err := k.rt.UpdatePodSandboxResources(ctx, sb.ID, s.overhead, s.resources)
			if grpcstatus.Code(err) == codes.Unimplemented {
				k.log.Debug("runtime has no UpdatePodSandboxResources", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				continue
			}
			if err != nil {
				return fmt.Errorf("updating the resources of the sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			continue
		}
		if err := k.rt.UpdateContainerResources(ctx, s.containerID, s.resources); err != nil {
			return fmt.Errorf("updating the resources of container %s of pod %s/%s: %w", s.name, pod.Namespace, pod.Name, err)
		}
	}
	if pc != nil {
		if cur != "" {
			if err := cgroupSteps(cur, false); err != nil {
				return err
			}
		}
		// A resource no step changed (its containers restarted for it):
		// the pod cgroup follows it all the same.
		for i, res := range [...]v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
			if done[i] {
				continue
			}
			if err := cgroupSteps(res, true); err != nil {
				return err
			}
			if err := cgroupSteps(res, false); err != nil {
				return err
			}
		}
	}
	r.sandbox = plan.sandbox
	return nil
}

// checkMemoryUsage reads the current memory usage of the pod sandbox sb
// and its containers from the runtime (CRI ListPodSandboxStats and
// ListContainerStats, as upstream's CRI stats provider; only when a
// resize lowers a memory limit) and checks the decreases against it
// (checkMemoryDecreases). A runtime that reports no stats leaves every
// usage missing: the decreases are refused.
func (k *Kubelet) checkMemoryUsage(ctx context.Context, sandboxID string, ds []memoryDecrease) error {
	var podUsage *uint64
	containerUsage := map[string]uint64{}
	if sp, ok := k.rt.(runtime.StatsProvider); ok {
		pod := false
		for _, d := range ds {
			pod = pod || d.containerID == ""
		}
		if pod {
			stats, err := sp.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{Id: sandboxID})
			if err != nil {
				return fmt.Errorf("reading the memory usage of pod sandbox %s: %w", sandboxID, err)
			}
			for _, st := range stats {
				if u := st.GetLinux().GetMemory().GetUsageBytes(); u != nil && st.GetAttributes().GetId() == sandboxID {
					v := u.GetValue()
					podUsage = &v
				}
			}
		}
		stats, err := sp.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{PodSandboxId: sandboxID})
		if err != nil {
			return fmt.Errorf("reading the memory usage of the containers of pod sandbox %s: %w", sandboxID, err)
		}
		for _, st := range stats {
			if u := st.GetMemory().GetUsageBytes(); u != nil {
				containerUsage[st.GetAttributes().GetId()] = u.GetValue()
			}
		}
	}
	return checkMemoryDecreases(ds, containerUsage, podUsage)
}

// resizeProgress updates the pod's PodResizeInProgress after the sync's
// actions (rs the runtime's view after them, failed the actuation's
// error): an Error while actuating fails (with upstream's ResizeError
// event when the error is new; the condition keeps the generation it
// had), in progress while a running container's cgroup values are not
// its allocation's (or the sandbox's of a pod with pod-level resources),
// and removed with upstream's ResizeCompleted event once they are.
func (k *Kubelet) resizeProgress(pod *v1.Pod, rs *podstate.Pod, r *podResize, failed error, now time.Time) {
	if r == nil {
		return
	}
	t := metav1.NewTime(now)
	gen := pod.Generation
	if r.inProgress != nil {
		gen = r.inProgress.ObservedGeneration
	}
	switch {
	case failed != nil:
		msg := failed.Error()
		if r.inProgress != nil && r.inProgress.Reason == v1.PodReasonError && r.inProgress.Message == msg {
			return
		}
		c := resizeCondition(v1.PodResizeInProgress, v1.PodReasonError, msg, gen, t)
		if r.inProgress != nil {
			c.LastTransitionTime = r.inProgress.LastTransitionTime
		}
		r.inProgress = c
		k.podEvent(pod, v1.EventTypeWarning, EventResizeError, "%s", resizeEventMessage("Pod resize error", pod, gen, msg))
	case resizeNeeded(pod, rs, r.limitsBefore(), k.cfg.cfs) || sandboxResizeNeeded(pod, rs, r, k.cfg.cfs):
		switch {
		case r.inProgress == nil:
			r.inProgress = resizeCondition(v1.PodResizeInProgress, "", "", gen, t)
		case r.inProgress.Reason == v1.PodReasonError:
			c := resizeCondition(v1.PodResizeInProgress, "", "", gen, r.inProgress.LastTransitionTime)
			r.inProgress = c
		}
	case r.inProgress != nil:
		r.inProgress = nil
		k.podEvent(pod, v1.EventTypeNormal, EventResizeCompleted, "%s", resizeEventMessage("Pod resize completed", pod, gen, ""))
	}
}

// clearResizeConditions forgets the resize conditions of a pod that is
// terminal: it reports none, as upstream's determinePodResizeStatus
// clears both then.
func (k *Kubelet) clearResizeConditions(r *podResize) {
	k.mu.Lock()
	r.pending, r.inProgress = nil, nil
	k.mu.Unlock()
}

// retryPendingResizesLocked asks for a sync of every pod whose resize is
// pending (k.mu held), once resources may have been freed (a pod gone),
// as upstream's allocation manager retries them.
func (k *Kubelet) retryPendingResizesLocked() []types.UID {
	var uids []types.UID
	for uid, r := range k.resizes {
		if r.pending != nil {
			uids = append(uids, uid)
		}
	}
	return uids
}
