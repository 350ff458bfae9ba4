package framework

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HasReservePlugins and HasPermitPlugins say whether those points have
// plugins.
func (f *Framework) HasReservePlugins() bool { return len(f.reserve) > 0 }
func (f *Framework) HasPermitPlugins() bool  { return len(f.permit) > 0 }

// WaitingPods returns the framework's set of pods held at Permit.
func (f *Framework) WaitingPods() *WaitingPods { return f.waitingPods }

// IterateOverWaitingPods implements Handle.
func (f *Framework) IterateOverWaitingPods(fn func(WaitingPod)) { f.waitingPods.iterate(fn) }

// GetWaitingPod implements Handle.
func (f *Framework) GetWaitingPod(uid types.UID) WaitingPod {
	if wp := f.waitingPods.get(uid); wp != nil {
		return wp
	}
	return nil
}

// RejectWaitingPod implements Handle.
func (f *Framework) RejectWaitingPod(uid types.UID) bool {
	wp := f.waitingPods.get(uid)
	if wp == nil {
		return false
	}
	wp.Reject("", "removed")
	return true
}

// RunReservePluginsReserve runs every Reserve plugin in order and stops at
// the first that fails; the caller then runs RunReservePluginsUnreserve.
func (f *Framework) RunReservePluginsReserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionReserve, start, status) }()
	for _, p := range f.reserve {
		if s := p.Reserve(ctx, state, pod, nodeName); !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(p.Name())
			}
			return AsStatus(fmt.Errorf("running Reserve plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	return nil
}

// RunReservePluginsUnreserve runs every Reserve plugin's Unreserve, in
// reverse order.
func (f *Framework) RunReservePluginsUnreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	start := time.Now()
	defer func() { f.observe(ExtensionUnreserve, start, nil) }()
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunPermitPlugins runs every Permit plugin. A rejection (or an error) is
// returned at once. If some plugins asked to wait and none rejected, the pod
// is added to the waiting pods and a Wait status is returned; the binding
// cycle then calls WaitOnPermit.
func (f *Framework) RunPermitPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionPermit, start, status) }()
	var waits map[string]time.Duration
	for _, p := range f.permit {
		s, timeout := p.Permit(ctx, state, pod, nodeName)
		switch {
		case s.IsSuccess():
		case s.IsRejected():
			return s.WithPlugin(p.Name())
		case s.IsWait():
			if waits == nil {
				waits = map[string]time.Duration{}
			}
			waits[p.Name()] = min(timeout, MaxPermitTimeout)
		default:
			return AsStatus(fmt.Errorf("running Permit plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	if waits == nil {
		return nil
	}
	f.waitingPods.add(newWaitingPod(pod, nodeName, waits))
	return NewStatus(Wait, fmt.Sprintf("one or more plugins asked to wait and no plugin rejected pod %q", pod.Name))
}

// WaitOnPermit blocks until the pod held at Permit is allowed (nil),
// rejected or timed out (Unschedulable, attributed to the plugin), or ctx is
// done (Error). A pod that is not waiting returns nil at once.
func (f *Framework) WaitOnPermit(ctx context.Context, pod *v1.Pod) *Status {
	wp := f.waitingPods.get(pod.UID)
	if wp == nil {
		return nil
	}
	defer f.waitingPods.remove(pod.UID)
	var s *Status
	select {
	case s = <-wp.verdict:
	case <-ctx.Done():
		wp.Reject("", "scheduler stopping")
		s = AsStatus(fmt.Errorf("waiting on permit for pod %s/%s: %w", pod.Namespace, pod.Name, ctx.Err()))
	}
	return s
}

// RunPreBindPlugins runs every PreBind plugin in order, stopping at the
// first that fails.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionPreBind, start, status) }()
	for _, p := range f.preBind {
		if s := p.PreBind(ctx, state, pod, nodeName); !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(p.Name())
			}
			return AsStatus(fmt.Errorf("running PreBind plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	return nil
}

// RunPostBindPlugins tells every PostBind plugin that the pod was bound.
func (f *Framework) RunPostBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	start := time.Now()
	defer func() { f.observe(ExtensionPostBind, start, nil) }()
	for _, p := range f.postBind {
		p.PostBind(ctx, state, pod, nodeName)
	}
}
