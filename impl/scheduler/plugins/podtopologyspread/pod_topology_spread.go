// Package podtopologyspread is the PodTopologySpread plugin: Filter enforces
// topologySpreadConstraints with whenUnsatisfiable DoNotSchedule (the skew —
// matching pods in the node's domain plus the pod itself, minus the minimum
// over all domains — must not exceed maxSkew); Score prefers nodes that
// reduce skew for ScheduleAnyway constraints. Only eligible nodes count as
// domains: nodes that carry every constraint's topologyKey and, under the
// default nodeAffinityPolicy Honor, match the pod's node affinity/selector.
//
// A pod that declares no constraints gets the cluster's default constraints
// (PodTopologySpreadArgs): with defaultingType System (the default)
// upstream's system defaults — at most 3 more pods per node and 5 per zone,
// ScheduleAnyway — and with List the configured defaultConstraints. Default
// constraints select the pods of the same workload: the union of the
// selectors of the Services, ReplicationControllers, ReplicaSets and
// StatefulSets that select or own the pod (Handle.DefaultSelector); a pod
// with none gets no default constraints. When scoring against the system
// defaults, nodes need not carry both topology keys.
//
// Scoring follows upstream: each constraint adds, per node, the matching
// pods in the node's domain times log(number of domains + 2), plus
// maxSkew - 1; hostname domains are counted on the node itself; fewer is
// better after normalization.
package podtopologyspread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// DefaultingType is System (the default) or List.
	DefaultingType string `json:"defaultingType,omitempty"`
}

// Defaulting types.
const (
	SystemDefaulting = "System"
	ListDefaulting   = "List"
)

// SystemDefaultConstraints are upstream's system defaults.
var SystemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// PodTopologySpread is the plugin.
type PodTopologySpread struct {
	handle             fw.Handle
	defaultConstraints []v1.TopologySpreadConstraint
	systemDefaulted    bool
}

// New is the plugin factory.
func New(raw json.RawMessage, h fw.Handle) (fw.Plugin, error) {
	args := Args{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding PodTopologySpreadArgs: %w", err)
	}
	if args.DefaultingType == "" {
		args.DefaultingType = SystemDefaulting
	}
	if err := ValidateArgs(&args); err != nil {
		return nil, err
	}
	pl := &PodTopologySpread{handle: h, defaultConstraints: args.DefaultConstraints}
	if args.DefaultingType == SystemDefaulting {
		pl.defaultConstraints, pl.systemDefaulted = SystemDefaultConstraints, true
	}
	return pl, nil
}

// ValidateArgs checks PodTopologySpreadArgs as upstream does, with its
// messages.
func ValidateArgs(args *Args) error {
	var errs []error
	switch {
	case args.DefaultingType != SystemDefaulting && args.DefaultingType != ListDefaulting:
		errs = append(errs, fmt.Errorf("defaultingType: Unsupported value: %q: supported values: %q, %q", args.DefaultingType, SystemDefaulting, ListDefaulting))
	case args.DefaultingType == SystemDefaulting && len(args.DefaultConstraints) > 0:
		errs = append(errs, fmt.Errorf("defaultingType: Invalid value: %q: when .defaultConstraints are not empty", args.DefaultingType))
	}
	seen := map[[2]string]int{}
	for i, c := range args.DefaultConstraints {
		path := fmt.Sprintf("defaultConstraints[%d]", i)
		if c.MaxSkew <= 0 {
			errs = append(errs, fmt.Errorf("%s.maxSkew: Invalid value: %d: not in valid range", path, c.MaxSkew))
		}
		if c.TopologyKey == "" {
			errs = append(errs, fmt.Errorf("%s.topologyKey: Required value: can not be empty", path))
		} else if msgs := validation.IsQualifiedName(c.TopologyKey); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.topologyKey: Invalid value: %q: %s", path, c.TopologyKey, strings.Join(msgs, "; ")))
		}
		if c.WhenUnsatisfiable != v1.DoNotSchedule && c.WhenUnsatisfiable != v1.ScheduleAnyway {
			errs = append(errs, fmt.Errorf("%s.whenUnsatisfiable: Unsupported value: %q: supported values: %q, %q", path, c.WhenUnsatisfiable, v1.DoNotSchedule, v1.ScheduleAnyway))
		}
		if c.LabelSelector != nil {
			errs = append(errs, fmt.Errorf("%s.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod", path))
		}
		pair := [2]string{c.TopologyKey, string(c.WhenUnsatisfiable)}
		if j, dup := seen[pair]; dup {
			errs = append(errs, fmt.Errorf("defaultConstraints[%d]: Duplicate value: {%v, %v}: same as defaultConstraints[%d]", i, c.TopologyKey, c.WhenUnsatisfiable, j))
		} else {
			seen[pair] = i
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid PodTopologySpreadArgs: %w", err)
	}
	return nil
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

// constraints returns the pod's constraints with action, or — when it
// declares none — the default constraints with action, selecting the
// pod's workload.
func (p *PodTopologySpread) constraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return buildConstraints(pod, pod.Spec.TopologySpreadConstraints, action)
	}
	if len(p.defaultConstraints) == 0 {
		return nil, nil
	}
	cs, err := buildConstraints(pod, p.defaultConstraints, action)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	sel := p.handle.DefaultSelector(pod)
	if sel == nil || sel.Empty() {
		return nil, nil
	}
	for i := range cs {
		cs[i].selector = sel
	}
	return cs, nil
}

func buildConstraints(pod *v1.Pod, from []v1.TopologySpreadConstraint, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range from {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("parsing topologySpreadConstraint labelSelector: %w", err)
		}
		// matchLabelKeys are not read: the API server merged them into
		// the labelSelector when the pod was created (1.34+'s
		// MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default),
		// and upstream's scheduler then leaves them alone.
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
	if sel.Empty() {
		return 0
	}
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
	cs, err := p.constraints(pod, v1.DoNotSchedule)
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
	// ignored are the feasible nodes missing a topology key (when all
	// keys are required); they score 0.
	ignored map[string]bool
	// counts[i] maps each topology value of the feasible nodes to the
	// matching pods in it (hostname constraints are counted in Score).
	counts  []map[string]int
	weights []float64
}

func (s *preScoreState) Clone() fw.StateData { return s }

// PreScore implements fw.PreScorePlugin: for the ScheduleAnyway
// constraints, counts matching pods per domain of the feasible nodes and
// weights each constraint by log(number of such domains + 2).
func (p *PodTopologySpread) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, filtered []*fw.NodeInfo) *fw.Status {
	cs, err := p.constraints(pod, v1.ScheduleAnyway)
	if err != nil {
		return fw.AsStatus(err)
	}
	all, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fw.AsStatus(err)
	}
	if len(cs) == 0 || len(filtered) == 0 || len(all) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	// Nodes must carry every key, except under the system defaults.
	requireAll := len(pod.Spec.TopologySpreadConstraints) > 0 || !p.systemDefaulted
	s := &preScoreState{constraints: cs, ignored: map[string]bool{}, counts: make([]map[string]int, len(cs)), weights: make([]float64, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	for _, ni := range filtered {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			s.ignored[node.Name] = true
			continue
		}
		for i := range cs {
			if cs[i].topologyKey != v1.LabelHostname {
				s.counts[i][node.Labels[cs[i].topologyKey]] += 0
			}
		}
	}
	for i := range cs {
		size := len(s.counts[i])
		if cs[i].topologyKey == v1.LabelHostname {
			size = len(filtered) - len(s.ignored)
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range all {
		node := ni.Node()
		if node == nil || (requireAll && !hasAllKeys(node, cs)) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if c.topologyKey == v1.LabelHostname || !nodeEligible(pod, required, c, node) {
				continue
			}
			value := node.Labels[c.topologyKey]
			if _, ok := s.counts[i][value]; !ok {
				continue // no feasible node in this domain
			}
			s.counts[i][value] += countMatching(ni.Pods, c.selector, pod.Namespace)
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score implements fw.ScorePlugin: per constraint whose key the node has,
// the matching pods in its domain times the constraint's weight, plus
// maxSkew - 1 (fewer is better; NormalizeScore inverts).
func (p *PodTopologySpread) Score(_ context.Context, state *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreKey, err))
	}
	s := d.(*preScoreState)
	node := nodeInfo.Node()
	if s.ignored[node.Name] {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		value, ok := node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var cnt int
		if c.topologyKey == v1.LabelHostname {
			cnt = countMatching(nodeInfo.Pods, c.selector, pod.Namespace)
		} else {
			cnt = s.counts[i][value]
		}
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements fw.ScorePlugin.
func (p *PodTopologySpread) ScoreExtensions() fw.ScoreExtensions { return p }

// NormalizeScore implements fw.ScoreExtensions: maps the lowest raw score to
// 100 and the highest to at least 0; ignored nodes get 0.
func (p *PodTopologySpread) NormalizeScore(_ context.Context, state *fw.CycleState, _ *v1.Pod, scores fw.NodeScoreList) *fw.Status {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return fw.AsStatus(err)
	}
	s := d.(*preScoreState)
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for i := range scores {
		if s.ignored[scores[i].Name] {
			continue
		}
		minScore = min(minScore, scores[i].Score)
		maxScore = max(maxScore, scores[i].Score)
	}
	for i := range scores {
		switch {
		case s.ignored[scores[i].Name]:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = fw.MaxNodeScore
		default:
			scores[i].Score = fw.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}
