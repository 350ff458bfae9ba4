package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/scheduler/extender"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/metrics"
)

// Condition reasons, as in Kubernetes.
const (
	ReasonUnschedulable  = v1.PodReasonUnschedulable
	ReasonSchedulerError = v1.PodReasonSchedulerError
)

// maxMessageLength bounds event notes (the events API rejects > 1 KiB); the
// condition message is not truncated.
const maxMessageLength = 1024

// idleSnapshotRefresh is how long ScheduleOne waits for a pod before it
// refreshes the snapshot and returns (a variable for tests).
var idleSnapshotRefresh = 3 * time.Second

// ScheduleOne pops one pod and tries to schedule it: decide, assume, and
// bind in the background. It returns when the decision is made, or after
// idleSnapshotRefresh without a pod to schedule.
func (s *Scheduler) ScheduleOne(ctx context.Context) {
	popCtx, cancel := context.WithTimeout(ctx, idleSnapshotRefresh)
	pInfo, err := s.queue.Pop(popCtx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(popCtx.Err(), context.DeadlineExceeded) {
			// Idle: bring the snapshot up to date now rather than at the
			// next cycle, so that it does not keep alive the pod versions
			// the cache has since replaced (after a burst, one for every
			// pod bound in it).
			if err := s.cache.UpdateSnapshot(s.snapshot); err != nil {
				s.log.Error("refreshing the idle snapshot", "err", err)
			}
		}
		return
	}
	pod := pInfo.Pod
	s.trace(TraceAttempt, pod)
	fwk, ok := s.profiles[pod.Spec.SchedulerName]
	if !ok || pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod) {
		return
	}
	cycle := s.queue.SchedulingCycle()
	start := time.Now()
	state := fw.NewCycleState()

	if err := s.cache.UpdateSnapshot(s.snapshot); err != nil {
		s.failed(ctx, fwk, pInfo, err, ReasonSchedulerError, "", cycle, start)
		return
	}
	result, err := s.algorithm.SchedulePod(ctx, fwk, state, pod, s.snapshot)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		reason, nominated := ReasonSchedulerError, ""
		var fitErr *fw.FitError
		if errors.As(err, &fitErr) {
			reason = ReasonUnschedulable
			if fwk.HasPostFilterPlugins() {
				res, st := fwk.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
				switch {
				case st.Code() == fw.Error:
					s.log.Error("running preemption", "pod", podRef(pod), "err", st.AsError())
				case !st.IsSuccess():
					fitErr.Diagnosis.PostFilterMsg = st.Message()
				case res != nil && res.NominatedNodeName != "":
					if perr := s.preempt(ctx, fwk, pod, res); perr != nil {
						s.log.Error("preempting victims", "pod", podRef(pod), "err", perr)
					} else {
						nominated = res.NominatedNodeName
					}
				}
			}
		} else if errors.Is(err, ErrNoNodesAvailable) {
			reason = ReasonUnschedulable
		}
		s.failed(ctx, fwk, pInfo, err, reason, nominated, cycle, start)
		return
	}

	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = result.SuggestedHost
	if err := s.cache.AssumePod(assumed); err != nil {
		s.failed(ctx, fwk, pInfo, fmt.Errorf("assuming pod: %w", err), ReasonSchedulerError, "", cycle, start)
		return
	}
	host := result.SuggestedHost
	if faults.CrashPoint(ctx, faults.CrashSchedulerAfterAssume) { // crash point: assumed, not bound
		return
	}
	// Reserve, then Permit, still in the scheduling cycle: what they claim
	// is seen by the next decision, like the assumption.
	if st := fwk.RunReservePluginsReserve(ctx, state, assumed, host); !st.IsSuccess() {
		s.undoAssumption(ctx, fwk, state, assumed)
		s.failed(ctx, fwk, pInfo, afterFilterError(pod, host, st), reasonFor(st), "", cycle, start)
		return
	}
	permit := fwk.RunPermitPlugins(ctx, state, assumed, host)
	if !permit.IsSuccess() && !permit.IsWait() {
		s.undoAssumption(ctx, fwk, state, assumed)
		s.failed(ctx, fwk, pInfo, afterFilterError(pod, host, permit), reasonFor(permit), "", cycle, start)
		return
	}
	s.queue.DeleteNominatedPodIfExists(pod)
	// A binding slot is taken before the binding cycle starts, so that a
	// slow API server slows decisions down; a pod held at Permit takes
	// its slot only once allowed, so that held pods (a gang waiting for
	// its members) never block the decisions that would complete them.
	waiting := permit.IsWait()
	if !waiting && !s.takeBindSlot(ctx) {
		s.undoAssumption(ctx, fwk, state, assumed)
		return
	}
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		if waiting {
			if st := fwk.WaitOnPermit(ctx, assumed); !st.IsSuccess() {
				s.bindingFailed(ctx, fwk, state, pInfo, assumed, afterFilterError(pInfo.Pod, host, st), reasonFor(st), st.IsRejected(), cycle, start)
				return
			}
			if !s.takeBindSlot(ctx) {
				s.undoAssumption(ctx, fwk, state, assumed)
				return
			}
		}
		defer func() { <-s.bindSlots }()
		s.bindingCycle(ctx, fwk, state, pInfo, assumed, cycle, start)
	}()
}

// takeBindSlot waits for a free binding slot; false if ctx ended first.
func (s *Scheduler) takeBindSlot(ctx context.Context) bool {
	select {
	case s.bindSlots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// afterFilterError is how a rejection after filtering reads, as in
// kube-scheduler: a FitError over the one chosen node ("0/1 nodes are
// available: ..."); errors stay errors.
func afterFilterError(pod *v1.Pod, host string, st *fw.Status) error {
	if !st.IsRejected() {
		return st.AsError()
	}
	return &fw.FitError{Pod: pod, NumAllNodes: 1, Diagnosis: fw.Diagnosis{
		NodeToStatus:         fw.NodeToStatus{host: st},
		UnschedulablePlugins: sets.New(st.Plugin()),
	}}
}

func reasonFor(st *fw.Status) string {
	if st.IsRejected() {
		return ReasonUnschedulable
	}
	return ReasonSchedulerError
}

// undoAssumption runs every Unreserve and forgets the assumed pod.
func (s *Scheduler) undoAssumption(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, assumed *v1.Pod) {
	fwk.RunReservePluginsUnreserve(ctx, state, assumed, assumed.Spec.NodeName)
	if err := s.cache.ForgetPod(assumed); err != nil {
		s.log.Error("forgetting assumed pod", "pod", podRef(assumed), "err", err)
	}
}

// bindingCycle runs PreBind, posts the Binding and runs PostBind (a pod
// held at Permit was allowed before). On failure it runs Unreserve, forgets the assumption and
// requeues the pod.
func (s *Scheduler) bindingCycle(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, pInfo *fw.QueuedPodInfo, assumed *v1.Pod, cycle int64, start time.Time) {
	host := assumed.Spec.NodeName
	if st := fwk.RunPreBindPlugins(ctx, state, assumed, host); !st.IsSuccess() {
		s.bindingFailed(ctx, fwk, state, pInfo, assumed, afterFilterError(pInfo.Pod, host, st), reasonFor(st), false, cycle, start)
		return
	}
	bindStart := time.Now()
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: host},
	}
	s.trace(TraceBindingSent, assumed)
	var err error
	if ext := s.binderFor(assumed); ext != nil {
		err = ext.Bind(ctx, binding)
	} else {
		err = s.client.CoreV1().Pods(assumed.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	}
	fwk.ObserveExtensionPoint(fw.ExtensionBind, bindStart, fw.AsStatus(err))
	if err != nil {
		s.bindingFailed(ctx, fwk, state, pInfo, assumed, fmt.Errorf("binding rejected: %w", err), ReasonSchedulerError, false, cycle, start)
		return
	}
	s.trace(TraceBound, assumed)
	if err := s.cache.FinishBinding(assumed); err != nil {
		s.log.Error("finishing binding", "pod", podRef(assumed), "err", err)
	}
	s.metrics.ObserveAttempt(metrics.ResultScheduled, fwk.ProfileName(), time.Since(start))
	s.recorders[fwk.ProfileName()].Eventf(assumed, nil, v1.EventTypeNormal, "Scheduled", "Binding",
		"Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, host)
	s.log.Debug("bound pod", "pod", podRef(assumed), "node", host)
	fwk.RunPostBindPlugins(ctx, state, assumed, host)
}

// binderFor returns the extender that binds pod, if one is interested.
func (s *Scheduler) binderFor(pod *v1.Pod) *extender.HTTPExtender {
	for _, ext := range s.algorithm.extenders {
		if ext.IsBinder() && ext.IsInterested(pod) {
			return ext
		}
	}
	return nil
}

// bindingFailed undoes the assumption and requeues the pod. The capacity it
// held may help other pods, so they are moved; a pod a Permit plugin
// rejected is requeued first and left out of that move, so that it waits
// for a cluster event instead of going straight back to backoff.
func (s *Scheduler) bindingFailed(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, pInfo *fw.QueuedPodInfo, assumed *v1.Pod, err error, reason string, rejected bool, cycle int64, start time.Time) {
	s.undoAssumption(ctx, fwk, state, assumed)
	if !rejected {
		s.queue.MoveAllToActiveOrBackoffQueue(fw.EventAssignedPodDelete)
	}
	if ctx.Err() == nil {
		s.failed(ctx, fwk, pInfo, err, reason, "", cycle, start)
	}
	if rejected {
		s.queue.MoveAllToActiveOrBackoffQueueExcept(fw.EventAssignedPodDelete, assumed.UID)
	}
}

// preempt carries out a preemption decision: it marks each victim with
// DisruptionTarget=True (reason PreemptionByScheduler), deletes it with a
// UID precondition and records a Preempted event; then it withdraws the
// nominations of lower-priority pods to the same node, whose room the
// preemptor takes.
func (s *Scheduler) preempt(ctx context.Context, fwk *fw.Framework, pod *v1.Pod, res *fw.PostFilterResult) error {
	s.metrics.PreemptionVictims.Observe(float64(len(res.Victims)))
	for _, victim := range res.Victims {
		// A victim held at Permit is not bound yet: turning it away is
		// enough.
		if wp := fwk.GetWaitingPod(victim.UID); wp != nil {
			wp.Reject(fw.ExtensionPostFilter, "preempted")
			continue
		}
		cond := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type": v1.DisruptionTarget, "status": v1.ConditionTrue, "reason": v1.PodReasonPreemptionByScheduler,
			"message":            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", pod.Spec.SchedulerName),
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}}}}
		if patch, err := json.Marshal(cond); err == nil {
			if _, err := s.client.CoreV1().Pods(victim.Namespace).Patch(ctx, victim.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("marking victim %s as a disruption target: %w", podRef(victim), err)
			}
		}
		uid := victim.UID
		err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting victim %s: %w", podRef(victim), err)
		}
		s.recorders[fwk.ProfileName()].Eventf(victim, pod, v1.EventTypeNormal, "Preempted", "Preempting",
			"Preempted by pod %v on node %v", pod.UID, res.NominatedNodeName)
	}
	prio := corev1helpers.PodPriority(pod)
	for _, np := range s.queue.NominatedPodsForNode(res.NominatedNodeName) {
		if np.Pod.UID == pod.UID || corev1helpers.PodPriority(np.Pod) >= prio {
			continue
		}
		s.queue.DeleteNominatedPodIfExists(np.Pod)
		patch := []byte(`{"status":{"nominatedNodeName":null}}`)
		if _, err := s.client.CoreV1().Pods(np.Pod.Namespace).Patch(ctx, np.Pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
			s.log.Info("clearing nominatedNodeName", "pod", podRef(np.Pod), "err", err)
		}
	}
	return nil
}

// failed records a failed attempt: metrics, requeue (if the pod still
// exists unassigned), nomination, FailedScheduling event and the
// PodScheduled=False condition.
func (s *Scheduler) failed(ctx context.Context, fwk *fw.Framework, pInfo *fw.QueuedPodInfo, err error, reason, nominatedNode string, cycle int64, start time.Time) {
	pod := pInfo.Pod
	result := metrics.ResultError
	var fitErr *fw.FitError
	if errors.As(err, &fitErr) {
		result = metrics.ResultUnschedulable
		pInfo.UnschedulablePlugins = fitErr.Diagnosis.UnschedulablePlugins
	} else if errors.Is(err, ErrNoNodesAvailable) {
		result = metrics.ResultUnschedulable
		pInfo.UnschedulablePlugins = sets.New("NodeName") // any node add may help
	} else {
		pInfo.UnschedulablePlugins = nil
	}
	s.metrics.ObserveAttempt(result, fwk.ProfileName(), time.Since(start))
	msg := err.Error()
	if result == metrics.ResultError {
		s.log.Info("error scheduling pod; retrying", "pod", podRef(pod), "err", err)
	} else {
		s.log.Debug("unable to schedule pod; waiting", "pod", podRef(pod), "reason", msg)
	}

	current, gerr := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case gerr != nil || current.UID != pod.UID:
		return // deleted meanwhile
	case current.Spec.NodeName != "":
		return // bound meanwhile (by someone else)
	}
	pInfo.PodInfo.Update(current)
	if nominatedNode != "" {
		s.queue.AddNominatedPod(fw.NewPodInfo(current), nominatedNode)
	}
	s.queue.AddUnschedulableIfNotPresent(pInfo, cycle)

	s.recorders[fwk.ProfileName()].Eventf(current, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", truncate(msg))
	if perr := s.patchStatus(ctx, current, reason, msg, nominatedNode); perr != nil && ctx.Err() == nil {
		s.log.Info("updating pod condition", "pod", podRef(pod), "err", perr)
	}
}

// patchStatus sets PodScheduled=False with reason and message (and
// status.nominatedNodeName) through a strategic merge patch of pods/status,
// skipping the write when nothing changes.
func (s *Scheduler) patchStatus(ctx context.Context, pod *v1.Pod, reason, msg, nominatedNode string) error {
	var old *v1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			old = &pod.Status.Conditions[i]
		}
	}
	nominationChanged := nominatedNode != "" && nominatedNode != pod.Status.NominatedNodeName
	if old != nil && old.Status == v1.ConditionFalse && old.Reason == reason && old.Message == msg && !nominationChanged {
		return nil
	}
	now := metav1.Now()
	cond := map[string]any{
		"type": v1.PodScheduled, "status": v1.ConditionFalse, "reason": reason, "message": msg,
		"lastProbeTime": nil, "lastTransitionTime": now.UTC().Format(time.RFC3339),
	}
	if old != nil && old.Status == v1.ConditionFalse {
		cond["lastTransitionTime"] = old.LastTransitionTime.UTC().Format(time.RFC3339)
	}
	status := map[string]any{"conditions": []any{cond}}
	if nominationChanged {
		status["nominatedNodeName"] = nominatedNode
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return s[:maxMessageLength-3] + "..."
}

func podRef(p *v1.Pod) string { return p.Namespace + "/" + p.Name }
