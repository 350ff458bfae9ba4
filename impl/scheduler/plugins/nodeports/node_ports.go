// Package nodeports is the NodePorts plugin: a pod asking for host ports fits
// only nodes where those ports (protocol, IP) are free.
package nodeports

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodePorts"

// ErrReason is the rejection reason, in Kubernetes' words.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const preFilterKey fw.StateKey = "PreFilter" + Name

// NodePorts filters nodes by host port conflicts.
type NodePorts struct{}

// New is the plugin factory.
func New(_ json.RawMessage, _ fw.Handle) (fw.Plugin, error) { return &NodePorts{}, nil }

// Name implements fw.Plugin.
func (*NodePorts) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*NodePorts) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{{Resource: fw.AssignedPod, ActionType: fw.Delete}, {Resource: fw.Node, ActionType: fw.Add}}
}

type preFilterState []v1.ContainerPort

func (s preFilterState) Clone() fw.StateData { return s }

// HostPorts returns the host ports a pod asks for.
func HostPorts(pod *v1.Pod) []v1.ContainerPort {
	var ports []v1.ContainerPort
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// PreFilter implements fw.PreFilterPlugin; pods without host ports skip.
func (*NodePorts) PreFilter(_ context.Context, state *fw.CycleState, pod *v1.Pod) *fw.Status {
	ports := HostPorts(pod)
	if len(ports) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	state.Write(preFilterKey, preFilterState(ports))
	return nil
}

// PreFilterExtensions implements fw.PreFilterPlugin.
func (*NodePorts) PreFilterExtensions() fw.PreFilterExtensions { return nil }

// Filter implements fw.FilterPlugin.
func (*NodePorts) Filter(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preFilterKey, err))
	}
	for _, p := range d.(preFilterState) {
		if nodeInfo.UsedPorts.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return fw.NewStatus(fw.Unschedulable, ErrReason)
		}
	}
	return nil
}
