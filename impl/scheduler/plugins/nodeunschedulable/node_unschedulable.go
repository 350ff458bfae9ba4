// Package nodeunschedulable is the NodeUnschedulable plugin: a node with
// spec.unschedulable (cordoned) only takes pods that tolerate the
// node.kubernetes.io/unschedulable:NoSchedule taint.
package nodeunschedulable

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeUnschedulable"

// Reasons, in Kubernetes' words.
const (
	ErrReasonUnschedulable = "node(s) were unschedulable"
	ErrReasonUnknownNode   = "node(s) had unknown conditions"
)

// NodeUnschedulable filters cordoned nodes.
type NodeUnschedulable struct{}

// New is the plugin factory.
func New(_ json.RawMessage, _ fw.Handle) (fw.Plugin, error) { return &NodeUnschedulable{}, nil }

// Name implements fw.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*NodeUnschedulable) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{{Resource: fw.Node, ActionType: fw.Add | fw.UpdateNodeTaint}}
}

// Filter implements fw.FilterPlugin. It reads spec.unschedulable as the
// NodeInfo keeps it, so a schedulable node costs no look at its v1.Node.
func (*NodeUnschedulable) Filter(_ context.Context, _ *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	if nodeInfo.Node() == nil {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonUnknownNode)
	}
	if !nodeInfo.Unschedulable() {
		return nil
	}
	taint := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, &taint, false) {
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
