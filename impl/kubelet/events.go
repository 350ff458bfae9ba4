package kubelet

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Event reasons the kubelet records (core/v1 Events through client-go's
// event recorder, source component "kubelet", host the node name), as
// upstream's kubelet names them.
const (
	EventPulling            = "Pulling"
	EventPulled             = "Pulled"
	EventFailed             = "Failed"
	EventErrImageNeverPull  = "ErrImageNeverPull"
	EventInspectFailed      = "InspectFailed"
	EventCreated            = "Created"
	EventStarted            = "Started"
	EventKilling            = "Killing"
	EventBackOff            = "BackOff"
	EventUnhealthy          = "Unhealthy"
	EventFailedPostStart    = "FailedPostStartHook"
	EventFailedPreStop      = "FailedPreStopHook"
	EventFailedMount        = "FailedMount"
	EventFailedCreateSandbx = "FailedCreatePodSandBox"
	EventSandboxChanged     = "SandboxChanged"
	EventDeadlineExceeded   = "DeadlineExceeded"
	EventFailedKillPod      = "FailedKillPod"
	// EventLifecycleHTTPFallback: an HTTPS lifecycle hook answered in
	// plain HTTP succeeded over HTTP.
	EventLifecycleHTTPFallback = "LifecycleHTTPFallback"
)

// EventComponent is the source component of the kubelet's events.
const EventComponent = "kubelet"

// containerRef is the object a container's events are about: the pod,
// with the container's field path (spec.containers{name},
// spec.initContainers{name}, spec.ephemeralContainers{name}, or
// "implicitly required container <name>" for one its spec lacks), as
// upstream's kubelet refers to it (GenerateContainerRef).
func containerRef(pod *v1.Pod, name string, init bool) *v1.ObjectReference {
	path := fmt.Sprintf("spec.containers{%s}", name)
	switch {
	case containerSpec(pod, name, init) == nil:
		// None of that name in the pod's spec (a pod restored from a
		// container's labels, restoreKillSpecs): upstream's
		// GenerateContainerRef names it so.
		path = implicitContainerPrefix + name
	case init:
		path = fmt.Sprintf("spec.initContainers{%s}", name)
	case ephemeralSpec(pod, name) != nil:
		path = fmt.Sprintf("spec.ephemeralContainers{%s}", name)
	}
	return &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: path,
	}
}

// implicitContainerPrefix begins the field path of an event about a
// container its pod's spec does not hold (upstream's
// ImplicitContainerPrefix).
const implicitContainerPrefix = "implicitly required container "

// podRef is the object a pod-level event is about.
func podRef(pod *v1.Pod) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
}

// recorder returns the kubelet's event recorder (one that drops events
// until Run starts the kubelet's own, unless Config.Recorder was given).
func (k *Kubelet) recorder() record.EventRecorder {
	if r := k.events.Load(); r != nil {
		return *r
	}
	return discardRecorder
}

func (k *Kubelet) containerEvent(pod *v1.Pod, name string, init bool, eventType, reason, format string, args ...any) {
	if pod == nil {
		return
	}
	k.recorder().Eventf(containerRef(pod, name, init), eventType, reason, format, args...)
}

func (k *Kubelet) podEvent(pod *v1.Pod, eventType, reason, format string, args ...any) {
	if pod == nil {
		return
	}
	k.recorder().Eventf(podRef(pod), eventType, reason, format, args...)
}

// failedKillPod records upstream's FailedKillPod warning for a pod whose
// containers or sandboxes failed to stop (killPod's error).
func (k *Kubelet) failedKillPod(pod *v1.Pod, err error) {
	k.podEvent(pod, v1.EventTypeWarning, EventFailedKillPod, "error killing pod: %v", err)
}

// discardRecorder drops events (a kubelet driven without Run, in tests):
// a FakeRecorder without a channel records nothing.
var discardRecorder = &record.FakeRecorder{}

// decisionEvents records what a sync decided that no runtime call shows:
// containers held in CrashLoopBackOff, and a pod past its deadline.
func (k *Kubelet) decisionEvents(pod *v1.Pod, rec *podRecord, a podsync.Actions) {
	for key, w := range a.Waiting {
		if w.Reason != podsync.ReasonCrashLoopBackOff {
			continue
		}
		name, init := strings.CutPrefix(key, "init/")
		k.containerEvent(pod, name, init, v1.EventTypeWarning, EventBackOff, "Back-off restarting failed container %s in pod %s", name, podDesc(pod))
	}
	if a.Terminal != nil && rec.terminal == nil && a.Terminal.Reason == podsync.ReasonDeadlineExceeded {
		k.podEvent(pod, v1.EventTypeNormal, EventDeadlineExceeded, "%s", a.Terminal.Message)
	}
}

// podDesc is upstream's format.Pod: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// isInit reports whether spec is one of the pod's init containers.
func isInit(pod *v1.Pod, spec *v1.Container) bool {
	if pod == nil {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if &pod.Spec.InitContainers[i] == spec {
			return true
		}
	}
	return false
}

// probeKindTitle is the probe kind as upstream's event messages write it.
func probeKindTitle(kind string) string {
	switch kind {
	case runtime.ProbeLiveness:
		return "Liveness"
	case runtime.ProbeReadiness:
		return "Readiness"
	case runtime.ProbeStartup:
		return "Startup"
	}
	return kind
}
