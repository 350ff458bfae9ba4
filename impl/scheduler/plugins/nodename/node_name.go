// Package nodename is the NodeName plugin: a pod that names a node in
// spec.nodeName fits only that node.
package nodename

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeName"

// ErrReason is the rejection reason, in Kubernetes' words.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName filters nodes other than the requested one.
type NodeName struct{}

// New is the plugin factory.
func New(_ json.RawMessage, _ fw.Handle) (fw.Plugin, error) { return &NodeName{}, nil }

// Name implements fw.Plugin.
func (*NodeName) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*NodeName) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{{Resource: fw.Node, ActionType: fw.Add}}
}

// Filter implements fw.FilterPlugin.
func (*NodeName) Filter(_ context.Context, _ *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != nodeInfo.Name() {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}
