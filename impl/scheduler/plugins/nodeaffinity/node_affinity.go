// Package nodeaffinity is the NodeAffinity plugin: Filter enforces the pod's
// nodeSelector and required node affinity; Score sums the weights of the
// preferred node affinity terms a node matches.
package nodeaffinity

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeAffinity"

// ErrReasonPod is the rejection reason, in Kubernetes' words.
const ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"

const (
	preFilterKey fw.StateKey = "PreFilter" + Name
	preScoreKey  fw.StateKey = "PreScore" + Name
)

// NodeAffinity filters and scores by node affinity.
type NodeAffinity struct{}

// New is the plugin factory.
func New(_ json.RawMessage, _ fw.Handle) (fw.Plugin, error) { return &NodeAffinity{}, nil }

// Name implements fw.Plugin.
func (*NodeAffinity) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*NodeAffinity) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{{Resource: fw.Node, ActionType: fw.Add | fw.UpdateNodeLabel}}
}

type preFilterState struct {
	required nodeaffinity.RequiredNodeAffinity
}

func (s *preFilterState) Clone() fw.StateData { return s }

// PreFilter implements fw.PreFilterPlugin. Pods with neither a nodeSelector
// nor required node affinity skip the Filter.
func (*NodeAffinity) PreFilter(_ context.Context, state *fw.CycleState, pod *v1.Pod) *fw.Status {
	a := pod.Spec.Affinity
	noRequired := a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil
	if len(pod.Spec.NodeSelector) == 0 && noRequired {
		return fw.NewStatus(fw.Skip)
	}
	if !noRequired && len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		// An empty term list matches no node.
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	state.Write(preFilterKey, &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod)})
	return nil
}

// PreFilterExtensions implements fw.PreFilterPlugin.
func (*NodeAffinity) PreFilterExtensions() fw.PreFilterExtensions { return nil }

// Filter implements fw.FilterPlugin.
func (*NodeAffinity) Filter(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preFilterKey, err))
	}
	match, _ := d.(*preFilterState).required.Match(nodeInfo.Node())
	if !match {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

type preScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

func (s *preScoreState) Clone() fw.StateData { return s }

// PreScore implements fw.PreScorePlugin.
func (*NodeAffinity) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, _ []*fw.NodeInfo) *fw.Status {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("parsing preferred node affinity: %w", err))
	}
	state.Write(preScoreKey, &preScoreState{preferred: terms})
	return nil
}

// Score implements fw.ScorePlugin.
func (*NodeAffinity) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreKey, err))
	}
	return d.(*preScoreState).preferred.Score(nodeInfo.Node()), nil
}

// ScoreExtensions implements fw.ScorePlugin.
func (p *NodeAffinity) ScoreExtensions() fw.ScoreExtensions { return p }

// NormalizeScore implements fw.ScoreExtensions.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *fw.CycleState, _ *v1.Pod, scores fw.NodeScoreList) *fw.Status {
	return fw.DefaultNormalizeScore(fw.MaxNodeScore, false, scores)
}
