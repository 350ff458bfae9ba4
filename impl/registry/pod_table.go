package registry

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeUnreachablePodReason is the status reason the node lifecycle
// controller gives pods on unreachable nodes.
const nodeUnreachablePodReason = "NodeLost"

var podColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Ready", "string", "Ready containers out of all containers of the pod."),
	column("Status", "string", "The pod's phase, or the reason its containers are not running."),
	column("Restarts", "string", "Container restarts in the pod, and how long ago the last one was."),
	ageColumn(),
	wideColumn("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"]),
	wideColumn("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
	wideColumn("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
	wideColumn("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
}

// podRowConditions marks finished pods as Completed rows.
func podRowConditions(p *corev1.Pod) []metav1.TableRowCondition {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(p.Status.Phase), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(p.Status.Phase), Message: "The pod failed."}}
	}
	return nil
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podCells computes READY, STATUS and RESTARTS the way kubectl shows them:
// an init container that has not finished gives "Init:..." statuses, a
// waiting or terminated app container its reason, a deleted pod
// "Terminating" (or "Unknown" when its node is lost).
func podCells(p *corev1.Pod, now time.Time) []any {
	restarts, sidecarRestarts := 0, 0
	total := len(p.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart time.Time

	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	initContainers := map[string]*corev1.Container{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		initContainers[c.Name] = c
		if isSidecar(c) {
			total++
		}
	}

	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		restarts += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
			lastRestart = t.FinishedAt.Time
		}
		sidecar := isSidecar(initContainers[cs.Name])
		if sidecar {
			sidecarRestarts += int(cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastSidecarRestart) {
				lastSidecarRestart = t.FinishedAt.Time
			}
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecar && cs.Started != nil && *cs.Started:
			if cs.Ready {
				ready++
			}
			continue
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podConditionTrue(p, corev1.PodInitialized) {
		restarts = sidecarRestarts
		lastRestart = lastSidecarRestart
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			restarts += int(cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
				lastRestart = t.FinishedAt.Time
			}
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil:
				if cs.State.Terminated.Signal != 0 {
					reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
				} else {
					reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
				}
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			if podConditionTrue(p, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if p.DeletionTimestamp != nil && p.Status.Reason == nodeUnreachablePodReason {
		reason = "Unknown"
	} else if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		reason = "Terminating"
	}

	restartsCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", restarts, age(metav1.NewTime(lastRestart), now))
	}

	podIP := "<none>"
	if len(p.Status.PodIPs) > 0 && p.Status.PodIPs[0].IP != "" {
		podIP = p.Status.PodIPs[0].IP
	}
	readinessGates := "<none>"
	if len(p.Spec.ReadinessGates) > 0 {
		trueGates := 0
		for _, g := range p.Spec.ReadinessGates {
			for _, c := range p.Status.Conditions {
				if c.Type == g.ConditionType {
					if c.Status == corev1.ConditionTrue {
						trueGates++
					}
					break
				}
			}
		}
		readinessGates = fmt.Sprintf("%d/%d", trueGates, len(p.Spec.ReadinessGates))
	}
	return []any{p.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsCell, age(p.CreationTimestamp, now),
		podIP, orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), readinessGates}
}

func podConditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
