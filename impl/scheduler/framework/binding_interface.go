package framework

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The extension points after a node is chosen, in the order they run:
// Reserve (scheduling cycle, right after the pod is assumed onto the node),
// Permit (scheduling cycle; may hold the pod), then in the binding cycle,
// which runs on its own goroutine: waiting for Permit, PreBind, the binding
// itself and PostBind. When anything after Reserve fails, every Reserve
// plugin's Unreserve runs (in reverse order), the assumption is forgotten
// and the pod goes back to the queue.

// ReservePlugin keeps plugin state in step with the scheduler's cache: Reserve
// claims what the pod will use on nodeName before the binding is known;
// Unreserve gives it back if the pod does not get there. Unreserve must be
// idempotent and may be called although Reserve was not (a plugin earlier in
// the list failed).
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PermitPlugin may approve the pod's binding (Success), refuse it
// (Unschedulable: the pod is requeued), or hold it (Wait, with how long at
// most): the binding cycle then waits until every waiting plugin allowed it
// through the pod's WaitingPod, one of them rejected it, or a timeout passed
// (which rejects it).
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (*Status, time.Duration)
}

// PreBindPlugin runs just before the binding, in the binding cycle (where
// upstream's VolumeBinding provisions volumes). Failure requeues the pod.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// PostBindPlugin is told that the pod was bound. It is informational: it
// cannot fail.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// WaitingPod is a pod held by Permit plugins. Plugins (from any goroutine)
// and the scheduler use it to let the pod through or turn it away.
type WaitingPod interface {
	// GetPod returns the pod (as assumed onto its node).
	GetPod() *v1.Pod
	// NodeName is the node the pod waits to be bound to.
	NodeName() string
	// GetPendingPlugins lists the plugins that have not allowed it yet.
	GetPendingPlugins() []string
	// Allow records that plugin lets the pod through; once every waiting
	// plugin did, the binding cycle goes on.
	Allow(pluginName string)
	// Reject turns the pod away: the binding cycle fails with
	// Unschedulable and msg, attributed to pluginName.
	Reject(pluginName, msg string)
}

// WaitingPodsHandle is the part of Handle that reaches pods held at Permit.
type WaitingPodsHandle interface {
	// IterateOverWaitingPods calls f for every waiting pod.
	IterateOverWaitingPods(f func(WaitingPod))
	// GetWaitingPod returns the waiting pod with that UID, or nil.
	GetWaitingPod(uid types.UID) WaitingPod
	// RejectWaitingPod rejects the waiting pod with that UID and reports
	// whether there was one.
	RejectWaitingPod(uid types.UID) bool
}
