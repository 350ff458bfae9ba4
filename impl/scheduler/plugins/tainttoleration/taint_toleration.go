// Package tainttoleration is the TaintToleration plugin: Filter rejects nodes
// with a NoSchedule or NoExecute taint the pod does not tolerate; Score
// prefers nodes with fewer untolerated PreferNoSchedule taints. It enforces
// SCHED-3 (BindUntainted).
package tainttoleration

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/kubeproof/kubeproof/impl/faults"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "TaintToleration"

const preScoreKey fw.StateKey = "PreScore" + Name

// TaintToleration filters and scores by taints.
type TaintToleration struct{}

// New is the plugin factory.
func New(_ json.RawMessage, _ fw.Handle) (fw.Plugin, error) { return &TaintToleration{}, nil }

// Name implements fw.Plugin.
func (*TaintToleration) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*TaintToleration) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{{Resource: fw.Node, ActionType: fw.Add | fw.UpdateNodeTaint}}
}

// Filter implements fw.FilterPlugin: the first NoSchedule or NoExecute
// taint, in the node's order, that the pod does not tolerate rejects the
// node. It reads the node's taints as the NodeInfo keeps them split by
// effect, so a node without taints costs no look at its v1.Node.
func (*TaintToleration) Filter(_ context.Context, _ *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	nt := nodeInfo.Taints()
	if nt == nil || len(nt.NoScheduleOrNoExecute) == 0 {
		return nil
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), nt.NoScheduleOrNoExecute, pod.Spec.Tolerations, nil, false)
	if !untolerated || faults.Enabled(faults.SchedulerIgnoresTaints) { // mutation: taints ignored (SCHED-3)
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

type preScoreState struct {
	tolerationsPreferNoSchedule []v1.Toleration
}

func (s *preScoreState) Clone() fw.StateData { return s }

// PreScore implements fw.PreScorePlugin: it keeps the tolerations that can
// match PreferNoSchedule taints.
func (*TaintToleration) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, _ []*fw.NodeInfo) *fw.Status {
	var ts []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			ts = append(ts, t)
		}
	}
	state.Write(preScoreKey, &preScoreState{tolerationsPreferNoSchedule: ts})
	return nil
}

// Score implements fw.ScorePlugin: the number of untolerated
// PreferNoSchedule taints (normalized in reverse).
func (*TaintToleration) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreKey, err))
	}
	nt := nodeInfo.Taints()
	if nt == nil {
		return 0, nil
	}
	s := d.(*preScoreState)
	var n int64
	for i := range nt.PreferNoSchedule {
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), s.tolerationsPreferNoSchedule, &nt.PreferNoSchedule[i], false) {
			n++
		}
	}
	return n, nil
}

// ScoreExtensions implements fw.ScorePlugin.
func (p *TaintToleration) ScoreExtensions() fw.ScoreExtensions { return p }

// NormalizeScore implements fw.ScoreExtensions: fewer taints score higher.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *fw.CycleState, _ *v1.Pod, scores fw.NodeScoreList) *fw.Status {
	return fw.DefaultNormalizeScore(fw.MaxNodeScore, true, scores)
}
