// Package podsync decides what the kubelet does to one pod. Its core,
// ComputePodActions, is a pure function of the pod, the runtime's view of
// it, probe results, restart back-off state and the time; it returns the
// intended effects as an Actions value that the kubelet's loop carries out
// (spec: KUBELET actions CreateSandbox, StartInit, StartContainer,
// KillContainer, KillPod).
//
// Rules enforced here:
//   - never a second ready sandbox for a pod: a sandbox is created only
//     when no ready one exists (KUBELET-2, also across kubelet restarts);
//   - init containers run one at a time, in order, each to successful
//     completion before the next starts, and before any app container;
//     sidecars (init containers with restartPolicy Always) only need to
//     have started, then keep running and are restarted whenever they exit;
//     they do not keep a finished pod alive;
//   - restartPolicy Always / OnFailure / Never decides restarts, with
//     CrashLoopBackOff (Base doubling to Max) between restarts;
//   - ephemeral containers (kubectl debug) are started once each, in the
//     pod's running sandbox, even before initialization is over, as
//     upstream's kubelet; they are never restarted (whatever the pod's
//     restartPolicy), never probed, and do not keep a finished pod alive;
//   - a pod that is being deleted, is past activeDeadlineSeconds, or whose
//     phase is terminal is killed and nothing in it is started again
//     (KUBELET-5: a phase never leaves Succeeded/Failed);
//   - a pod once killed to end it (Input.Killed) is terminated: nothing of
//     it starts again, and it is killed again only while something of it
//     runs (KillNeeded), as upstream's pod worker runs SyncTerminatingPod
//     until its kill succeeds and then no sync of the pod at all; a pod a
//     restarted kubelet first finds Succeeded or Failed with nothing of it
//     running was killed before (FoundTerminated).
//
// DecideImagePull decides, apart, whether a container's image is pulled now
// or backs off after failed pulls (ImagePullBackOff, per pod and image).
package podsync

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

// Reasons and messages, as upstream uses them.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
	ReasonCrashLoopBackOff  = "CrashLoopBackOff"
)

// Input is everything ComputePodActions looks at.
type Input struct {
	Pod     *v1.Pod
	Runtime *podstate.Pod
	// Probes by container id.
	Probes map[string]podstate.ContainerProbes
	// Backoff by container name (init containers prefixed "init/").
	Backoff map[string]BackoffEntry
	Now     time.Time
	Config  BackoffConfig
	// Killed: the kubelet has terminated the pod, a kill of it that
	// ended it (not one replacing its sandbox) having succeeded.
	Killed bool
}

// Kill is one container to stop.
type Kill struct {
	ContainerID string
	Name        string
	Init        bool
	// Message says why, e.g. "Container app failed liveness probe, will be restarted".
	Message     string
	GracePeriod int64
}

// Start is one container to create and start.
type Start struct {
	Index int // index into pod.Spec.InitContainers, .Containers or .EphemeralContainers
	Init  bool
	// Ephemeral: Index is into pod.Spec.EphemeralContainers.
	Ephemeral bool
	// TargetID is the runtime id of the newest container (of any state
	// and sandbox) an ephemeral container's targetContainerName names: its
	// PID namespace is the one to join. MissingTarget is that name when no
	// container of the pod has it: the start fails then
	// (CreateContainerConfigError), as upstream's kubelet's.
	TargetID      string
	MissingTarget string
	Attempt       uint32
}

// Terminal is a terminal phase the kubelet decided on its own (deadline,
// eviction).
type Terminal struct {
	Phase           v1.PodPhase
	Reason, Message string
	// Condition, when set, is reported with the phase on every status
	// written while the phase is this one (an eviction's DisruptionTarget),
	// so that no write of the terminal phase goes without it.
	Condition *v1.PodCondition
}

// Actions are the intended effects of one sync of a pod.
type Actions struct {
	// KillPod stops every running container (running preStop hooks within
	// GracePeriod) and then the sandbox.
	KillPod     bool
	GracePeriod int64
	// Terminal, when set, is the phase to report once the pod is killed.
	Terminal *Terminal
	// CreateSandbox creates a new sandbox with SandboxAttempt (after
	// KillPod if that is set too).
	CreateSandbox  bool
	SandboxAttempt uint32
	// SandboxID is the ready sandbox containers are started in (when
	// CreateSandbox is false).
	SandboxID string
	// ContainersToKill are stopped before anything is started.
	ContainersToKill []Kill
	// ContainersToStart, in order.
	ContainersToStart []Start
	// Waiting holds containers back with a reason, by container name
	// (init containers prefixed "init/"); nil if none is.
	Waiting map[string]podstate.Waiting
	// Backoff are the updated back-off entries to store (nil if none).
	Backoff map[string]BackoffEntry
	// RequeueAt, when non-zero, is when the pod should be synced again
	// even if nothing else happens (back-off expiry, deadline).
	RequeueAt time.Time
}

// BackoffKey is the key of a container's back-off entry within its pod.
func BackoffKey(name string, init bool) string {
	if init {
		return "init/" + name
	}
	return name
}

// GracePeriod is the grace period to kill the pod with: the deletion's if
// it is being deleted, otherwise the spec's (default 30 s).
func GracePeriod(pod *v1.Pod) int64 {
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

// PastActiveDeadline reports whether the pod has run longer than its
// activeDeadlineSeconds, and when the deadline is.
func PastActiveDeadline(pod *v1.Pod, now time.Time) (bool, time.Time) {
	if pod.Spec.ActiveDeadlineSeconds == nil || pod.Status.StartTime == nil {
		return false, time.Time{}
	}
	deadline := pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	return !now.Before(deadline), deadline
}

// IsTerminalPhase reports Succeeded or Failed.
func IsTerminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// shouldRestart applies the pod's restart policy to an exited container.
func shouldRestart(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return faults.Enabled(faults.KubeletRestartsNeverPods) // mutation: Never pods restarted (KUBELET-7)
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

func exitCodeOf(c *podstate.Container) int32 {
	if c.State == podstate.ContainerExited {
		return c.ExitCode
	}
	// A container left created or unknown never ran to completion.
	return 1
}

// ComputePodActions is the kubelet's decision for one pod.
func ComputePodActions(in Input) Actions {
	pod, rs, now := in.Pod, in.Runtime, in.Now
	if in.Config.Base == 0 {
		in.Config = DefaultBackoff
	}
	var a Actions // its maps are made when first written (most syncs write none)

	// 0. A terminated pod: nothing to do unless something of it runs.
	if in.Killed {
		if KillNeeded(rs, true) {
			return killPod(a, GracePeriod(pod))
		}
		return a
	}
	// 1. Pods that must stop: deleted, terminal, or past their deadline.
	if pod.DeletionTimestamp != nil || IsTerminalPhase(pod.Status.Phase) {
		return killPod(a, GracePeriod(pod))
	}
	if past, deadline := PastActiveDeadline(pod, now); past {
		a.Terminal = &Terminal{Phase: v1.PodFailed, Reason: ReasonDeadlineExceeded, Message: MessageDeadlineExceeded}
		return killPod(a, GracePeriod(pod))
	} else if !deadline.IsZero() {
		a.RequeueAt = deadline
	}

	sb := rs.LatestSandbox()
	// 2. Done by restart policy: nothing runs and nothing will restart.
	if sb != nil && podDone(pod, rs, sb.ID) {
		return killPod(a, GracePeriod(pod))
	}

	// 3. Sandbox: reuse the newest one if it is ready and the only ready
	// one; otherwise kill everything and create a new one.
	if sb == nil || !sb.Ready || rs.ReadySandboxes() > 1 {
		if sb != nil && pod.Spec.RestartPolicy == v1.RestartPolicyNever && hasContainersIn(rs, sb.ID) {
			// The sandbox died under a pod that never restarts: its
			// containers are gone for good; podDone will see it once
			// they are all reported exited.
			return killPod(a, GracePeriod(pod))
		}
		if sb != nil {
			a = killPod(a, GracePeriod(pod))
			a.SandboxAttempt = sb.Attempt + 1
		}
		a.CreateSandbox = true
		if len(pod.Spec.InitContainers) > 0 {
			a.ContainersToStart = append(a.ContainersToStart, Start{Index: 0, Init: true, Attempt: nextAttempt(rs, pod.Spec.InitContainers[0].Name, true)})
		} else {
			for i, c := range pod.Spec.Containers {
				a.ContainersToStart = append(a.ContainersToStart, Start{Index: i, Attempt: nextAttempt(rs, c.Name, false)})
			}
		}
		return a
	}
	a.SandboxID = sb.ID
	a = ephemeralActions(a, pod, rs)

	// 4. Init containers, one at a time. A sidecar (restartPolicy Always)
	// only has to be started before the next one; it then keeps running,
	// restarted whenever it exits, for the pod's whole life.
	initialized := anyAppContainerIn(pod, rs, sb.ID)
	for i, ic := range pod.Spec.InitContainers {
		c := rs.LatestIn(sb.ID, ic.Name, true)
		if IsSidecar(&ic) {
			var done bool
			if a, done = sidecarActions(a, in, i, &ic, c); !done && !initialized {
				return a
			}
			continue
		}
		switch {
		case c == nil:
			a.ContainersToStart = append(a.ContainersToStart, Start{Index: i, Init: true, Attempt: nextAttempt(rs, ic.Name, true)})
			return a
		case c.State == podstate.ContainerRunning:
			return a
		case c.State == podstate.ContainerExited && c.ExitCode == 0:
			continue
		}
		// Failed (or never properly started) init container.
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
			return killPod(a, GracePeriod(pod)) // the pod has failed
		}
		a = restartWithBackoff(a, in, i, true, ic.Name, c)
		return a
	}

	// 5. App containers.
	for i, ac := range pod.Spec.Containers {
		c := rs.LatestIn(sb.ID, ac.Name, false)
		if c == nil {
			a.ContainersToStart = append(a.ContainersToStart, Start{Index: i, Attempt: nextAttempt(rs, ac.Name, false)})
			continue
		}
		if c.State == podstate.ContainerRunning {
			probes := in.Probes[c.ID]
			msg := ""
			switch {
			case ac.StartupProbe != nil && probes.Startup == podstate.ProbeFailure:
				msg = fmt.Sprintf("Container %s failed startup probe, will be restarted", ac.Name)
			case ac.LivenessProbe != nil && probes.Liveness == podstate.ProbeFailure:
				msg = fmt.Sprintf("Container %s failed liveness probe, will be restarted", ac.Name)
			}
			if msg == "" {
				continue
			}
			a.ContainersToKill = append(a.ContainersToKill, Kill{ContainerID: c.ID, Name: ac.Name, Message: msg, GracePeriod: probeGrace(pod, &ac)})
			if pod.Spec.RestartPolicy != v1.RestartPolicyNever {
				a.ContainersToStart = append(a.ContainersToStart, Start{Index: i, Attempt: c.Attempt + 1})
			}
			continue
		}
		if !shouldRestart(pod.Spec.RestartPolicy, exitCodeOf(c)) {
			continue
		}
		a = restartWithBackoff(a, in, i, false, ac.Name, c)
	}
	return a
}

// ephemeralActions starts every ephemeral container that has never run in
// any sandbox of the pod. One that ran is never started again: it stays
// as it exited (restartPolicy Never, whatever the pod's), and a new
// sandbox does not bring it back.
func ephemeralActions(a Actions, pod *v1.Pod, rs *podstate.Pod) Actions {
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if rs.Named(ec.Name) != nil {
			continue
		}
		s := Start{Index: i, Ephemeral: true}
		if ec.TargetContainerName != "" {
			// As upstream's kubelet: the newest container of that name,
			// whatever its state or sandbox (names are unique in a pod).
			if t := rs.Named(ec.TargetContainerName); t != nil {
				s.TargetID = t.ID
			} else {
				s.MissingTarget = ec.TargetContainerName
			}
		}
		a.ContainersToStart = append(a.ContainersToStart, s)
	}
	return a
}

// IsSidecar reports whether an init container is a sidecar: a restartable
// init container (restartPolicy Always), as Kubernetes 1.29+ runs them.
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// sidecarActions handles one sidecar init container c (nil if none ran in
// this sandbox yet): start it, restart it after failed probes or an exit
// (with back-off, whatever the pod's restartPolicy), and report whether it
// has started so the init containers after it may run.
func sidecarActions(a Actions, in Input, index int, spec *v1.Container, c *podstate.Container) (Actions, bool) {
	switch {
	case c == nil:
		a.ContainersToStart = append(a.ContainersToStart, Start{Index: index, Init: true, Attempt: nextAttempt(in.Runtime, spec.Name, true)})
		return a, false
	case c.State == podstate.ContainerRunning:
		probes := in.Probes[c.ID]
		msg := ""
		switch {
		case spec.StartupProbe != nil && probes.Startup == podstate.ProbeFailure:
			msg = fmt.Sprintf("Container %s failed startup probe, will be restarted", spec.Name)
		case spec.LivenessProbe != nil && probes.Liveness == podstate.ProbeFailure:
			msg = fmt.Sprintf("Container %s failed liveness probe, will be restarted", spec.Name)
		}
		if msg != "" {
			a.ContainersToKill = append(a.ContainersToKill, Kill{ContainerID: c.ID, Name: spec.Name, Init: true, Message: msg, GracePeriod: probeGrace(in.Pod, spec)})
			a.ContainersToStart = append(a.ContainersToStart, Start{Index: index, Init: true, Attempt: c.Attempt + 1})
			return a, false
		}
		return a, spec.StartupProbe == nil || probes.Startup == podstate.ProbeSuccess
	}
	return restartWithBackoff(a, in, index, true, spec.Name, c), false
}

// anyAppContainerIn reports whether an app container was ever created in
// the sandbox: initialization is over, and a sidecar restarting later does
// not hold the app containers back.
func anyAppContainerIn(pod *v1.Pod, rs *podstate.Pod, sandboxID string) bool {
	for _, ac := range pod.Spec.Containers {
		if rs.LatestIn(sandboxID, ac.Name, false) != nil {
			return true
		}
	}
	return false
}

// restartWithBackoff starts a new instance of an exited container unless it
// is still in back-off, in which case it waits with CrashLoopBackOff.
func restartWithBackoff(a Actions, in Input, index int, init bool, name string, c *podstate.Container) Actions {
	key := BackoffKey(name, init)
	entry := in.Backoff[key]
	finished := c.FinishedAt
	if finished.IsZero() {
		finished = c.CreatedAt
	}
	if wait, until := in.Config.InBackoff(entry, finished, in.Now); wait {
		if a.Waiting == nil {
			a.Waiting = map[string]podstate.Waiting{}
		}
		a.Waiting[key] = podstate.Waiting{
			Reason: ReasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				entry.Backoff, name, in.Pod.Name, in.Pod.Namespace, in.Pod.UID),
		}
		if a.RequeueAt.IsZero() || until.Before(a.RequeueAt) {
			a.RequeueAt = until
		}
		return a
	}
	if a.Backoff == nil {
		a.Backoff = map[string]BackoffEntry{}
	}
	a.Backoff[key] = in.Config.Next(entry, in.Now)
	if c.State != podstate.ContainerExited {
		// A created-but-never-started container is stopped first.
		a.ContainersToKill = append(a.ContainersToKill, Kill{ContainerID: c.ID, Name: name, Init: init, Message: "container left unstarted", GracePeriod: 0})
	}
	a.ContainersToStart = append(a.ContainersToStart, Start{Index: index, Init: init, Attempt: c.Attempt + 1})
	return a
}

func probeGrace(pod *v1.Pod, c *v1.Container) int64 {
	for _, p := range []*v1.Probe{c.LivenessProbe, c.StartupProbe} {
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			return *p.TerminationGracePeriodSeconds
		}
	}
	return GracePeriod(pod)
}

// KillNeeded reports whether a pod that must stop is to be killed: always
// until a kill of it succeeded (killed), then only while a container of it
// runs or a sandbox of it is ready. The first kill stops every
// container and sandbox, a sandbox the runtime reports not ready too
// (its network may still be set up); after it, as upstream's pod worker
// once SyncTerminatingPod succeeded, a terminated pod is not killed on
// every resync, nor when it goes.
func KillNeeded(rs *podstate.Pod, killed bool) bool {
	return !killed || !rs.Stopped()
}

// FoundTerminated reports whether a pod the kubelet is about to sync for
// the first time (a restarted kubelet finding the pod in the runtime) was
// terminated before: its phase from the API is Succeeded or Failed and
// nothing of it runs (no container running, no sandbox ready), so the
// kill that ended it succeeded. Such a pod is terminated at once, as
// upstream's pod workers decide for a pod first seen in a terminal phase
// whose runtime status is terminal (UpdatePod, isPodStatusCacheTerminal):
// SyncTerminatedPod runs for it, SyncTerminatingPod (its kill) does not.
// Only for the first sync: a pod that was running under this kubelet and
// turned terminal is killed once, a stopped sandbox too, as upstream's.
// Created and unknown containers count as running here, as for KillNeeded
// (upstream's check counts only running ones).
func FoundTerminated(pod *v1.Pod, rs *podstate.Pod) bool {
	return IsTerminalPhase(pod.Status.Phase) && rs.Stopped()
}

func killPod(a Actions, grace int64) Actions {
	a.KillPod = true
	a.GracePeriod = grace
	a.ContainersToStart = nil
	return a
}

// nextAttempt is the restart count a new instance of the container gets.
func nextAttempt(rs *podstate.Pod, name string, init bool) uint32 {
	if c := rs.Latest(name, init); c != nil {
		return c.Attempt + 1
	}
	return 0
}

func hasContainersIn(rs *podstate.Pod, sandboxID string) bool {
	for _, c := range rs.Containers {
		if c.SandboxID == sandboxID {
			return true
		}
	}
	return false
}

// podDone reports whether the pod has finished for good under its restart
// policy: an init container failed with restartPolicy Never, or every app
// container has exited and none will be restarted.
func podDone(pod *v1.Pod, rs *podstate.Pod, sandboxID string) bool {
	if pod.Spec.RestartPolicy == v1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
		return false
	}
	for _, ic := range pod.Spec.InitContainers {
		if IsSidecar(&ic) {
			continue // sidecars never finish on their own; they are stopped
		}
		c := rs.LatestIn(sandboxID, ic.Name, true)
		if c == nil || c.State != podstate.ContainerExited {
			return false
		}
		if c.ExitCode != 0 {
			return pod.Spec.RestartPolicy == v1.RestartPolicyNever
		}
	}
	for _, ac := range pod.Spec.Containers {
		c := rs.LatestIn(sandboxID, ac.Name, false)
		if c == nil || c.State != podstate.ContainerExited {
			return false
		}
		if shouldRestart(pod.Spec.RestartPolicy, c.ExitCode) {
			return false
		}
	}
	return true
}
