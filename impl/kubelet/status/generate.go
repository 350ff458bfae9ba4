// Package status is the kubelet's status manager. GenerateAPIPodStatus is a
// pure function from the pod, the runtime's view of it and the probes to the
// v1.PodStatus the kubelet reports; Manager writes it through pods/status
// only when it changed, retrying on conflict.
//
// Properties enforced here:
//   - a phase never leaves Succeeded or Failed (KUBELET-5), both here and
//     in Manager.Write, which refuses such a write;
//   - a container status never goes from terminated back to running or
//     waiting once the pod is terminal;
//   - a pod moves into Succeeded or Failed only once its termination has
//     completed (Input.PodIsTerminal: the kill that ends it succeeded and
//     nothing of it runs); until then its phase, reason and message stay
//     the old ones, as upstream's status manager holds them back while
//     the pod could have running containers (holdTerminalPhase); once
//     its volumes are torn down and its cgroup removed too (Input.Final),
//     the status is final as upstream's TerminatePod makes it
//     (terminatePodStatus: a phase still Pending or Running is Failed,
//     containers that never reported an end ContainerStatusUnknown);
//   - conditions keep their lastTransitionTime while their status holds;
//   - conditions the kubelet does not own (DisruptionTarget, readiness
//     gates) are never written away by a status built from an older view
//     of the pod (Merge, applied by Manager.Write to every attempt), and a
//     DisruptionTarget the kubelet decides with a terminal phase is
//     reported with every status of that phase (Input.Terminal);
//   - the conditions are in upstream's order (generateAPIPodStatus,
//     mergePodStatus): other components' first, in the stored pod's
//     order, then the kubelet's own, the resize conditions leading and a
//     DisruptionTarget it decided just before PodReadyToStartContainers
//     when the pod had none;
//   - status.observedGeneration and the observedGeneration of every
//     condition the kubelet owns are the generation of the pod the status
//     was generated from (KEP-5067 PodObservedGenerationTracking, GA in
//     1.35); other components' conditions keep theirs, and the in-place
//     resize conditions (PodResizePending, PodResizeInProgress) the
//     generation the kubelet decided them for;
//   - every container the runtime has reports its allocated resources,
//     and a running one its actual resources (ContainerStatusResources),
//     the spec's own lists when they agree; every pod reports its
//     pod-level allocated resources and resources (PodStatusResources:
//     once it is Running, its pod cgroup's values as Input.PodCgroup
//     gives them), the last reported lists or its one container's when
//     they agree.
package status

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// Reasons used in pod status, as upstream.
const (
	ReasonContainerCreating         = "ContainerCreating"
	ReasonPodInitializing           = "PodInitializing"
	ReasonCompleted                 = "Completed"
	ReasonError                     = "Error"
	ReasonContainersNotInitialized  = "ContainersNotInitialized"
	ReasonContainersNotReady        = "ContainersNotReady"
	ReasonReadinessGatesNotReady    = "ReadinessGatesNotReady"
	ReasonPodCompleted              = "PodCompleted"
	ReasonPodFailed                 = "PodFailed"
	ReasonContainerStatusUnknown    = "ContainerStatusUnknown"
	PodReadyToStartContainers       = v1.PodConditionType("PodReadyToStartContainers")
	messageContainerStatusUnknownAt = "The container could not be located when the pod was terminated"
)

// Input is everything GenerateAPIPodStatus looks at.
type Input struct {
	// Pod carries the spec and the last status written (the old status).
	Pod     *v1.Pod
	Runtime *podstate.Pod
	Probes  map[string]podstate.ContainerProbes // by container id
	// Waiting reasons by podsync.BackoffKey(name, init).
	Waiting map[string]podstate.Waiting
	// Terminal is a phase the kubelet decided (deadline, eviction): the
	// conditions are computed for it, but it is reported, with its
	// condition, only once PodIsTerminal (holdTerminalPhase), as
	// upstream's status manager holds back the phase and its
	// DisruptionTarget.
	Terminal *podsync.Terminal
	// PodIsTerminal: the pod has been killed for good (deleted, done or
	// past its deadline), the kill succeeded and nothing of it runs any
	// more. Until then the pod could have running containers, and a
	// terminal phase is held back (holdTerminalPhase).
	PodIsTerminal bool
	// Final (with PodIsTerminal): the terminated pod's volumes are torn
	// down and its cgroup removed, its status is final as upstream's
	// TerminatePod makes it at the end of SyncTerminatedPod
	// (terminatePodStatus). A PodIsTerminal status without it is the one
	// upstream's SyncTerminatingPod and SyncTerminatedPod write before
	// (generateAPIPodStatus with podIsTerminal).
	Final       bool
	HostIPs     []string
	RuntimeType string
	Now         time.Time
	// Resize are the in-place resize conditions to report
	// (PodResizePending, PodResizeInProgress; the kubelet owns them), as
	// the kubelet decided them: their times and observedGeneration are
	// theirs. Before the kubelet's other conditions, as upstream's
	// generateAPIPodStatus appends them; none when nil.
	Resize []v1.PodCondition
	// PodCgroup is what the kubelet read of the pod's cgroup for its
	// pod-level status.resources (PodStatusResources); nothing read when
	// zero.
	PodCgroup PodCgroup
}

// GenerateAPIPodStatus computes the pod status to report.
func GenerateAPIPodStatus(in Input) v1.PodStatus {
	pod, old := in.Pod, in.Pod.Status
	now := metav1.NewTime(in.Now)
	// status.observedGeneration: the generation of the pod this status was
	// generated from, on every status (upstream's
	// CalculatePodStatusObservedGeneration with PodObservedGenerationTracking
	// GA and locked on since 1.35).
	s := v1.PodStatus{QOSClass: old.QOSClass, NominatedNodeName: old.NominatedNodeName, ObservedGeneration: pod.Generation}

	hasInit := len(pod.Spec.InitContainers) > 0
	s.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, old.InitContainerStatuses, true, hasInit)
	s.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, old.ContainerStatuses, false, hasInit)
	s.EphemeralContainerStatuses = ephemeralContainerStatuses(in, old.EphemeralContainerStatuses)
	// Every pod reports its pod-level allocatedResources and resources
	// (Pod as allocated; PodStatusResources), as upstream's
	// convertStatusToAPIStatus with InPlacePodLevelResourcesVerticalScaling
	// (beta, on since 1.36).
	s.AllocatedResources, s.Resources = PodStatusResources(pod, in.PodCgroup)

	s.Phase = GetPhase(pod, s.InitContainerStatuses, s.ContainerStatuses, in.PodIsTerminal)
	if in.Terminal != nil {
		s.Phase, s.Reason, s.Message = in.Terminal.Phase, in.Terminal.Reason, in.Terminal.Message
	}
	if podsync.IsTerminalPhase(old.Phase) {
		// KUBELET: a terminal phase is final.
		s.Phase, s.Reason, s.Message = old.Phase, old.Reason, old.Message
	}

	// IPs: the ready sandbox's (a dual-stack sandbox's both, the primary
	// first), else the last reported ones.
	if sb := in.Runtime.LatestSandbox(); sb != nil && sb.Ready && sb.IP != "" {
		s.PodIP, s.PodIPs = sb.IP, PodIPs(sb.IP, sb.AdditionalIPs)
	} else {
		s.PodIP, s.PodIPs = old.PodIP, old.PodIPs
	}
	if len(in.HostIPs) > 0 {
		s.HostIP = in.HostIPs[0]
		for _, ip := range in.HostIPs {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
		}
		if pod.Spec.HostNetwork {
			// A host-network pod shares the node's network namespace: its
			// IPs are the node's, whatever the sandbox reports.
			s.PodIP, s.PodIPs = in.HostIPs[0], nil
			for _, ip := range in.HostIPs {
				s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
			}
		}
	}
	if old.StartTime != nil {
		s.StartTime = old.StartTime
	} else {
		s.StartTime = &now
	}

	// The conditions are computed for the phase as generated, also one
	// held back below (upstream's generateAPIPodStatus computes them
	// before its status manager's merge), but the condition the kubelet
	// decided with a terminal phase goes only with that phase.
	hold := holdTerminalPhase(old.Phase, s.Phase, !in.PodIsTerminal)
	if hold && in.Terminal != nil && in.Terminal.Condition != nil {
		t := *in.Terminal
		t.Condition = nil
		in.Terminal = &t
	}
	s.Conditions = conditions(in, &s, now)
	if hold {
		s.Phase, s.Reason, s.Message = old.Phase, old.Reason, old.Message
	}
	if in.PodIsTerminal && in.Final {
		terminatePodStatus(pod, &s)
	}
	return s
}

// terminatePodStatus makes s, the status of pod once its termination has
// completed, final as upstream's status manager's TerminatePod does at
// the end of SyncTerminatedPod, before the pod may be deleted: every
// container not terminated is reported terminated with
// ContainerStatusUnknown (exit code 137, "The container could not be
// located when the pod was terminated") — the app containers once the
// pod has initialized (podInitialized), the init containers up to the
// last one that ever started (the first at least) — and a phase not yet
// terminal becomes Failed (a pod deleted while Pending, say, its image
// not pulled). After the conditions are computed, as upstream's, which
// changes only the cached status's states and phase. Ephemeral
// containers are left as they are, as upstream's.
func terminatePodStatus(pod *v1.Pod, s *v1.PodStatus) {
	unknown := func(cs *v1.ContainerStatus) {
		if cs.State.Terminated == nil {
			cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 137, Reason: ReasonContainerStatusUnknown, Message: messageContainerStatusUnknownAt,
			}}
		}
	}
	if podInitialized(pod) {
		for i := range s.ContainerStatuses {
			unknown(&s.ContainerStatuses[i])
		}
	}
	// Those of the init containers that tried to start: all but the
	// trailing ones waiting without a previous termination, the first
	// always.
	n := 0
	for i := len(s.InitContainerStatuses) - 1; i >= 0; i-- {
		if cs := &s.InitContainerStatuses[i]; cs.State.Waiting == nil || cs.LastTerminationState.Terminated != nil {
			n = i + 1
			break
		}
	}
	if n == 0 && len(s.InitContainerStatuses) > 0 {
		n = 1
	}
	for i := range n {
		unknown(&s.InitContainerStatuses[i])
	}
	if !podsync.IsTerminalPhase(s.Phase) {
		s.Phase = v1.PodFailed
	}
}

// podInitialized reports whether pod (its status as last reported) shows
// that it got past its init containers, as upstream's hasPodInitialized:
// it has none, an app container is or was out of waiting, or its last
// init container completed with exit code 0 (a sidecar: runs, started).
func podInitialized(pod *v1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for i := range pod.Status.ContainerStatuses {
		if cs := &pod.Status.ContainerStatuses[i]; cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	l := len(pod.Status.InitContainerStatuses)
	if l == 0 || l > len(pod.Spec.InitContainers) || pod.Spec.InitContainers[l-1].Name != pod.Status.InitContainerStatuses[l-1].Name {
		return false // none, or not the spec's (upstream's GetContainerByIndex)
	}
	last := &pod.Status.InitContainerStatuses[l-1]
	if podsync.IsSidecar(&pod.Spec.InitContainers[l-1]) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	for _, t := range []*v1.ContainerStateTerminated{last.LastTerminationState.Terminated, last.State.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// holdTerminalPhase reports whether a status generated with phase, the
// pod's old one being old, keeps old (its reason and message too)
// instead: while the pod could have running containers it does not move
// into a terminal phase, as upstream's status manager (mergePodStatus,
// its couldHaveRunningContainers the pod worker's, true until
// SyncTerminatingPod's kill succeeded), so that the API never shows a
// finished pod whose containers or sandbox may still hold the node's
// resources. Everything else of the status is reported as generated (the
// containers' states; the conditions as computed for the terminal phase,
// as upstream generates them before the merge).
func holdTerminalPhase(old, phase v1.PodPhase, couldHaveRunningContainers bool) bool {
	return couldHaveRunningContainers && podsync.IsTerminalPhase(phase) && !podsync.IsTerminalPhase(old)
}

// PodIPs is status.podIPs for a sandbox's primary IP and its others (a
// dual-stack sandbox's other family's), the primary first.
func PodIPs(primary string, more []string) []v1.PodIP {
	out := make([]v1.PodIP, 0, 1+len(more))
	out = append(out, v1.PodIP{IP: primary})
	for _, ip := range more {
		out = append(out, v1.PodIP{IP: ip})
	}
	return out
}

// GetPhase is upstream's getPhase: the pod phase from its container
// statuses and restart policy. podIsTerminal means the kubelet has stopped
// the pod for good, so stopped containers will not restart whatever the
// policy says.
func GetPhase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, podIsTerminal bool) v1.PodPhase {
	spec := &pod.Spec
	pendingInit, failedInit := 0, 0
	for _, ic := range spec.InitContainers {
		if podsync.IsSidecar(&ic) {
			continue // counted below, with the app containers
		}
		cs := find(initStatuses, ic.Name)
		switch {
		case cs == nil:
			pendingInit++
		case cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				if cs.LastTerminationState.Terminated.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	anyStarted := false
	// Sidecars: running ones keep the pod Running; not yet started ones
	// keep it Pending while it initializes; terminated ones do not count
	// (they are stopped last when the pod finishes).
	pendingSidecars := 0
	for _, ic := range spec.InitContainers {
		if !podsync.IsSidecar(&ic) {
			continue
		}
		cs := find(initStatuses, ic.Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			if cs.Started == nil || !*cs.Started {
				pendingSidecars++
			}
			running++
		case cs.State.Terminated != nil:
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated == nil {
				pendingSidecars++
				waiting++
			}
		default:
			pendingSidecars++
			unknown++
		}
	}
	for _, c := range spec.Containers {
		cs := find(statuses, c.Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
			anyStarted = true
		case cs.State.Terminated != nil:
			stopped++
			anyStarted = true
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
				anyStarted = true
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case (pendingInit > 0 || pendingSidecars > 0) && !anyStarted:
		return v1.PodPending
	case waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal {
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if spec.RestartPolicy == v1.RestartPolicyAlways || spec.RestartPolicy == "" {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

func find(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func terminatedState(c *podstate.Container, runtimeType string) *v1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" {
		reason = ReasonCompleted
		if c.ExitCode != 0 {
			reason = ReasonError
		}
	}
	t := &v1.ContainerStateTerminated{
		ExitCode: c.ExitCode, Reason: reason, Message: c.Message,
		ContainerID: runtimeType + "://" + c.ID,
	}
	if !c.StartedAt.IsZero() {
		t.StartedAt = metav1.NewTime(c.StartedAt)
	}
	if !c.FinishedAt.IsZero() {
		t.FinishedAt = metav1.NewTime(c.FinishedAt)
	}
	return t
}

// ephemeralContainerStatuses are the statuses of the pod's ephemeral
// containers, built as the others' (waiting with the start's failure
// reason, running, terminated) but never ready: they take no part in the
// pod's readiness, and none is restarted. Each spec is read in place as
// the Container it has the fields of (no copy per status sync).
func ephemeralContainerStatuses(in Input, olds []v1.ContainerStatus) []v1.ContainerStatus {
	ecs := in.Pod.Spec.EphemeralContainers
	if len(ecs) == 0 {
		return nil
	}
	frozen := podsync.IsTerminalPhase(in.Pod.Status.Phase)
	out := make([]v1.ContainerStatus, 0, len(ecs))
	for i := range ecs {
		spec := (*v1.Container)(&ecs[i].EphemeralContainerCommon)
		cs := containerStatus(in, spec, olds, false, ReasonContainerCreating, frozen)
		cs.Ready = false
		out = append(out, cs)
	}
	return out
}

func containerStatuses(in Input, containers []v1.Container, olds []v1.ContainerStatus, init, hasInit bool) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	defaultReason := ReasonContainerCreating
	if hasInit {
		defaultReason = ReasonPodInitializing
	}
	frozen := podsync.IsTerminalPhase(in.Pod.Status.Phase)
	out := make([]v1.ContainerStatus, 0, len(containers))
	for i := range containers {
		out = append(out, containerStatus(in, &containers[i], olds, init, defaultReason, frozen))
	}
	return out
}

// containerStatus is the status of the container spec (an init container
// if init): defaultReason is its waiting reason before it has run, frozen
// that the pod is terminal (a terminated status is then kept as it was).
func containerStatus(in Input, spec *v1.Container, olds []v1.ContainerStatus, init bool, defaultReason string, frozen bool) v1.ContainerStatus {
	old := find(olds, spec.Name)
	if frozen && old != nil && old.State.Terminated != nil {
		return *old.DeepCopy()
	}
	cs := v1.ContainerStatus{Name: spec.Name, Image: spec.Image, Started: ptr(false)}
	c := in.Runtime.Latest(spec.Name, init)
	if c == nil {
		switch {
		case old != nil && old.State.Terminated != nil:
			cs = *old.DeepCopy()
		case old != nil && old.State.Running != nil && in.PodIsTerminal:
			cs = *old.DeepCopy()
			cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 137, Reason: ReasonContainerStatusUnknown, Message: messageContainerStatusUnknownAt,
			}}
			cs.Ready, cs.Started = false, ptr(false)
		default:
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: defaultReason}
			if w, ok := in.Waiting[podsync.BackoffKey(spec.Name, init)]; ok {
				// e.g. CreateContainerConfigError, ErrImagePull
				cs.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			}
			if old != nil {
				cs.LastTerminationState = *old.LastTerminationState.DeepCopy()
				cs.RestartCount = old.RestartCount
			}
		}
		return cs
	}
	cs.ContainerID = in.RuntimeType + "://" + c.ID
	// The image as the runtime reports it (containerd: the image's repo
	// tag, "docker.io/library/nginx:latest") and its image ref as imageID
	// (containerd: the repo digest), as upstream's kubelet
	// (convertContainerStatus); the spec's image only before the
	// container exists.
	if c.Image != "" {
		cs.Image = c.Image
	}
	cs.ImageID = c.ImageRef
	cs.RestartCount = int32(c.Attempt)
	if prev := in.Runtime.Previous(c); prev != nil && prev.State == podstate.ContainerExited {
		cs.LastTerminationState.Terminated = terminatedState(prev, in.RuntimeType)
	} else if old != nil && old.ContainerID == cs.ContainerID {
		cs.LastTerminationState = *old.LastTerminationState.DeepCopy()
	}
	// What is allocated to it (Pod holds the allocated resources) and
	// what it has, as upstream's kubelet reports them for every container
	// the runtime has (InPlacePodVerticalScaling, GA; the API server
	// refuses to resize a pod whose running containers do not report
	// resources): a container not running has its allocated resources.
	// Both are the spec's own lists, only read, unless a resize of a
	// running container is under way: nothing is copied.
	cs.AllocatedResources = spec.Resources.Requests
	cs.Resources = &spec.Resources
	switch c.State {
	case podstate.ContainerRunning:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.StartedAt)}
		cs.Resources = ContainerStatusResources(&spec.Resources, c.Resources)
		probes := in.Probes[c.ID]
		started := spec.StartupProbe == nil || probes.Startup == podstate.ProbeSuccess
		cs.Started = ptr(started)
		if !init || podsync.IsSidecar(spec) {
			cs.Ready = started && (spec.ReadinessProbe == nil || probes.Readiness == podstate.ProbeSuccess)
		}
	case podstate.ContainerExited:
		term := terminatedState(c, in.RuntimeType)
		if w, ok := in.Waiting[podsync.BackoffKey(spec.Name, init)]; ok && !in.PodIsTerminal {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			cs.LastTerminationState = v1.ContainerState{Terminated: term}
		} else {
			cs.State.Terminated = term
		}
		cs.Ready = init && !podsync.IsSidecar(spec) && c.ExitCode == 0 && cs.State.Terminated != nil
	default:
		reason := ReasonContainerCreating
		if w, ok := in.Waiting[podsync.BackoffKey(spec.Name, init)]; ok {
			reason = w.Reason
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason, Message: w.Message}
		} else {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
		}
	}
	return cs
}

func ptr[T any](v T) *T { return &v }

// conditions computes the kubelet-owned conditions and keeps the others,
// in upstream's order (generateAPIPodStatus): the others first, in the
// pod's order, then the resize conditions, then a DisruptionTarget the
// kubelet decided that the pod does not have (one it has is replaced in
// place), then PodReadyToStartContainers, Initialized, Ready,
// ContainersReady and PodScheduled.
func conditions(in Input, s *v1.PodStatus, now metav1.Time) []v1.PodCondition {
	pod := in.Pod
	var decided *v1.PodCondition
	if t := in.Terminal; t != nil && t.Condition != nil && s.Phase == t.Phase && s.Reason == t.Reason {
		// The condition the kubelet decided with the terminal phase (an
		// eviction's DisruptionTarget): reported with it whatever the view
		// the status is built from holds (an older pod, a write that failed).
		decided = t.Condition
	}
	n := 5 + len(in.Resize) + countOtherConditions(pod.Status.Conditions)
	if decided != nil {
		n++
	}
	out, placed := appendOtherConditions(make([]v1.PodCondition, 0, n), pod.Status.Conditions, decided)
	// The resize conditions as decided, then the decided DisruptionTarget
	// if the pod had none, before the five below.
	out = append(out, in.Resize...)
	if decided != nil && !placed {
		out = append(out, *decided)
	}
	add := func(c v1.PodCondition) {
		// Each condition the kubelet owns observed the pod's generation,
		// on every status, whether or not its status changed (upstream's
		// CalculatePodConditionObservedGeneration, the gate locked on).
		c.ObservedGeneration = pod.Generation
		if old := findCondition(pod.Status.Conditions, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		out = append(out, c)
	}

	// PodReadyToStartContainers: a ready sandbox with networking exists.
	ready := v1.ConditionFalse
	if sb := in.Runtime.LatestSandbox(); sb != nil && sb.Ready {
		ready = v1.ConditionTrue
	}
	add(v1.PodCondition{Type: PodReadyToStartContainers, Status: ready})

	// Initialized.
	var incomplete []string
	for i, ic := range pod.Spec.InitContainers {
		cs := s.InitContainerStatuses[i]
		if podsync.IsSidecar(&ic) {
			if cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, ic.Name)
			}
		} else if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			incomplete = append(incomplete, ic.Name)
		}
	}
	switch {
	case len(incomplete) == 0 || anyRegularStarted(s.ContainerStatuses):
		add(v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue})
	case s.Phase == v1.PodSucceeded:
		add(v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: ReasonPodCompleted})
	default:
		add(v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ReasonContainersNotInitialized,
			Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))})
	}

	// ContainersReady and Ready.
	containersReady := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
	switch s.Phase {
	case v1.PodSucceeded:
		containersReady = v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodCompleted}
	case v1.PodFailed:
		containersReady = v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed}
	default:
		var unready []string
		for i, ic := range pod.Spec.InitContainers {
			if podsync.IsSidecar(&ic) && !s.InitContainerStatuses[i].Ready {
				unready = append(unready, ic.Name)
			}
		}
		for _, cs := range s.ContainerStatuses {
			if !cs.Ready {
				unready = append(unready, cs.Name)
			}
		}
		if len(unready) > 0 {
			containersReady = v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))}
		}
	}
	podReady := containersReady
	podReady.Type = v1.PodReady
	if podReady.Status == v1.ConditionTrue {
		var msgs []string
		for _, g := range pod.Spec.ReadinessGates {
			c := findCondition(pod.Status.Conditions, g.ConditionType)
			switch {
			case c == nil:
				msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
			case c.Status != v1.ConditionTrue:
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
			}
		}
		if len(msgs) > 0 {
			podReady = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, Message: strings.Join(msgs, ", ")}
		}
	}
	add(v1.PodCondition{Type: podReady.Type, Status: podReady.Status, Reason: podReady.Reason, Message: podReady.Message})
	add(containersReady)
	add(v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	return out
}

// ownedCondition reports whether the kubelet sets conditions of type t.
func ownedCondition(t v1.PodConditionType) bool {
	switch t {
	case PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled,
		v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

func anyRegularStarted(statuses []v1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// countOtherConditions is how many conditions of cs the kubelet does not own.
func countOtherConditions(cs []v1.PodCondition) int {
	n := 0
	for i := range cs {
		if !ownedCondition(cs[i].Type) {
			n++
		}
	}
	return n
}

// appendOtherConditions appends to out the conditions of cs the kubelet
// does not own, in cs's order, with decided (if not nil) in place of the
// one of its type; placed reports whether there was one.
func appendOtherConditions(out, cs []v1.PodCondition, decided *v1.PodCondition) (_ []v1.PodCondition, placed bool) {
	for i := range cs {
		switch {
		case ownedCondition(cs[i].Type):
		case decided != nil && cs[i].Type == decided.Type:
			out = append(out, *decided)
			placed = true
		default:
			out = append(out, cs[i])
		}
	}
	return out, placed
}

func findCondition(cs []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
