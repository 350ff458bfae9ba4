package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/prober"
	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
	"github.com/kubeproof/kubeproof/impl/kubelet/status"
)

// minimumGracePeriod is the least time a container gets to stop, as
// upstream.
const minimumGracePeriod = 2

// minimumKillGrace is the least grace period a kill ending a pod is
// given, as upstream's pod worker always hands SyncTerminatingPod's kill
// one of at least 1 s (calculateEffectiveGracePeriod), a force delete's 0
// included: a preStop hook then runs within it (killContainer), the
// container stopped with at least minimumGracePeriod.
const minimumKillGrace = 1

// Waiting reasons the kubelet sets on errors, as upstream.
const (
	reasonErrImagePull       = podsync.ReasonErrImagePull
	reasonErrImageNeverPull  = "ErrImageNeverPull"
	reasonCreateContainerErr = "CreateContainerError"
	reasonRunContainerErr    = "RunContainerError"
	reasonPostStartHookErr   = "PostStartHookError"
)

// syncPod converges one pod with the runtime and reports its status. It
// returns when the pod should next be synced even if nothing happens.
func (k *Kubelet) syncPod(ctx context.Context, uid types.UID) (time.Duration, error) {
	// A pod the eviction manager chose is killed first (evict.go); until
	// that kill succeeds nothing else of it is synced, as upstream's pod
	// worker runs only SyncTerminatingPod for a terminating pod.
	if err := k.evictPod(ctx, uid); err != nil {
		return 0, err
	}
	k.mu.Lock()
	rec := k.pods[uid]
	var pod *v1.Pod
	if rec != nil {
		pod = rec.pod
	}
	synced := k.sourceSynced
	k.mu.Unlock()
	if rec == nil {
		return 0, nil
	}
	defer rec.tidy()
	if pod != nil {
		k.trace(TraceSyncStart, pod)
	}
	rs, err := k.podRuntimeState(ctx, uid)
	if err != nil {
		return 0, err
	}
	if pod == nil {
		if !synced {
			return k.cfg.SyncFrequency, nil // the source may still deliver it
		}
		return 0, k.cleanupPod(ctx, uid, rec, rs)
	}
	now := k.clock.Now()
	k.mu.Lock() // lastStatus: the kubelet API's log requests read it too
	shareLastStatus(rec, pod)
	k.mu.Unlock()
	for image, e := range rec.x().imagePulls {
		if podsync.ImagePullExpired(k.cfg.ImagePullBackoff, e, now) {
			delete(rec.x().imagePulls, image) // decides as no entry would
		}
	}

	// Admission, once per pod (not for pods already finished or going away).
	if k.admit(rec, pod) && rec.x().rejection != nil {
		k.podEvent(pod, v1.EventTypeWarning, rec.x().rejection.Reason, "%s", rec.x().rejection.Message)
	}
	if rec.x().rejection != nil {
		return 0, k.finishRejected(ctx, rec, pod)
	}

	probeResults, nextProbe := k.runProbes(ctx, rec, pod, rs, now)
	view := k.podView(rec, pod)
	if rec.terminal != nil && !podsync.IsTerminalPhase(view.Status.Phase) {
		// A pod the kubelet decided terminal (evicted, past its deadline)
		// is killed and nothing of it starts again, whatever phase it
		// reports (held back until nothing of it runs; a failed write).
		v := *view
		v.Status.Phase = rec.terminal.Phase
		view = &v
	}
	// The pod as allocated: its resources as admitted until a resize of
	// them is (resize.go); the pod itself for a pod never resized.
	view, resize := k.allocateResize(rec, view, now)
	if rec.lastStatus == nil && !rec.x().killed && podsync.FoundTerminated(pod, rs) {
		// First synced by this kubelet (none of its statuses written yet:
		// the kubelet restarted), the pod had been terminated: it is not
		// killed again, as upstream's pod workers.
		k.markKilled(uid, rec)
	}
	k.markSynced(uid)
	// A running pod whose cgroup is gone is killed, to start again in a
	// new one, as upstream's syncPod (podcgroups.go).
	if killed, err := k.killPodWithoutCgroup(ctx, view, rs, rec.ending(view)); err != nil {
		return 0, err
	} else if killed {
		if rs, err = k.podRuntimeState(ctx, uid); err != nil {
			return 0, err
		}
	}
	actions := podsync.ComputePodActions(podsync.Input{
		Pod: view, Runtime: rs, Probes: probeResults, Backoff: rec.x().backoff, Now: now, Config: k.cfg.Backoff,
		Killed: rec.x().killed,
	})
	resize, plan := k.planPodResize(view, rs, resize, &actions)
	if actions.Waiting != nil || rec.extra != nil {
		rec.more().waiting = actions.Waiting
	}
	k.decisionEvents(pod, rec, actions)
	for key, e := range actions.Backoff {
		x := rec.more()
		if x.backoff == nil {
			x.backoff = map[string]podsync.BackoffEntry{}
		}
		x.backoff[key] = e
	}
	if actions.Terminal != nil {
		if rec.terminal == nil {
			k.markDecided(uid, rec)
		}
		rec.terminal = actions.Terminal
	}
	execPod := pod
	if resize != nil {
		execPod = withAllocation(pod, resize.allocated)
	}
	// A sync starting (or restarting) containers of a pod not being ended
	// is cut short once its termination is requested (syncInFlight).
	execCtx := ctx
	var inFlight *syncInFlight
	if (!actions.KillPod || actions.CreateSandbox) && (actions.CreateSandbox || len(actions.ContainersToStart) > 0 || len(actions.ContainersToKill) > 0) {
		if execCtx, inFlight = k.startingSync(ctx, uid, rec); inFlight == nil {
			return 0, nil // requested since the sync took the pod: its own sync follows
		}
	}
	execErr, resizeErr := k.execute(execCtx, rec, execPod, rs, actions, resize, &plan)
	if inFlight != nil {
		cut := execCtx.Err() != nil && ctx.Err() == nil
		k.syncDone(uid, inFlight)
		if cut {
			// Cut short, which is no failure (as upstream's SyncPod
			// returns none for a sandbox that failed so): the sync the
			// request queued kills the pod and writes its status.
			k.log.Debug("Pod sync cut short: its termination was requested", "pod", pod.Namespace+"/"+pod.Name, "podUID", uid, "err", execErr)
			return 0, nil
		}
	}
	if actions.KillPod && !actions.CreateSandbox && execErr == nil {
		// The kill that ends the pod succeeded: it is terminated, not
		// killed again on every resync (podsync.KillNeeded).
		k.markKilled(uid, rec)
	}
	if execErr == nil && !actions.KillPod {
		execErr = k.refreshVolumes(ctx, rec, pod, actions, now)
	}

	// What the runtime holds now, unless the sync changed nothing there
	// (a resync of a running pod): then the state just read stands, as
	// upstream's status comes from the state read before its actions; a
	// change since is the relist's to notice.
	if actions.KillPod || actions.CreateSandbox || len(actions.ContainersToKill) > 0 || len(actions.ContainersToStart) > 0 {
		if rs, err = k.podRuntimeState(ctx, uid); err != nil {
			return 0, errors.Join(execErr, err)
		}
	}
	terminating := rec.ending(pod) || (actions.KillPod && !actions.CreateSandbox)
	// Terminal once the kill that ends it succeeded (now or before) and
	// nothing of it runs: until then it could have running containers, as
	// upstream's pod worker says until SyncTerminatingPod succeeded (a
	// kill that failed is tried again, whatever the runtime reports since),
	// and a terminal phase is held back (status.Input.PodIsTerminal).
	// KUBELET-8: no terminal phase is written before then.
	podIsTerminal := terminating && rec.x().killed && rs.Stopped()
	// The terminal phase the kubelet decided (deadline, eviction) is
	// reported once the pod is terminal: as upstream's status manager
	// (mergePodStatus) holds a terminal phase and its DisruptionTarget back
	// while the pod could have running containers, a kill that failed
	// leaves the pod's phase as it was (status.Input.PodIsTerminal), its
	// conditions those of the phase decided, as upstream's.
	statusPod := k.podView(rec, pod)
	if resize != nil {
		statusPod = withAllocation(statusPod, resize.allocated)
		switch {
		case podIsTerminal:
			k.clearResizeConditions(resize)
		case !terminating:
			k.resizeProgress(statusPod, rs, resize, resizeErr, now)
		}
	}
	// A terminated pod's status is final (status.Input.Final: upstream's
	// TerminatePod) only once its volumes are torn down and its cgroup
	// removed, below; until then the plain terminal status, as upstream's
	// SyncTerminatingPod writes it once the kill succeeded.
	in := status.Input{
		Pod: statusPod, Runtime: rs, Probes: probeResults, Waiting: rec.x().waiting, Terminal: rec.terminal,
		PodIsTerminal: podIsTerminal, Final: podIsTerminal && rec.x().finalStatus, HostIPs: []string{k.cfg.NodeIP}, RuntimeType: k.rt.Type(), Now: now,
		Resize: resize.conditions(), PodCgroup: k.podCgroupStatus(statusPod),
	}
	st := status.GenerateAPIPodStatus(in)
	if err := k.writeStatus(ctx, rec, pod, st); err != nil {
		// The sync's own failure stays in the error: a volume set-up that
		// failed keeps its back-off (syncRetryDelay finds it in the join)
		// when the status write that reports it fails too, as it does
		// when the Node authorizer refuses both the token request and the
		// write for a pod its graph does not hold yet. Upstream's status
		// manager retries the write on its own; here the next sync does,
		// soon after a refusal (statusRefusedError).
		if apierrors.IsForbidden(err) {
			err = &statusRefusedError{err: err, retryAfter: nextRetryDelay(&rec.statusRefusals)}
		}
		return 0, errors.Join(execErr, err)
	}
	rec.statusRefusals = 0
	if podIsTerminal {
		// Its volumes are torn down now (subPath bind mounts, tmpfs
		// unmounted, directories removed), before the final delete
		// (memoryvolumes.go).
		if err := k.tearDownTerminatedVolumes(pod); err != nil {
			return 0, errors.Join(execErr, err)
		}
		// Then its cgroup, before the final delete.
		if err := k.removeTerminatedPodCgroup(rec, pod); err != nil {
			return 0, errors.Join(execErr, err)
		}
		// Then its final status, as upstream's SyncTerminatedPod ends with
		// TerminatePod after the volumes and the cgroup (a phase still
		// Pending or Running Failed, containers ContainerStatusUnknown),
		// which lets the pod be deleted (finalDelete, last).
		if !rec.x().finalStatus {
			in.Final = true
			if err := k.writeStatus(ctx, rec, k.latestPod(rec, pod), status.GenerateAPIPodStatus(in)); err != nil {
				return 0, errors.Join(execErr, err)
			}
			rec.more().finalStatus = true
			k.markFinished(uid, rec)
		}
	}
	if pod.DeletionTimestamp != nil && podIsTerminal {
		if err := k.finalDelete(ctx, rec, pod); err != nil {
			return 0, err
		}
	}

	requeue := time.Duration(0)
	next := actions.RequeueAt
	if !nextProbe.IsZero() && (next.IsZero() || nextProbe.Before(next)) {
		next = nextProbe
	}
	if !next.IsZero() {
		requeue = next.Sub(now)
		if requeue <= 0 {
			requeue = time.Millisecond
		}
	}
	if terminating && !podIsTerminal {
		requeue = time.Second
	}
	if resize != nil {
		// The resize is applied: the next sync sees the runtime report it
		// and completes it (upstream's kubelet watches for the new values).
		// Once: a runtime that accepted the update but still reports the
		// old values is tried again at the usual resync, as upstream's,
		// not in a loop.
		switch {
		case len(plan.steps) == 0:
			resize.rechecked = false
		case resizeErr == nil && !resize.rechecked:
			resize.rechecked = true
			if requeue == 0 || requeue > time.Millisecond {
				requeue = time.Millisecond
			}
		}
	}
	if resizeErr != nil {
		execErr = errors.Join(execErr, resizeErr)
	}
	for _, w := range rec.x().waiting {
		if w.Reason == podsync.ReasonCrashLoopBackOff {
			continue // its back-off's end is in actions.RequeueAt
		}
		// An image pull is retried once its back-off ends, other failed
		// creations (a missing ConfigMap) on the back-off base period.
		retry := k.cfg.Backoff.Base
		if !w.Until.IsZero() {
			retry = max(w.Until.Sub(now), time.Millisecond)
		}
		if requeue == 0 || requeue > retry {
			requeue = retry
		}
	}
	return requeue, execErr
}

// podView is the pod as the kubelet last reported it: the API pod with
// the status the kubelet last wrote (the informer may lag behind our own
// writes), unless the API already holds a terminal phase.
//
// The view is only read. Once the source has delivered the version the
// last write produced (shareLastStatus), the view of a pod whose other
// components' conditions come first (the order the kubelet writes them in,
// as upstream's: status.GenerateAPIPodStatus) is the pod itself: no copy
// is made on every sync.
func (k *Kubelet) podView(rec *podRecord, pod *v1.Pod) *v1.Pod {
	if rec.lastStatus == nil || podsync.IsTerminalPhase(pod.Status.Phase) {
		return pod
	}
	if rec.lastStatus == &pod.Status && ownConditionsLast(pod.Status.Conditions) {
		return pod
	}
	// A shallow copy: the decisions only read the pod, and its status is
	// replaced below.
	p := new(v1.Pod)
	*p = *pod
	st := *rec.lastStatus.DeepCopy()
	var cs []v1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !kubeletOwnsCondition(c.Type) {
			cs = append(cs, c)
		}
	}
	for _, c := range st.Conditions {
		if kubeletOwnsCondition(c.Type) {
			cs = append(cs, c)
		}
	}
	st.Conditions = cs
	p.Status = st
	return p
}

// kubeletOwnsCondition reports whether the kubelet writes pod conditions of
// type t (others, such as DisruptionTarget, are written by other
// components and taken from the API pod).
func kubeletOwnsCondition(t v1.PodConditionType) bool {
	switch t {
	case status.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled,
		v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

// ownConditionsLast reports whether no other component's condition
// follows a kubelet-owned one in cs, the order podView puts them in.
func ownConditionsLast(cs []v1.PodCondition) bool {
	own := false
	for _, c := range cs {
		switch {
		case kubeletOwnsCondition(c.Type):
			own = true
		case own:
			return false
		}
	}
	return true
}

// rejectedPrefix begins a rejected pod's status message, before the admit
// handler's message (which its event says alone), as upstream's rejectPod.
const rejectedPrefix = "Pod was rejected: "

// admit runs admission once for a pod not yet admitted; a rejection is
// recorded in rec.rejection. It reports whether it decided now. The last
// pod admitted (or rejected) wakes the resizes waiting for it.
func (k *Kubelet) admit(rec *podRecord, pod *v1.Pod) bool {
	k.mu.Lock()
	if rec.admitted || rec.rejected {
		k.mu.Unlock()
		return false
	}
	decided := k.admitLocked(rec, pod)
	wake := k.wakeAwaitingResizesLocked()
	k.mu.Unlock()
	for _, uid := range wake {
		k.enqueue(uid, 0)
	}
	return decided
}

// admitLocked is admit's decision for a pod not yet admitted (k.mu held).
func (k *Kubelet) admitLocked(rec *podRecord, pod *v1.Pod) bool {
	if rec.admitted || rec.rejected {
		return false
	}
	if pod.DeletionTimestamp != nil || podsync.IsTerminalPhase(pod.Status.Phase) {
		rec.admitted = true
		return false
	}
	others := k.admittedOthersLocked(rec)
	if r := k.resizes[pod.UID]; r != nil {
		// Admitted (again, by a restarted kubelet) with what was
		// allocated to it, as upstream's AddPod.
		pod = withAllocation(pod, r.allocated)
	}
	// Upstream's admit handlers in their order: the eviction manager's,
	// the sysctls', then the resource fit.
	ok, reason, message := AdmitUnderPressure(k.pressure, pod)
	if ok {
		ok, reason, message = k.cfg.sysctls.admit(pod)
	}
	if ok {
		ok, reason, message = Admit(k.allocatable, pod, others)
	}
	if !ok {
		rec.rejected = true
		// The event says the admit handler's message; the status, as
		// upstream's rejectPod writes it, says it after rejectedPrefix.
		rec.more().rejection = &podsync.Terminal{Phase: v1.PodFailed, Reason: reason, Message: message}
		return true
	}
	rec.admitted = true
	return true
}

// terminationRequested reports whether the pod's termination has been
// requested by now, as upstream's pod workers' IsPodTerminationRequested:
// the latest pod from the source is being deleted or finished, it is gone
// from the API, or the eviction manager chose it.
func (k *Kubelet) terminationRequested(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.pods[uid]
	if rec == nil || rec.pod == nil || rec.eviction != nil || rec.evicted {
		return true
	}
	return rec.pod.DeletionTimestamp != nil || podsync.IsTerminalPhase(rec.pod.Status.Phase)
}

// finishRejected writes a rejected pod's Failed status (until it sticks)
// and deletes the pod finally if it is being deleted.
func (k *Kubelet) finishRejected(ctx context.Context, rec *podRecord, pod *v1.Pod) error {
	if !podsync.IsTerminalPhase(pod.Status.Phase) {
		st := status.Rejected(pod, rec.x().rejection.Reason, rejectedPrefix+rec.x().rejection.Message)
		if err := k.writeStatus(ctx, rec, pod, st); err != nil {
			return err
		}
	}
	if pod.DeletionTimestamp != nil {
		return k.finalDelete(ctx, rec, pod)
	}
	return nil
}

func (k *Kubelet) writeStatus(ctx context.Context, rec *podRecord, pod *v1.Pod, st v1.PodStatus) error {
	// st is freshly generated (what it shares with the pod's status,
	// Normalize does not change): normalized once here, it is compared
	// with the statuses read from the API without copies.
	status.Normalize(&st)
	if rec.lastStatus != nil && status.Equal(rec.lastStatus, &st) && (rec.lastStatus == &pod.Status || status.Equal(&pod.Status, &st)) {
		return nil
	}
	k.trace(TraceStatusWriteStart, pod)
	updated, err := k.status.Write(ctx, pod, st)
	if err != nil {
		if errors.Is(err, status.ErrPodReplaced) || errors.Is(err, status.ErrTerminal) || apierrors.IsNotFound(err) {
			k.log.Info("not writing pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			return nil
		}
		return err
	}
	// The written pod stands in for the source's until the source catches
	// up (the next write then needs no conflict retry); managedFields are
	// never read.
	updated.ManagedFields = nil
	k.trace(TraceStatusWritten, updated)
	s := updated.Status
	k.mu.Lock()
	rec.lastStatus, rec.lastStatusRV = &s, updated.ResourceVersion
	if rec.pod != nil && rec.pod.ResourceVersion == pod.ResourceVersion {
		rec.pod = updated
	}
	k.mu.Unlock()
	return nil
}

// latestPod is rec's pod as last delivered or written (a status write
// in this sync replaced it), or pod, the sync's, once it is gone.
func (k *Kubelet) latestPod(rec *podRecord, pod *v1.Pod) *v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := rec.pod; p != nil && p.UID == pod.UID {
		return p
	}
	return pod
}

// podCgroupStatus is what status.PodStatusResources takes as the cgroup
// of pod (as allocated) for its pod-level status.resources: nothing
// unless the pod's last reported phase is Running, as upstream's kubelet
// reads the pod cgroup (GetPodCgroupConfig) only then; on a node whose
// cgroups the kubelet manages (a CRI node) the pod cgroup as read now,
// its memory limit and its CPU values read separately as upstream's
// convertToAPIPodLevelResourcesStatus does: a read that fails is nothing
// read of that resource, the other's values still taken, and is logged
// at error level with upstream's messages (its CPU one says "memory
// cgroup limits" too), as the kubelet logs what upstream logs as errors;
// on a simulated node, which has none, the values a pod cgroup is given
// for pod's allocation (podCgroupValues), so there a resize shows its new
// values once allocated, where upstream's show them once applied.
func (k *Kubelet) podCgroupStatus(pod *v1.Pod) status.PodCgroup {
	if pod.Status.Phase != v1.PodRunning {
		return status.PodCgroup{}
	}
	if k.cgroups == nil {
		c := podCgroupValues(pod, k.cfg.cfs, 0)
		return status.PodCgroup{CPUShares: c.cpuShares, CPUQuota: c.cpuQuota, CPUPeriod: c.cpuPeriod, Memory: c.memory}
	}
	var cg status.PodCgroup
	name := k.podCgroupName(pod)
	if c, err := k.cgroups.read(name, v1.ResourceMemory); err != nil {
		k.log.Error("failed to read memory cgroup config for the pod", "podName", pod.Name, "err", err)
	} else {
		cg.Memory = c.memory
	}
	if c, err := k.cgroups.read(name, v1.ResourceCPU); err != nil {
		k.log.Error("failed to read memory cgroup limits for the pod", "podName", pod.Name, "err", err)
	} else {
		cg.CPUShares, cg.CPUQuota, cg.CPUPeriod = c.cpuShares, c.cpuQuota, c.cpuPeriod
	}
	return cg
}

// shareLastStatus points rec.lastStatus at pod's status once the pod
// source delivers the very version the last write produced, so the kubelet
// keeps one copy of a pod's status instead of two (the source's and the
// write's). It takes the pod's copy of the equal resourceVersion too: the
// write's answer is then garbage as a whole, not held on to for one
// string. The source's pods are read-only; until the next write the
// record holds on to that version of the pod even if a newer one arrives.
// The sync worker calls it with Kubelet.mu held.
func shareLastStatus(rec *podRecord, pod *v1.Pod) {
	if rec.lastStatus == nil || rec.lastStatusRV == "" || pod.ResourceVersion != rec.lastStatusRV || rec.lastStatus == &pod.Status {
		return
	}
	rec.lastStatus, rec.lastStatusRV = &pod.Status, pod.ResourceVersion
}

// finalDelete removes a fully stopped, deleted pod from the API: grace 0
// with a UID precondition, once.
func (k *Kubelet) finalDelete(ctx context.Context, rec *podRecord, pod *v1.Pod) error {
	if rec.finalDeleteSent {
		return nil
	}
	uid := pod.UID
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	rec.finalDeleteSent = true
	return nil
}

// removeTerminatedPodCgroup removes the cgroup of pod, terminated and its
// volumes torn down, once, as upstream's SyncTerminatedPod destroys it
// right after the pod's volumes are unmounted (its pod container
// manager's Destroy: the processes left killed, then the cgroup removed;
// destroyPodCgroup) and before it marks the pod's final status, which
// lets the status manager delete the pod: a failure fails the sync,
// which is retried, and no final delete is sent until the removal
// succeeds. The orphaned pod cgroup clean-up (cleanupOrphanedPodCgroups)
// stays the backstop. Nothing on a node whose cgroups the kubelet does
// not manage (a simulated one).
func (k *Kubelet) removeTerminatedPodCgroup(rec *podRecord, pod *v1.Pod) error {
	if k.cgroups == nil || rec.x().cgroupRemoved {
		return nil
	}
	if err := k.destroyPodCgroup(k.podCgroupName(pod)); err != nil {
		return fmt.Errorf("removing the cgroup of terminated pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	k.log.Debug("Pod termination removed cgroups", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
	rec.more().cgroupRemoved = true
	return nil
}

// cleanupPod kills and removes everything of a pod that is gone from the
// API, then forgets it.
func (k *Kubelet) cleanupPod(ctx context.Context, uid types.UID, rec *podRecord, rs *podstate.Pod) error {
	k.mu.Lock()
	lastPod := rec.lastPod // HandlePodDeleted may shorten its grace period
	k.mu.Unlock()
	grace := int64(minimumGracePeriod)
	if lastPod != nil {
		grace = podsync.GracePeriod(lastPod)
	}
	// Never longer than an earlier kill ending the pod was given
	// (terminatePod).
	grace = rec.x().boundKillGrace(grace)
	if lastPod != nil {
		grace = max(grace, minimumKillGrace) // a force delete's 0 is 1 s
	}
	// A pod already terminated is not killed again (podsync.KillNeeded):
	// upstream's housekeeping kills only runtime pods still running. Nor
	// is one this kubelet never had from the source (lastPod nil: a
	// restarted kubelet found it in the runtime, gone from the API), unless
	// something of it runs: upstream's housekeeping kills only the runtime
	// pods with a running container or a ready sandbox that no pod worker
	// knows.
	if podsync.KillNeeded(rs, rec.x().killed || lastPod == nil) {
		killAs, killRS := lastPod, rs
		if lastPod == nil {
			// Its spec lost (a restarted kubelet found it in the runtime):
			// killed as the pod the runtime knows, as upstream's
			// SyncTerminatingRuntimePod (orphankill.go).
			killAs, killRS = k.runtimeAPIPod(ctx, uid, rs)
		}
		if err := k.killPod(ctx, killAs, killRS, grace); err != nil {
			// Upstream's SyncTerminatingRuntimePod records it on the pod
			// the runtime knows.
			k.failedKillPod(killAs, err)
			return fmt.Errorf("killing pod %s: %w", uid, err)
		}
	}
	for _, s := range rs.Sandboxes {
		if err := k.rt.RemovePodSandbox(ctx, s.ID); err != nil {
			return fmt.Errorf("removing sandbox %s of pod %s: %w", s.ID, uid, err)
		}
	}
	for _, c := range rs.Containers {
		if err := k.rt.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("removing container %s of pod %s: %w", c.ID, uid, err)
		}
	}
	if err := k.removePodDir(uid); err != nil {
		return err
	}
	k.removePodCgroup(string(uid))
	k.mu.Lock()
	var retry []types.UID
	if r := k.pods[uid]; r == rec && r.pod == nil {
		delete(k.pods, uid)
		delete(k.terminated, uid)
		delete(k.decided, uid)
		k.forgetUnsyncedLocked(uid)
		if _, ok := k.resizes[uid]; ok {
			delete(k.resizes, uid)
			k.saveAllocationsLocked()
		}
		// Its resources are free: pending resizes are tried again.
		retry = k.retryPendingResizesLocked()
	}
	k.mu.Unlock()
	k.wakeEvictionWait() // a victim gone is one whose kill ended
	for _, u := range retry {
		k.enqueue(u, 0)
	}
	return nil
}

// execute carries out the actions, and the in-place resize plan after
// the kills and before the starts, as upstream's SyncPod; resizeErr is
// the resize's failure.
func (k *Kubelet) execute(ctx context.Context, rec *podRecord, pod *v1.Pod, rs *podstate.Pod, a podsync.Actions, resize *podResize, plan *resizePlan) (err, resizeErr error) {
	if a.KillPod && a.CreateSandbox {
		if err := k.killPod(ctx, pod, rs, a.GracePeriod); err != nil {
			return fmt.Errorf("killing pod %s/%s: %w", pod.Namespace, pod.Name, err), nil
		}
	} else if a.KillPod {
		if err := k.terminatePod(ctx, rec, pod, rs, a.GracePeriod); err != nil {
			return err, nil
		}
	}
	if err := k.killContainers(ctx, pod, rs, a.ContainersToKill); err != nil {
		return err, nil
	}
	if len(plan.steps) > 0 {
		resizeErr = k.actuateResize(ctx, pod, rs, resize, plan)
	}
	return k.startPod(ctx, rec, pod, rs, a), resizeErr
}

// syncInFlight is a sync of a pod under way that a pod update cuts
// short by cancelling its context, as upstream's pod worker cancels the
// sync under way when an update makes the pod terminating or shortens
// its grace period (UpdatePod: becameTerminating, wasGracePeriodShortened;
// the sync then returns and the update's runs at once). Either a kill
// ending the pod (terminatePod: kill, with its grace period), cancelled
// when the grace period is shortened, or a sync starting, restarting or
// killing some of the containers of a pod not being ended (startingSync:
// an image pull, a postStart hook, a container start or a sandbox's
// creation under way), cancelled when the pod's termination is requested
// (deleted, gone from the API, evicted, given a terminal phase), so that
// its kill starts without waiting for them. Registered only while such
// a sync runs: nothing for a running pod's resync.
type syncInFlight struct {
	kill   bool
	grace  int64
	cancel context.CancelFunc
}

// terminating cancels the sync when the pod's termination, requested by
// pod's update (nil: gone from the API or evicted), cuts it short: a
// sync starting the pod always, a kill if pod's deletion grace period is
// shorter than its own (it only ever shrinks). Nothing for none (k.mu
// held).
func (f *syncInFlight) terminating(pod *v1.Pod) {
	switch {
	case f == nil:
	case !f.kill:
		f.cancel()
	case pod != nil && pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && max(*pod.DeletionGracePeriodSeconds, minimumKillGrace) < f.grace:
		f.cancel()
	}
}

// evicting cancels the sync when the eviction manager's eviction of the
// pod, asking for grace, cuts it short: a sync starting the pod always, a
// kill (its deletion's, its deadline's) if grace, at least
// minimumKillGrace, is shorter than its own, as upstream's pod worker
// cancels the SyncTerminatingPod in flight when killPodNow's grace
// period override shortens the effective one (UpdatePod:
// calculateEffectiveGracePeriod, wasGracePeriodShortened). Nothing for
// none (k.mu held).
func (f *syncInFlight) evicting(grace int64) {
	switch {
	case f == nil:
	case !f.kill, max(grace, minimumKillGrace) < f.grace:
		f.cancel()
	}
}

// startingSync registers the sync of rec's pod about to start, restart
// or kill some of its containers (execute, for a pod not being ended),
// to be cut short once the pod's termination is requested
// (syncInFlight), and returns its context. It returns nil if the
// termination was requested since the sync took the pod: the request
// queued a sync of its own, which kills it.
func (k *Kubelet) startingSync(ctx context.Context, uid types.UID, rec *podRecord) (context.Context, *syncInFlight) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := rec.pod; p == nil || p.DeletionTimestamp != nil || podsync.IsTerminalPhase(p.Status.Phase) || rec.eviction != nil || rec.evicted {
		return nil, nil
	}
	sctx, cancel := context.WithCancel(ctx)
	f := &syncInFlight{cancel: cancel}
	if k.syncs == nil {
		k.syncs = map[types.UID]*syncInFlight{}
	}
	k.syncs[uid] = f
	return sctx, f
}

// syncDone deregisters f, uid's sync under way, and releases its
// context.
func (k *Kubelet) syncDone(uid types.UID, f *syncInFlight) {
	k.mu.Lock()
	if k.syncs[uid] == f {
		delete(k.syncs, uid)
	}
	k.mu.Unlock()
	f.cancel()
}

// terminatePod kills the pod to end it (deleted, finished, past its
// deadline, evicted) with grace, as upstream's SyncTerminatingPod: a
// failure is reported (FailedKillPod) and fails the sync, retried on the
// pod workers' back-off. The grace period is upstream's effective one
// (calculateEffectiveGracePeriod), which only shrinks: the shortest of
// grace, the latest deletion's and the one an earlier kill ending the
// pod was given (an eviction's, say, whose kill failed before the pod
// was deleted with a longer one), and at least minimumKillGrace (a force
// delete's 0 is 1 s). While it runs, a pod update shortening
// the grace period (HandlePod), or an eviction asking for a shorter one
// (requestEviction), cancels it: the sync fails without the event and
// the update or the eviction syncs the pod at once, killed again with the
// shorter grace period, as upstream's pod worker restarts
// SyncTerminatingPod.
func (k *Kubelet) terminatePod(ctx context.Context, rec *podRecord, pod *v1.Pod, rs *podstate.Pod, grace int64) error {
	kctx, cancel := context.WithCancel(ctx) // released by syncDone
	grace = rec.x().boundKillGrace(grace)
	f := &syncInFlight{kill: true, grace: grace, cancel: cancel}
	k.mu.Lock()
	if k.syncs == nil {
		k.syncs = map[types.UID]*syncInFlight{}
	}
	// An update that shortened the grace period after this sync took the
	// pod found no kill to cancel (HandlePod): the kill uses it, as
	// upstream's pod worker hands SyncTerminatingPod the latest update's
	// effective grace period.
	if latest := rec.pod; latest != nil && latest.DeletionTimestamp != nil &&
		latest.DeletionGracePeriodSeconds != nil && *latest.DeletionGracePeriodSeconds < grace {
		grace = *latest.DeletionGracePeriodSeconds
		f.grace = grace
	}
	if grace < minimumKillGrace {
		grace, f.grace = minimumKillGrace, minimumKillGrace
	}
	// An eviction asking for a shorter grace period, requested since this
	// sync took the pod, found no kill to cancel (evicting): this kill
	// gives way to the eviction's, which its request queued (evictPod),
	// as upstream's pod worker restarts SyncTerminatingPod with the
	// eviction's grace period and status.
	if ev := rec.eviction; ev != nil && max(ev.GracePeriodSeconds, minimumKillGrace) < grace {
		k.mu.Unlock()
		cancel()
		return fmt.Errorf("killing pod %s/%s: cancelled for the shorter grace period of its eviction", pod.Namespace, pod.Name)
	}
	k.syncs[pod.UID] = f
	k.mu.Unlock()
	rec.more().killGrace = grace
	err := k.killPod(kctx, pod, rs, grace)
	cut := kctx.Err() != nil && ctx.Err() == nil
	k.syncDone(pod.UID, f)
	if err == nil {
		return nil
	}
	if cut {
		k.log.Info("Pod kill cancelled: its grace period was shortened", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "gracePeriod", grace)
		return fmt.Errorf("killing pod %s/%s: cancelled for a shorter grace period: %w", pod.Namespace, pod.Name, err)
	}
	k.failedKillPod(pod, err)
	return fmt.Errorf("killing pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// startPod sets up the pod's volumes and creates its sandbox and
// containers as the actions say (execute's, once the kills are done).
func (k *Kubelet) startPod(ctx context.Context, rec *podRecord, pod *v1.Pod, rs *podstate.Pod, a podsync.Actions) error {
	// The pod's cgroup, the sandbox's parent, before its volumes, as
	// upstream's syncPod makes it before it waits for them (podcgroups.go).
	if a.CreateSandbox {
		if err := k.ensurePodCgroup(pod); err != nil {
			return err
		}
	}
	if (a.CreateSandbox || len(a.ContainersToStart) > 0) && len(pod.Spec.Volumes) > 0 {
		// A tmpfs or hugetlbfs over a directory found without one only
		// for a new sandbox, nothing of the pod running (volumes.go).
		if err := k.setUpVolumes(ctx, rec, pod, a.CreateSandbox); err != nil {
			if ctx.Err() != nil {
				// Cut short (syncInFlight): no FailedMount, as upstream's
				// SyncPod records none for an interrupted wait.
				return fmt.Errorf("setting up the volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			for _, e := range volumeErrors(err) { // one FailedMount per failing volume
				k.podEvent(pod, v1.EventTypeWarning, EventFailedMount, "%v", e)
			}
			// The pod stays ContainerCreating and is retried on the
			// volume back-off (syncRetryDelay).
			return &volumeSetUpError{err: err, retryAfter: nextRetryDelay(&rec.mountFailures)}
		}
		rec.mountFailures = 0
		k.trace(TraceVolumesReady, pod)
	}
	if !a.CreateSandbox && len(a.ContainersToStart) == 0 {
		// Nothing to create, but upstream's SyncPod builds the sandbox
		// config for the containers all the same on every sync of a pod
		// it runs (not one being ended): its DNS configuration is read and
		// decided afresh, its events recorded again (configureSandbox; the
		// rest of the config is not needed).
		if rec.ending(pod) || a.KillPod {
			return nil
		}
		var cfg runtimeapi.PodSandboxConfig
		if err := k.configureSandbox(pod, &cfg); err != nil {
			return fmt.Errorf("generating the sandbox config of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return nil
	}
	sandboxID := a.SandboxID
	sbConfig := sandboxConfig(pod, a.SandboxAttempt, k.cfg.PodLogsDir, k.cfg.cgroupParams(), k.qos)
	if a.CreateSandbox {
		if a.SandboxAttempt > 0 {
			k.podEvent(pod, v1.EventTypeNormal, EventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		// The DNS configuration and the hostname (configureSandbox; the
		// node's resolver file unreadable or an FQDN too long fails the
		// sandbox), then the RuntimeClass's handler (runtimeclass.go); a
		// class missing or unreadable fails the sandbox as a runtime's
		// refusal does.
		err := k.configureSandbox(pod, sbConfig)
		var handler, id string
		if err == nil {
			handler, err = k.runtimeHandler(ctx, pod)
		}
		if err == nil {
			id, err = k.rt.RunPodSandbox(ctx, sbConfig, handler)
		}
		if err != nil {
			// A pod whose termination was requested while its sandbox was
			// being made (deleted, gone from the API, evicted) often
			// fails it (CNI and the runtime tear down under it): as
			// upstream's SyncPod, that is no error, only logged; the sync
			// the request queued kills the pod. Asked afresh: pod is the
			// sync's view from its start.
			if k.terminationRequested(pod.UID) {
				k.log.Debug("Pod was deleted and sandbox failed to be created", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "err", err)
				return nil
			}
			k.podEvent(pod, v1.EventTypeWarning, EventFailedCreateSandbx, "Failed to create pod sandbox: %v", err)
			return fmt.Errorf("creating sandbox for pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		sandboxID = id
		if faults.CrashPoint(ctx, faults.CrashKubeletAfterSandbox) { // crash point: sandbox up, status not written
			return faults.ErrCrashed
		}
	} else if sb := rs.LatestSandbox(); sb != nil {
		sbConfig.Metadata.Attempt = sb.Attempt
	}
	// The config for the containers, built again as upstream's SyncPod
	// does once the sandbox is there (its DNS events recorded again); its
	// failure starts none, with no event, as upstream's ConfigPodSandbox.
	if err := k.configureSandbox(pod, sbConfig); err != nil {
		return fmt.Errorf("generating the sandbox config of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if len(a.ContainersToStart) == 0 {
		return nil
	}
	ip := ""
	var moreIPs []string // a dual-stack sandbox's other family's
	if st, err := k.rt.PodSandboxStatus(ctx, sandboxID); err == nil {
		ip, moreIPs = sandboxIPs(st)
	}
	// A postStart hook without a host goes to the sandbox's own IP, as
	// upstream's handler runner reads it from the runtime, not the
	// node's IP a host-network pod's containers are given below.
	hookIP := ip
	if pod.Spec.HostNetwork && k.cfg.NodeIP != "" {
		ip, moreIPs = k.cfg.NodeIP, nil // a host-network pod's IP is the node's, as upstream
	}
	for _, s := range a.ContainersToStart {
		if err := ctx.Err(); err != nil {
			// Cut short (syncInFlight): no further container started.
			return fmt.Errorf("starting the containers of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		var spec *v1.Container
		switch {
		case s.Ephemeral:
			spec = (*v1.Container)(&pod.Spec.EphemeralContainers[s.Index].EphemeralContainerCommon)
		case s.Init:
			spec = &pod.Spec.InitContainers[s.Index]
		default:
			spec = &pod.Spec.Containers[s.Index]
		}
		if err := k.startContainer(ctx, rec, pod, sandboxID, sbConfig, spec, s, ip, moreIPs, hookIP); err != nil {
			k.log.Info("starting container", "pod", pod.Namespace+"/"+pod.Name, "container", spec.Name, "err", err)
			if s.Init {
				break
			}
		}
	}
	return nil
}

// killContainers kills the containers in parallel (none: nothing to wait
// for, nothing allocated, as on every resync of a running pod).
func (k *Kubelet) killContainers(ctx context.Context, pod *v1.Pod, rs *podstate.Pod, kills []podsync.Kill) error {
	if len(kills) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(kills))
	for i, kill := range kills {
		wg.Add(1)
		k.containerEvent(pod, kill.Name, kill.Init, v1.EventTypeNormal, EventKilling, "%s", kill.Message)
		go func() {
			defer wg.Done()
			spec := containerSpec(pod, kill.Name, kill.Init)
			errs[i] = k.killContainer(ctx, pod, spec, kill.ContainerID, podIP(rs), kill.GracePeriod)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func podIP(rs *podstate.Pod) string {
	if sb := rs.LatestSandbox(); sb != nil {
		return sb.IP
	}
	return ""
}

func containerSpec(pod *v1.Pod, name string, init bool) *v1.Container {
	if pod == nil {
		return nil
	}
	list := pod.Spec.Containers
	if init {
		list = pod.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	if !init {
		// An ephemeral container (its runtime instance has Init false):
		// logs, attach and exec find it by name as the others.
		return ephemeralSpec(pod, name)
	}
	return nil
}

// ephemeralSpec is the pod's ephemeral container of that name, as a
// Container, or nil.
func ephemeralSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i].EphemeralContainerCommon; c.Name == name {
			return (*v1.Container)(c)
		}
	}
	return nil
}

// startContainer pulls the image per policy, creates and starts the
// container and runs its postStart hook. Failures are recorded as the
// container's waiting reason. ip is the sandbox's primary IP, moreIPs its
// others (dual-stack), for the downward API; hookIP is the IP the runtime
// reports for the sandbox (none for a host-network pod's on containerd),
// where hooks without a host go.
func (k *Kubelet) startContainer(ctx context.Context, rec *podRecord, pod *v1.Pod, sandboxID string, sbConfig *runtimeapi.PodSandboxConfig, spec *v1.Container, s podsync.Start, ip string, moreIPs []string, hookIP string) error {
	key := podsync.BackoffKey(spec.Name, s.Init)
	event := func(eventType, reason, format string, args ...any) {
		k.containerEvent(pod, spec.Name, s.Init, eventType, reason, format, args...)
	}
	// failUntil holds the container back with reason and err's message
	// until until (zero: unknown); fail, until unknown.
	failUntil := func(reason string, err error, until time.Time) error {
		x := rec.more()
		if x.waiting == nil {
			x.waiting = map[string]podstate.Waiting{}
		}
		x.waiting[key] = podstate.Waiting{Reason: reason, Message: err.Error(), Until: until}
		return err
	}
	fail := func(reason string, err error) error { return failUntil(reason, err, time.Time{}) }
	// imageFailed: the image step failed with reason and msg; as
	// upstream's startContainer, a "Failed" "Error: <reason>" event
	// follows the image manager's own.
	imageFailed := func(reason, msg string, until time.Time) error {
		event(v1.EventTypeWarning, EventFailed, "Error: %s", reason)
		return failUntil(reason, errors.New(msg), until)
	}
	// A reference the kubelet cannot parse is not handed to the runtime:
	// InvalidImageName, as upstream's image manager. The runtime is asked
	// for the reference with the default tag ("nginx" is "nginx:latest");
	// events and messages quote the image as the pod names it, as
	// upstream's.
	ref, msg := podsync.DefaultImageTag(spec.Image)
	if msg != "" {
		event(v1.EventTypeWarning, EventInspectFailed, "%s", msg)
		return imageFailed(podsync.ReasonInvalidImageName, msg, time.Time{})
	}
	image := &runtimeapi.ImageSpec{Image: ref}
	// The image's status is asked only when the pull policy depends on
	// it (not for Always), as upstream's imagePullPrecheck; a failure is
	// InspectFailed and ImageInspectError.
	policy := pullPolicy(spec)
	// present: the image's reference (its id) when it is present; the
	// container is created from it or from the one the pull returns.
	var present string
	if policy != v1.PullAlways {
		ref, err := k.rt.ImageStatus(ctx, image)
		if err != nil {
			msg := podsync.InspectImageFailedMessage(err)
			event(v1.EventTypeWarning, EventInspectFailed, "%s", msg)
			return imageFailed(podsync.ReasonImageInspectError, msg, time.Time{})
		}
		present = ref
	}
	// The pod's keyring, read once, when first needed.
	var keyring *credentials.Keyring
	var keyringErr error
	keyringRead := false
	podKeyring := func() (*credentials.Keyring, error) {
		if !keyringRead {
			keyringRead = true
			keyring, keyringErr = k.pullKeyring(ctx, pod)
		}
		return keyring, keyringErr
	}
	// A present image is used only if the pod may access it (upstream's
	// KubeletEnsureSecretPulledImages); otherwise it is as if absent: an
	// IfNotPresent container pulls it with the pod's credentials, a Never
	// one fails with ErrImageNeverPull (pullcredentials.go).
	if present != "" {
		podCreds := noPodCredentials
		if len(pod.Spec.ImagePullSecrets) > 0 || k.cfg.ImageCredentialProviders != nil {
			podCreds = func() (pullrecords.PodCredentials, error) {
				kr, err := podKeyring()
				if err != nil {
					return pullrecords.PodCredentials{}, err
				}
				return podPullCredentials(kr, image.Image), nil
			}
		}
		mustPull, err := k.pulls.MustPull(k.cfg.ImagePullCredentialsVerificationPolicy, k.cfg.PreloadedImagesVerificationAllowlist, spec.Image, present, podCreds)
		if err != nil {
			event(v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", spec.Image, err)
			return fail(reasonErrImagePull, err)
		}
		if mustPull {
			present = ""
		}
	}
	pull := func() error {
		keyring, err := podKeyring()
		if err != nil {
			event(v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", spec.Image, err)
			return fail(reasonErrImagePull, err)
		}
		// After a failed pull of this image for this pod, no pull until
		// its back-off has passed: the container waits with
		// ImagePullBackOff, as upstream's image manager decides.
		backoff := k.cfg.ImagePullBackoff
		entry, failedBefore := rec.x().imagePulls[spec.Image]
		if d := podsync.DecideImagePull(backoff, entry, spec.Image, k.clock.Now()); !d.Pull {
			event(v1.EventTypeNormal, EventBackOff, "%s", podsync.BackOffPullingImageMessage(spec.Image))
			return imageFailed(podsync.ReasonImagePullBackOff, d.Message, d.Until)
		}
		event(v1.EventTypeNormal, EventPulling, "Pulling image %q", spec.Image)
		creds := keyring.LookupTracked(image.Image)
		if err := k.pulls.PullStarted(spec.Image, len(creds) > 0); err != nil {
			msg := fmt.Sprintf("Failed to record image pull intent for container image %q: %v", spec.Image, err)
			return imageFailed(reasonErrImagePull, msg, time.Time{})
		}
		start := k.clock.Now()
		pulled, used, err := k.pullImage(ctx, image, creds)
		if err != nil {
			k.pulls.PullFailed(spec.Image)
			event(v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", spec.Image, err)
			// ErrImagePull, or CRI's RegistryUnavailable or
			// SignatureValidationFailed, as upstream classifies.
			reason, msg := podsync.PullFailure(spec.Image, err.Error())
			entry = podsync.ImagePullFailed(backoff, entry, reason, msg, k.clock.Now())
			x := rec.more()
			if x.imagePulls == nil {
				x.imagePulls = map[string]podsync.ImagePullEntry{}
			}
			x.imagePulls[spec.Image] = entry
			return imageFailed(reason, msg, entry.LastUpdate.Add(entry.Backoff))
		}
		k.pulls.Pulled(spec.Image, pulled, pulledWith(used))
		if failedBefore {
			rec.x().imagePulls[spec.Image] = podsync.ImagePullStarted(entry)
		}
		present = pulled
		// The pulled image's size, best effort (0 when the runtime cannot
		// tell), as upstream's puller asks ImageStatus after the pull.
		size, err := k.rt.ImageSize(ctx, image)
		if err != nil {
			k.log.Info("unable to get the pulled image's size", "image", spec.Image, "err", err)
			size = 0
		}
		// Pulls are made by the pod's worker itself, not queued: the
		// time including waiting is the pull's.
		took := k.clock.Since(start)
		event(v1.EventTypeNormal, EventPulled, "%s", podsync.PulledImageMessage(spec.Image, took, took, size))
		return nil
	}
	switch policy {
	case v1.PullNever:
		if present == "" {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", spec.Image)
			event(v1.EventTypeWarning, EventErrImageNeverPull, "%s", msg)
			return imageFailed(reasonErrImageNeverPull, msg, time.Time{})
		}
		event(v1.EventTypeNormal, EventPulled, "%s", podsync.PresentImageMessage(spec.Image))
	case v1.PullAlways:
		if err := pull(); err != nil {
			return err
		}
	default:
		if present == "" {
			if err := pull(); err != nil {
				return err
			}
		} else {
			event(v1.EventTypeNormal, EventPulled, "%s", podsync.PresentImageMessage(spec.Image))
		}
	}
	envPod := pod
	if ip != "" && !hasPodIPs(pod, ip, moreIPs) {
		// The downward API sees this sandbox's IPs. A shallow copy with
		// its own IP fields: ContainerEnv only reads the pod (a deep copy
		// was ~4 KB of garbage per started container).
		envPod = new(v1.Pod)
		*envPod = *pod
		envPod.Status.PodIP, envPod.Status.PodIPs = ip, status.PodIPs(ip, moreIPs)
		envPod.Status.HostIP, envPod.Status.HostIPs = k.cfg.NodeIP, []v1.HostIP{{IP: k.cfg.NodeIP}}
	}
	failed := func(reason string, err error) error {
		event(v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return fail(reason, err)
	}
	if s.MissingTarget != "" {
		return failed(reasonCreateContainerConfigErr, fmt.Errorf("unable to find target container %s", s.MissingTarget))
	}
	// Upstream's container config starts with the pod's hostname (its
	// /etc/hosts names it), which logs a cut one.
	k.logHostnameCut(pod)
	// The container is created from the image's reference, as upstream's
	// kubelet (the pod's image as the user's); its user is read by the
	// pod's image name, as upstream's getImageUser (containerSecurity).
	image.Image, image.UserSpecifiedImage = present, spec.Image
	sec, err := k.containerSecurity(ctx, pod, spec)
	if err != nil {
		return failed(reasonCreateContainerConfigErr, err)
	}
	env, err := ContainerEnv(envPod, spec, clientEnvSource{ctx: ctx, k: k}, k.allocatable)
	if err != nil {
		return failed(reasonCreateContainerConfigErr, err)
	}
	mounts, err := k.mounts(pod, spec, env)
	if err != nil {
		return failed(reasonCreateContainerConfigErr, err)
	}
	if hosts, err := k.etcHostsMount(pod, spec, ip, moreIPs); err != nil {
		return failed(reasonCreateContainerConfigErr, err)
	} else if hosts != nil {
		mounts = append(mounts, hosts)
	}
	cc := containerConfig(pod, spec, s.Init, s.Attempt, image, env, k.cfg.cgroupParams())
	cc.Mounts = mounts
	cc.Linux.SecurityContext = sec
	if s.Ephemeral {
		cc.Labels[runtime.LabelContainerType] = runtime.ContainerTypeEphemeral
		if s.TargetID != "" && sec.NamespaceOptions.GetPid() == runtimeapi.NamespaceMode_CONTAINER {
			// targetContainerName: the ephemeral container joins the
			// target's PID namespace, as upstream's kubelet asks CRI,
			// unless the pod shares one already (shareProcessNamespace,
			// hostPID). security.Container made these options for this
			// container.
			sec.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
			sec.NamespaceOptions.TargetId = s.TargetID
		}
	}
	// A runtime's error is worded as upstream's startContainer words it:
	// the gRPC status's message alone.
	id, err := k.rt.CreateContainer(ctx, sandboxID, cc, sbConfig)
	if err != nil {
		return failed(reasonCreateContainerErr, runtimeMessage(err))
	}
	event(v1.EventTypeNormal, EventCreated, "Created container: %s", spec.Name)
	if err := k.rt.StartContainer(ctx, id); err != nil {
		return failed(reasonRunContainerErr, runtimeMessage(err))
	}
	event(v1.EventTypeNormal, EventStarted, "Started container %s", spec.Name)
	if !s.Ephemeral && spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil {
		t := prober.Target{Pod: pod, Container: spec, ContainerID: id, PodIP: hookIP}
		if msg, herr := prober.RunHook(ctx, k.rt, spec.Lifecycle.PostStart, t, k.sleep, k.hookHTTPFallback(pod)); herr != nil {
			// As upstream's startContainer: the error logged, the event
			// without it (no secret in it; the waiting message keeps the
			// handler runner's message), then the kill's Killing event
			// with its message.
			k.log.Error("Failed to execute PostStartHook", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID,
				"containerName", spec.Name, "containerID", k.typedID(id), "err", herr)
			event(v1.EventTypeWarning, EventFailedPostStart, "PostStartHook failed")
			event(v1.EventTypeNormal, EventKilling, "FailedPostStartHook")
			if err := k.killContainer(ctx, pod, spec, id, hookIP, podsync.GracePeriod(pod)); err != nil {
				return err
			}
			return fail(reasonPostStartHookErr, errors.New(msg))
		}
	}
	delete(rec.x().waiting, key)
	return nil
}

// hasPodIPs: the pod's status already lists the sandbox IPs primary and
// more, in order. A new sandbox may keep the primary IP and get another
// secondary one, so every one is compared.
func hasPodIPs(pod *v1.Pod, primary string, more []string) bool {
	ips := pod.Status.PodIPs
	if pod.Status.PodIP != primary || len(ips) != 1+len(more) || ips[0].IP != primary {
		return false
	}
	for i, ip := range more {
		if ips[1+i].IP != ip {
			return false
		}
	}
	return true
}

func pullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if !strings.Contains(c.Image[strings.LastIndex(c.Image, "/")+1:], ":") || strings.HasSuffix(c.Image, ":latest") {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// sleep waits d on the kubelet's clock, or until ctx is done; it reports
// whether it waited all of d (a sleep lifecycle hook's outcome).
func (k *Kubelet) sleep(ctx context.Context, d time.Duration) bool {
	t := k.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// hookHTTPFallback records upstream's Warning LifecycleHTTPFallback on
// pod (no container field path, as upstream's handler runner records it)
// and counts it (LifecycleHTTPFallbacks) when an HTTPS hook answered in
// plain HTTP succeeded over HTTP.
func (k *Kubelet) hookHTTPFallback(pod *v1.Pod) func(host string) {
	return func(host string) {
		k.httpFallbacks.Add(1)
		k.podEvent(pod, v1.EventTypeWarning, EventLifecycleHTTPFallback,
			"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", host)
	}
}

// typedID is a runtime's container ID as upstream's kubelet logs and
// reports it: the runtime's type, "://", the ID (containerd://abc…), the
// form of the pod status's containerID.
func (k *Kubelet) typedID(id string) string {
	return k.rt.Type() + "://" + id
}

// killContainer runs the preStop hook within the grace period, then stops
// the container with what is left of it (at least 2 s).
func (k *Kubelet) killContainer(ctx context.Context, pod *v1.Pod, spec *v1.Container, id, ip string, grace int64) error {
	start := k.clock.Now()
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && grace > 0 {
		hctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
		t := prober.Target{Pod: pod, Container: spec, ContainerID: id, PodIP: ip}
		_, err := prober.RunHook(hctx, k.rt, spec.Lifecycle.PreStop, t, k.sleep, k.hookHTTPFallback(pod))
		// A sleep hook cut by the grace period alone is no failure:
		// upstream's kill stops waiting for the hook then, and the hook,
		// its context (the pod's sync's) alive, sleeps on unobserved and
		// ends without error. Cut by the sync's context (a shorter grace
		// period, the kubelet stopping) it fails, as upstream's.
		if cutByGrace := spec.Lifecycle.PreStop.Sleep != nil && ctx.Err() == nil; err != nil && !cutByGrace {
			// As upstream's executePreStopHook: the error logged (the
			// handler runner's message is not used).
			k.log.Error("PreStop hook failed", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID,
				"containerName", spec.Name, "containerID", k.typedID(id), "err", err)
			// Without the error, as upstream's: no secret in the event.
			k.containerEvent(pod, spec.Name, isInit(pod, spec), v1.EventTypeWarning, EventFailedPreStop, "PreStopHook failed")
		}
		cancel()
		grace -= int64(k.clock.Since(start) / time.Second)
	}
	if grace < minimumGracePeriod {
		grace = minimumGracePeriod
	}
	if err := k.rt.StopContainer(ctx, id, grace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("stopping container %s: %w", id, err)
	}
	return nil
}

// killPod stops every running container and then every sandbox of the
// pod. App containers (and running regular init containers) stop in
// parallel first; sidecars stop after them, one at a time in reverse order
// of the spec, with what is left of the grace period, as Kubernetes does.
// As upstream's KillPod (killPodWithSyncResult), a container that fails
// to stop does not keep the others or the sandboxes from being stopped;
// the failures are upstream's sync results, aggregated (killFailure): the
// error a FailedKillPod event reports.
func (k *Kubelet) killPod(ctx context.Context, pod *v1.Pod, rs *podstate.Pod, grace int64) error {
	start := k.clock.Now()
	var first []podstate.Container
	sidecars := map[string]podstate.Container{}
	for _, c := range rs.Running() {
		if spec := containerSpec(pod, c.Name, c.Init); c.Init && spec != nil && podsync.IsSidecar(spec) {
			sidecars[c.Name] = c
		} else {
			first = append(first, c)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(first))
	for i, c := range first {
		k.containerEvent(pod, c.Name, c.Init, v1.EventTypeNormal, EventKilling, "Stopping container %s", c.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.killContainer(ctx, pod, containerSpec(pod, c.Name, c.Init), c.ID, podIP(rs), grace)
		}()
	}
	wg.Wait()
	var failed []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, killFailure(actionKillContainer, first[i].Name, errKillContainer, err))
		}
	}
	if len(sidecars) > 0 {
		for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
			spec := &pod.Spec.InitContainers[i]
			c, ok := sidecars[spec.Name]
			if !ok {
				continue
			}
			k.containerEvent(pod, c.Name, true, v1.EventTypeNormal, EventKilling, "Stopping container %s", c.Name)
			left := grace - int64(k.clock.Since(start)/time.Second)
			if err := k.killContainer(ctx, pod, spec, c.ID, podIP(rs), left); err != nil {
				failed = append(failed, killFailure(actionKillContainer, c.Name, errKillContainer, err))
			}
		}
	}
	// Every sandbox of the pod is stopped, a stopped one too (the runtime
	// takes that as done), as upstream's killPodWithSyncResult stops every
	// sandbox of the running pod. One result for them all, as upstream's:
	// the last failure is the one reported.
	var sandboxErr error
	for _, s := range rs.Sandboxes {
		if err := ctx.Err(); err != nil {
			// The kill was cancelled (terminatePod): no sandbox is stopped,
			// as a CRI call with a cancelled context fails at once (the
			// simulated runtime would stop it regardless).
			sandboxErr = fmt.Errorf("stopping sandbox %s: %w", s.ID, err)
			break
		}
		if err := k.rt.StopPodSandbox(ctx, s.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			sandboxErr = fmt.Errorf("stopping sandbox %s: %w", s.ID, err)
		}
	}
	if sandboxErr != nil {
		failed = append(failed, killFailure(actionKillPodSandbox, string(rs.UID), errKillPodSandbox, sandboxErr))
	}
	if len(failed) == 0 {
		// As upstream's killPod: the QoS cgroups follow (podcgroups.go).
		k.updateQOSCgroupsAfterKill()
	}
	return utilerrors.NewAggregate(failed)
}

// Upstream's sync actions and errors (kubecontainer SyncAction,
// ErrKillContainer, ErrKillPodSandbox) in the results a pod kill reports.
const (
	actionKillContainer  = "KillContainer"
	actionKillPodSandbox = "KillPodSandbox"
)

var (
	errKillContainer  = errors.New("KillContainerError")
	errKillPodSandbox = errors.New("KillPodSandboxError")
)

// killFailure is a failed kill of target (a container's name, or the pod
// UID for its sandboxes) as upstream's PodSyncResult words it: `failed to
// "<action>" for "<target>" with <kind>: "<error>"`, the error being the
// runtime's as upstream's remote runtime client returns it (a gRPC status
// error's text, also when our CRI client wrapped it; criErrorText). It
// wraps both kind and err.
func killFailure(action, target string, kind, err error) error {
	return &killFailureError{msg: fmt.Sprintf("failed to %q for %q with %v: %q", action, target, kind, criErrorText(err)), errs: []error{kind, err}}
}

type killFailureError struct {
	msg  string
	errs []error
}

func (e *killFailureError) Error() string   { return e.msg }
func (e *killFailureError) Unwrap() []error { return e.errs }

// criErrorText is err's text as upstream's kubelet has a CRI call's error:
// a gRPC status (also one further down the chain, as our CRI client wraps
// it with what it was doing) as the status's error, "rpc error: code =
// <code> desc = <message>"; any other error as it is.
func criErrorText(err error) string {
	var gs interface{ GRPCStatus() *grpcstatus.Status }
	if errors.As(err, &gs) {
		if s := gs.GRPCStatus(); s != nil {
			return s.Err().Error()
		}
	}
	return err.Error()
}

// hasProbes reports whether any container of pod that runProbes probes
// (app containers and sidecars) has a probe.
func hasProbes(pod *v1.Pod) bool {
	probed := func(c *v1.Container) bool {
		return c.StartupProbe != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podsync.IsSidecar(c) && probed(c) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if probed(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}

// runProbes runs the probes that are due and returns every running
// container's probe results and when the next probe is due.
//
// A pod without probes (most pods) has no results (its containers' are
// all unknown, as a missing entry reads) and nothing due.
func (k *Kubelet) runProbes(ctx context.Context, rec *podRecord, pod *v1.Pod, rs *podstate.Pod, now time.Time) (map[string]podstate.ContainerProbes, time.Time) {
	if len(rec.x().probes) == 0 && !hasProbes(pod) {
		return nil, time.Time{}
	}
	results := map[string]podstate.ContainerProbes{}
	live := map[string]bool{}
	var next time.Time
	ip := podIP(rs)
	// App containers and sidecars are probed; regular init containers not.
	type probed struct {
		spec *v1.Container
		init bool
	}
	var targets []probed
	for i := range pod.Spec.InitContainers {
		if podsync.IsSidecar(&pod.Spec.InitContainers[i]) {
			targets = append(targets, probed{&pod.Spec.InitContainers[i], true})
		}
	}
	for i := range pod.Spec.Containers {
		targets = append(targets, probed{&pod.Spec.Containers[i], false})
	}
	for _, pt := range targets {
		spec := pt.spec
		c := rs.Latest(spec.Name, pt.init)
		if c == nil || c.State != podstate.ContainerRunning {
			continue
		}
		t := prober.Target{Pod: pod, Container: spec, ContainerID: c.ID, PodIP: ip}
		var res podstate.ContainerProbes
		started := true
		for _, pk := range []struct {
			kind  string
			probe *v1.Probe
			out   *podstate.ProbeResult
		}{
			{runtime.ProbeStartup, spec.StartupProbe, &res.Startup},
			{runtime.ProbeLiveness, spec.LivenessProbe, &res.Liveness},
			{runtime.ProbeReadiness, spec.ReadinessProbe, &res.Readiness},
		} {
			if pk.probe == nil {
				continue
			}
			key := c.ID + "/" + pk.kind
			live[key] = true
			st, ok := rec.x().probes[key]
			if !ok {
				st = prober.Initial(pk.kind)
			}
			run := started
			if pk.kind == runtime.ProbeStartup && st.Result == podstate.ProbeSuccess {
				run = false // a startup probe stops once it succeeded
			}
			if run {
				due, at := prober.Due(pk.probe, st, c.StartedAt, now)
				if due {
					ok, msg := prober.Run(ctx, k.rt, pk.kind, pk.probe, t)
					st = prober.Record(pk.probe, st, ok, now)
					if !ok {
						k.containerEvent(pod, spec.Name, pt.init, v1.EventTypeWarning, EventUnhealthy, "%s probe failed: %s", probeKindTitle(pk.kind), msg)
						k.log.Debug("probe failed", "pod", pod.Namespace+"/"+pod.Name, "container", spec.Name, "kind", pk.kind, "msg", msg)
					}
					_, at = prober.Due(pk.probe, st, c.StartedAt, now)
				}
				if next.IsZero() || at.Before(next) {
					next = at
				}
			}
			x := rec.more()
			if x.probes == nil {
				x.probes = map[string]prober.State{}
			}
			x.probes[key] = st
			*pk.out = st.Result
			if pk.kind == runtime.ProbeStartup && st.Result != podstate.ProbeSuccess {
				started = false
			}
		}
		results[c.ID] = res
	}
	for key := range rec.x().probes {
		if !live[key] {
			delete(rec.x().probes, key)
		}
	}
	return results, next
}
