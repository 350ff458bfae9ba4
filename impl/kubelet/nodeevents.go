package kubelet

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's events about its node, with upstream's reasons.
const (
	EventStartingKubelet = "Starting"
	// Node status events, each "Node <name> status is now: <reason>".
	EventNodeHasSufficientMemory   = "NodeHasSufficientMemory"
	EventNodeHasInsufficientMemory = "NodeHasInsufficientMemory"
	EventNodeHasNoDiskPressure     = "NodeHasNoDiskPressure"
	EventNodeHasDiskPressure       = "NodeHasDiskPressure"
	EventNodeHasSufficientPID      = "NodeHasSufficientPID"
	EventNodeHasInsufficientPID    = "NodeHasInsufficientPID"
	EventNodeReady                 = "NodeReady"
	EventNodeNotReady              = "NodeNotReady"
	EventNodeSchedulable           = "NodeSchedulable"
	EventNodeNotSchedulable        = "NodeNotSchedulable"
)

// nodeStatusEvents returns the reasons of the node status events a status
// update records, in upstream's setter order (memory, disk and PID
// pressure, then Ready), going from the conditions old (the node as the
// API server has it; nil when registering) to cur. A pressure condition's
// event is recorded when the condition is new or its status changed, as
// upstream's setters do (so each of them at registration); Ready's only
// when it changed, upstream's Ready setter recording nothing for a
// condition it adds. Of several conditions of a type, the one the kubelet
// updates counts (ownedConditionIndex). Pure.
func nodeStatusEvents(old, cur []v1.NodeCondition) []string {
	var out []string
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady} {
		j := ownedConditionIndex(cur, t)
		if j < 0 {
			continue
		}
		c := cur[j]
		i := ownedConditionIndex(old, t)
		if i >= 0 && old[i].Status == c.Status || i < 0 && t == v1.NodeReady {
			continue
		}
		if r := nodeConditionEvent(t, c.Status); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// nodeConditionEvent is the event reason for condition t turning status.
func nodeConditionEvent(t v1.NodeConditionType, status v1.ConditionStatus) string {
	on := status == v1.ConditionTrue
	switch t {
	case v1.NodeMemoryPressure:
		if on {
			return EventNodeHasInsufficientMemory
		}
		return EventNodeHasSufficientMemory
	case v1.NodeDiskPressure:
		if on {
			return EventNodeHasDiskPressure
		}
		return EventNodeHasNoDiskPressure
	case v1.NodePIDPressure:
		if on {
			return EventNodeHasInsufficientPID
		}
		return EventNodeHasSufficientPID
	case v1.NodeReady:
		if on {
			return EventNodeReady
		}
		return EventNodeNotReady
	}
	return ""
}

// recordNodeStatusEvents records each reason as a Normal node event.
func (k *Kubelet) recordNodeStatusEvents(reasons []string) {
	for _, r := range reasons {
		k.nodeEvent(v1.EventTypeNormal, r, fmt.Sprintf("Node %s status is now: %s", k.cfg.NodeName, r))
	}
}

// recordSchedulableEvent records NodeNotSchedulable or NodeSchedulable
// when the node's spec.unschedulable differs from what the kubelet last
// saw (schedulable at start, so a kubelet starting on a cordoned node
// records NodeNotSchedulable), as upstream's kubelet.
func (k *Kubelet) recordSchedulableEvent(unschedulable bool) {
	k.mu.Lock()
	changed := k.nodeUnschedulable != unschedulable
	k.nodeUnschedulable = unschedulable
	k.mu.Unlock()
	if !changed {
		return
	}
	r := EventNodeSchedulable
	if unschedulable {
		r = EventNodeNotSchedulable
	}
	k.recordNodeStatusEvents([]string{r})
}
