// Package podtopologyspread is the PodTopologySpread plugin: Filter enforces
// topologySpreadConstraints with whenUnsatisfiable DoNotSchedule (the skew —
// matching pods in the node's domain plus the pod itself, minus the minimum
// over all domains — must not exceed maxSkew); Score prefers nodes that
// reduce skew for ScheduleAnyway constraints. Only eligible nodes count as
// domains: nodes that carry every constraint's topologyKey and, under the
// default nodeAffinityPolicy Honor, match the pod's node affinity/selector.
//
// Cluster-level default constraints (for pods that declare none) are not
// applied: they need the owning Services/ReplicaSets to derive a selector.
package podtopologyspread

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "PodTopologySpread"

// Reasons, in Kubernetes' words.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

const (
	preFilterKey fw.StateKey = "PreFilter" + Name
	preScoreKey  fw.StateKey = "PreScore" + Name
)

// Args are PodTopologySpreadArgs.
type Args struct {
	DefaultConstraints []v1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
	DefaultingType     string                        `json:"defaultingType,omitempty"`
}

// PodTopologySpread is the plugin.
type PodTopologySpread struct {
	handle fw.Handle
}

// New is the plugin factory.
func New(raw json.RawMessage, h fw.Handle) (fw.Plugin, error) {
	args := Args{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding PodTopologySpreadArgs: %w", err)
	}
	if len(args.DefaultConstraints) > 0 {
		return nil, fmt.Errorf("defaultConstraints are not supported by kubeproof's PodTopologySpread")
	}
	if args.DefaultingType != "" && args.DefaultingType != "System" && args.DefaultingType != "List" {
		return nil, fmt.Errorf("defaultingType: unsupported value %q", args.DefaultingType)
	}
	return &PodTopologySpread{handle: h}, nil
}

// Name implements fw.Plugin.
func (*PodTopologySpread) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*PodTopologySpread) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{
		{Resource: fw.AssignedPod, ActionType: fw.All},
		{Resource: fw.Node, ActionType: fw.Add | fw.Delete | fw.UpdateNodeLabel | fw.UpdateNodeTaint},
	}
}

type constraint struct {
	maxSkew           int32
	topologyKey       string
	selector          labels.Selector
	minDomains        int32
	honorNodeAffinity bool
	honorNodeTaints   bool
}

func buildConstraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("parsing topologySpreadConstraint labelSelector: %w", err)
		}
		if c.LabelSelector != nil {
			for _, k := range c.MatchLabelKeys {
				if v, ok := pod.Labels[k]; ok {
					if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
						sel = sel.Add(*r)
					}
				}
			}
		}
		cc := constraint{maxSkew: c.MaxSkew, topologyKey: c.TopologyKey, selector: sel, minDomains: 1, honorNodeAffinity: true}
		if c.MinDomains != nil {
			cc.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil && *c.NodeAffinityPolicy == v1.NodeInclusionPolicyIgnore {
			cc.honorNodeAffinity = false
		}
		if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
			cc.honorNodeTaints = true
		}
		out = append(out, cc)
	}
	return out, nil
}

// nodeEligible reports whether the node counts as a domain for c.
func nodeEligible(pod *v1.Pod, required nodeaffinity.RequiredNodeAffinity, c *constraint, node *v1.Node) bool {
	if c.honorNodeAffinity {
		if ok, _ := required.Match(node); !ok {
			return false
		}
	}
	if c.honorNodeTaints {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *v1.Taint) bool {
				return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
			}, false)
		if untolerated {
			return false
		}
	}
	return true
}

func hasAllKeys(node *v1.Node, cs []constraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

func countMatching(pods []*fw.PodInfo, sel labels.Selector, ns string) int {
	n := 0
	for _, pi := range pods {
		p := pi.Pod
		if p.Namespace != ns || p.DeletionTimestamp != nil {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

type preFilterState struct {
	constraints []constraint
	// counts[i] maps a domain (topology value) of constraints[i] to the
	// number of matching pods in it.
	counts []map[string]int
	// minMatch[i] is the minimum of counts[i].
	minMatch []int
}

func (s *preFilterState) Clone() fw.StateData {
	c := &preFilterState{constraints: s.constraints, minMatch: append([]int(nil), s.minMatch...)}
	c.counts = make([]map[string]int, len(s.counts))
	for i, m := range s.counts {
		c.counts[i] = make(map[string]int, len(m))
		for k, v := range m {
			c.counts[i][k] = v
		}
	}
	return c
}

func (s *preFilterState) recomputeMin(i int) {
	m := math.MaxInt
	for _, v := range s.counts[i] {
		m = min(m, v)
	}
	if m == math.MaxInt {
		m = 0
	}
	s.minMatch[i] = m
}

// PreFilter implements fw.PreFilterPlugin.
func (p *PodTopologySpread) PreFilter(_ context.Context, state *fw.CycleState, pod *v1.Pod) *fw.Status {
	cs, err := buildConstraints(pod, v1.DoNotSchedule)
	if err != nil {
		return fw.AsStatus(err)
	}
	if len(cs) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	nodes, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fw.AsStatus(err)
	}
	s := &preFilterState{constraints: cs, counts: make([]map[string]int, len(cs)), minMatch: make([]int, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil || !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			if !nodeEligible(pod, required, &cs[i], node) {
				continue
			}
			s.counts[i][node.Labels[cs[i].topologyKey]] += countMatching(ni.Pods, cs[i].selector, pod.Namespace)
		}
	}
	for i := range cs {
		s.recomputeMin(i)
	}
	state.Write(preFilterKey, s)
	return nil
}

// PreFilterExtensions implements fw.PreFilterPlugin.
func (p *PodTopologySpread) PreFilterExtensions() fw.PreFilterExtensions { return p }

func (p *PodTopologySpread) update(state *fw.CycleState, pod *v1.Pod, other *v1.Pod, ni *fw.NodeInfo, delta int) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(err)
	}
	s := d.(*preFilterState)
	node := ni.Node()
	if node == nil || other.Namespace != pod.Namespace || !hasAllKeys(node, s.constraints) {
		return nil
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for i := range s.constraints {
		c := &s.constraints[i]
		if !nodeEligible(pod, required, c, node) || !c.selector.Matches(labels.Set(other.Labels)) {
			continue
		}
		s.counts[i][node.Labels[c.topologyKey]] += delta
		s.recomputeMin(i)
	}
	return nil
}

// AddPod implements fw.PreFilterExtensions.
func (p *PodTopologySpread) AddPod(_ context.Context, state *fw.CycleState, pod *v1.Pod, add *fw.PodInfo, ni *fw.NodeInfo) *fw.Status {
	return p.update(state, pod, add.Pod, ni, 1)
}

// RemovePod implements fw.PreFilterExtensions.
func (p *PodTopologySpread) RemovePod(_ context.Context, state *fw.CycleState, pod *v1.Pod, rm *fw.PodInfo, ni *fw.NodeInfo) *fw.Status {
	return p.update(state, pod, rm.Pod, ni, -1)
}

// Filter implements fw.FilterPlugin.
func (p *PodTopologySpread) Filter(_ context.Context, state *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preFilterKey, err))
	}
	s := d.(*preFilterState)
	node := nodeInfo.Node()
	podLabels := labels.Set(pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		value, ok := node.Labels[c.topologyKey]
		if !ok {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.selector.Matches(podLabels) {
			self = 1
		}
		minMatch := s.minMatch[i]
		if int32(len(s.counts[i])) < c.minDomains {
			minMatch = 0
		}
		if skew := s.counts[i][value] + self - minMatch; skew > int(c.maxSkew) {
			return fw.NewStatus(fw.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

type preScoreState struct {
	constraints []constraint
	counts      []map[string]int
	weights     []float64
}

func (s *preScoreState) Clone() fw.StateData { return s }

// PreScore implements fw.PreScorePlugin: counts matching pods per domain for
// the ScheduleAnyway constraints, weighting each constraint by
// log(number of domains among the feasible nodes + 2).
func (p *PodTopologySpread) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, filtered []*fw.NodeInfo) *fw.Status {
	cs, err := buildConstraints(pod, v1.ScheduleAnyway)
	if err != nil {
		return fw.AsStatus(err)
	}
	if len(cs) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	all, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fw.AsStatus(err)
	}
	s := &preScoreState{constraints: cs, counts: make([]map[string]int, len(cs)), weights: make([]float64, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
		domains := map[string]bool{}
		for _, ni := range filtered {
			if v, ok := ni.Node().Labels[cs[i].topologyKey]; ok {
				domains[v] = true
			}
		}
		s.weights[i] = math.Log(float64(len(domains) + 2))
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range all {
		node := ni.Node()
		if node == nil || !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			if !nodeEligible(pod, required, &cs[i], node) {
				continue
			}
			s.counts[i][node.Labels[cs[i].topologyKey]] += countMatching(ni.Pods, cs[i].selector, pod.Namespace)
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score implements fw.ScorePlugin: the weighted number of matching pods in
// the node's domains (fewer is better; NormalizeScore inverts).
func (p *PodTopologySpread) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreKey, err))
	}
	s := d.(*preScoreState)
	node := nodeInfo.Node()
	if !hasAllKeys(node, s.constraints) {
		return 0, nil // NormalizeScore gives such nodes 0
	}
	var score float64
	for i := range s.constraints {
		score += float64(s.counts[i][node.Labels[s.constraints[i].topologyKey]]) * s.weights[i]
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements fw.ScorePlugin.
func (p *PodTopologySpread) ScoreExtensions() fw.ScoreExtensions { return p }

// NormalizeScore implements fw.ScoreExtensions: maps the fewest matching pods
// to 100; nodes missing a topology key get 0.
func (p *PodTopologySpread) NormalizeScore(_ context.Context, state *fw.CycleState, _ *v1.Pod, scores fw.NodeScoreList) *fw.Status {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return fw.AsStatus(err)
	}
	s := d.(*preScoreState)
	snapshot := p.handle.SnapshotSharedLister().NodeInfos()
	ignored := make([]bool, len(scores))
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for i := range scores {
		ni, err := snapshot.Get(scores[i].Name)
		if err != nil || !hasAllKeys(ni.Node(), s.constraints) {
			ignored[i] = true
			continue
		}
		minScore = min(minScore, scores[i].Score)
		maxScore = max(maxScore, scores[i].Score)
	}
	for i := range scores {
		switch {
		case ignored[i]:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = fw.MaxNodeScore
		default:
			scores[i].Score = fw.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}
