// Package interpodaffinity is the InterPodAffinity plugin. Filter enforces
// required pod affinity and anti-affinity of the incoming pod, and the
// required anti-affinity of pods already running (symmetry); Score adds the
// weights of preferred terms, in both directions, per topology domain.
//
// Terms with a namespaceSelector match pods in the namespaces whose labels
// (from the framework's namespace lookup) it selects.
package interpodaffinity

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "InterPodAffinity"

// Reasons, in Kubernetes' words.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

const (
	preFilterKey fw.StateKey = "PreFilter" + Name
	preScoreKey  fw.StateKey = "PreScore" + Name
)

// Args are InterPodAffinityArgs.
type Args struct {
	HardPodAffinityWeight              *int32 `json:"hardPodAffinityWeight,omitempty"`
	IgnorePreferredTermsOfExistingPods bool   `json:"ignorePreferredTermsOfExistingPods,omitempty"`
}

// InterPodAffinity is the plugin.
type InterPodAffinity struct {
	handle                  fw.Handle
	hardPodAffinityWeight   int32
	ignorePreferredOfOthers bool
}

// New is the plugin factory.
func New(raw json.RawMessage, h fw.Handle) (fw.Plugin, error) {
	args := Args{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding InterPodAffinityArgs: %w", err)
	}
	p := &InterPodAffinity{handle: h, hardPodAffinityWeight: 1, ignorePreferredOfOthers: args.IgnorePreferredTermsOfExistingPods}
	if w := args.HardPodAffinityWeight; w != nil {
		if *w < 0 || *w > 100 {
			return nil, fmt.Errorf("hardPodAffinityWeight: %d not in valid range [0-100]", *w)
		}
		p.hardPodAffinityWeight = *w
	}
	return p, nil
}

// Name implements fw.Plugin.
func (*InterPodAffinity) Name() string { return Name }

// EventsToRegister implements fw.EnqueueExtensions.
func (*InterPodAffinity) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{
		{Resource: fw.AssignedPod, ActionType: fw.All},
		{Resource: fw.Node, ActionType: fw.Add | fw.UpdateNodeLabel},
	}
}

type topologyPair struct{ key, value string }

type topologyToMatchedTermCount map[topologyPair]int64

type nsLabelsFunc = func(string) labels.Set

func (m topologyToMatchedTermCount) clone() topologyToMatchedTermCount {
	c := make(topologyToMatchedTermCount, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// add counts, for every term that matches pod, the domain of node.
func (m topologyToMatchedTermCount) add(terms []fw.AffinityTerm, pod *v1.Pod, node *v1.Node, delta int64, ns nsLabelsFunc) {
	for i := range terms {
		t := &terms[i]
		v, ok := node.Labels[t.TopologyKey]
		if !ok || !t.Matches(pod, ns) {
			continue
		}
		pair := topologyPair{t.TopologyKey, v}
		m[pair] += delta
		if m[pair] == 0 {
			delete(m, pair)
		}
	}
}

// addAll counts a pod only if it matches every term (affinity terms are ANDed).
func (m topologyToMatchedTermCount) addAll(terms []fw.AffinityTerm, pod *v1.Pod, node *v1.Node, delta int64, ns nsLabelsFunc) {
	for i := range terms {
		if !terms[i].Matches(pod, ns) {
			return
		}
	}
	for i := range terms {
		v, ok := node.Labels[terms[i].TopologyKey]
		if !ok {
			continue
		}
		pair := topologyPair{terms[i].TopologyKey, v}
		m[pair] += delta
		if m[pair] == 0 {
			delete(m, pair)
		}
	}
}

type preFilterState struct {
	podInfo *fw.PodInfo
	// existingAntiAffinityCounts: domains where a running pod's required
	// anti-affinity term matches the incoming pod.
	existingAntiAffinityCounts topologyToMatchedTermCount
	// affinityCounts / antiAffinityCounts: domains with running pods that
	// match the incoming pod's required (anti-)affinity terms.
	affinityCounts     topologyToMatchedTermCount
	antiAffinityCounts topologyToMatchedTermCount
	nsLabels           nsLabelsFunc
}

func (s *preFilterState) Clone() fw.StateData {
	return &preFilterState{
		podInfo:                    s.podInfo,
		existingAntiAffinityCounts: s.existingAntiAffinityCounts.clone(),
		affinityCounts:             s.affinityCounts.clone(),
		antiAffinityCounts:         s.antiAffinityCounts.clone(),
		nsLabels:                   s.nsLabels,
	}
}

func (s *preFilterState) updateWithPod(existing *fw.PodInfo, node *v1.Node, delta int64) {
	if node == nil {
		return
	}
	s.existingAntiAffinityCounts.add(existing.RequiredAntiAffinityTerms, s.podInfo.Pod, node, delta, s.nsLabels)
	s.affinityCounts.addAll(s.podInfo.RequiredAffinityTerms, existing.Pod, node, delta, s.nsLabels)
	s.antiAffinityCounts.add(s.podInfo.RequiredAntiAffinityTerms, existing.Pod, node, delta, s.nsLabels)
}

// PreFilter implements fw.PreFilterPlugin.
func (p *InterPodAffinity) PreFilter(_ context.Context, state *fw.CycleState, pod *v1.Pod) *fw.Status {
	pi := fw.NewPodInfo(pod)
	if pi.ParseError != nil {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod affinity: %v", pi.ParseError))
	}
	lister := p.handle.SnapshotSharedLister().NodeInfos()
	withAnti, err := lister.HavePodsWithRequiredAntiAffinityList()
	if err != nil {
		return fw.AsStatus(err)
	}
	hasOwn := len(pi.RequiredAffinityTerms) > 0 || len(pi.RequiredAntiAffinityTerms) > 0
	if len(withAnti) == 0 && !hasOwn {
		return fw.NewStatus(fw.Skip)
	}
	s := &preFilterState{
		podInfo:                    pi,
		existingAntiAffinityCounts: topologyToMatchedTermCount{},
		affinityCounts:             topologyToMatchedTermCount{},
		antiAffinityCounts:         topologyToMatchedTermCount{},
		nsLabels:                   p.handle.NamespaceLabels,
	}
	for _, ni := range withAnti {
		if ni.Node() == nil {
			continue
		}
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			s.existingAntiAffinityCounts.add(existing.RequiredAntiAffinityTerms, pod, ni.Node(), 1, s.nsLabels)
		}
	}
	if hasOwn {
		all, err := lister.List()
		if err != nil {
			return fw.AsStatus(err)
		}
		for _, ni := range all {
			for _, existing := range ni.Pods {
				s.affinityCounts.addAll(pi.RequiredAffinityTerms, existing.Pod, ni.Node(), 1, s.nsLabels)
				s.antiAffinityCounts.add(pi.RequiredAntiAffinityTerms, existing.Pod, ni.Node(), 1, s.nsLabels)
			}
		}
	}
	state.Write(preFilterKey, s)
	return nil
}

// PreFilterExtensions implements fw.PreFilterPlugin.
func (p *InterPodAffinity) PreFilterExtensions() fw.PreFilterExtensions { return p }

// AddPod implements fw.PreFilterExtensions.
func (p *InterPodAffinity) AddPod(_ context.Context, state *fw.CycleState, _ *v1.Pod, add *fw.PodInfo, ni *fw.NodeInfo) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(err)
	}
	d.(*preFilterState).updateWithPod(add, ni.Node(), 1)
	return nil
}

// RemovePod implements fw.PreFilterExtensions.
func (p *InterPodAffinity) RemovePod(_ context.Context, state *fw.CycleState, _ *v1.Pod, rm *fw.PodInfo, ni *fw.NodeInfo) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(err)
	}
	d.(*preFilterState).updateWithPod(rm, ni.Node(), -1)
	return nil
}

// Filter implements fw.FilterPlugin.
func (p *InterPodAffinity) Filter(_ context.Context, state *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preFilterKey, err))
	}
	s := d.(*preFilterState)
	node := nodeInfo.Node()
	// Existing pods' anti-affinity: no running pod in any of this node's
	// domains may reject the incoming pod.
	if len(s.existingAntiAffinityCounts) > 0 {
		for k, v := range node.Labels {
			if s.existingAntiAffinityCounts[topologyPair{k, v}] > 0 {
				return fw.NewStatus(fw.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
			}
		}
	}
	// The pod's own anti-affinity.
	for i := range s.podInfo.RequiredAntiAffinityTerms {
		t := &s.podInfo.RequiredAntiAffinityTerms[i]
		if v, ok := node.Labels[t.TopologyKey]; ok && s.antiAffinityCounts[topologyPair{t.TopologyKey, v}] > 0 {
			return fw.NewStatus(fw.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	// The pod's own affinity: every term needs a matching pod in the
	// node's domain — except for the first pod of a group that matches
	// its own terms when no pod matches anywhere.
	if terms := s.podInfo.RequiredAffinityTerms; len(terms) > 0 {
		satisfied := true
		for i := range terms {
			v, ok := node.Labels[terms[i].TopologyKey]
			if !ok || s.affinityCounts[topologyPair{terms[i].TopologyKey, v}] <= 0 {
				satisfied = false
				break
			}
		}
		if !satisfied {
			if len(s.affinityCounts) > 0 || !matchesAllOwnTerms(s.podInfo, s.nsLabels) || !hasAllKeys(node, terms) {
				return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
			}
		}
	}
	return nil
}

func matchesAllOwnTerms(pi *fw.PodInfo, ns nsLabelsFunc) bool {
	for i := range pi.RequiredAffinityTerms {
		if !pi.RequiredAffinityTerms[i].Matches(pi.Pod, ns) {
			return false
		}
	}
	return true
}

func hasAllKeys(node *v1.Node, terms []fw.AffinityTerm) bool {
	for i := range terms {
		if _, ok := node.Labels[terms[i].TopologyKey]; !ok {
			return false
		}
	}
	return true
}

type scoreMap map[string]map[string]int64

type preScoreState struct {
	topologyScore scoreMap
}

func (s *preScoreState) Clone() fw.StateData { return s }

func (m scoreMap) add(terms []fw.WeightedAffinityTerm, pod *v1.Pod, node *v1.Node, sign int64, ns nsLabelsFunc) {
	for i := range terms {
		t := &terms[i]
		v, ok := node.Labels[t.TopologyKey]
		if !ok || !t.Matches(pod, ns) {
			continue
		}
		if m[t.TopologyKey] == nil {
			m[t.TopologyKey] = map[string]int64{}
		}
		m[t.TopologyKey][v] += int64(t.Weight) * sign
	}
}

// PreScore implements fw.PreScorePlugin.
func (p *InterPodAffinity) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, _ []*fw.NodeInfo) *fw.Status {
	pi := fw.NewPodInfo(pod)
	lister := p.handle.SnapshotSharedLister().NodeInfos()
	hasOwn := len(pi.PreferredAffinityTerms) > 0 || len(pi.PreferredAntiAffinityTerms) > 0
	var nodes []*fw.NodeInfo
	var err error
	if hasOwn {
		nodes, err = lister.List()
	} else {
		nodes, err = lister.HavePodsWithAffinityList()
	}
	if err != nil {
		return fw.AsStatus(err)
	}
	if len(nodes) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	m := scoreMap{}
	ns := p.handle.NamespaceLabels
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		pods := ni.PodsWithAffinity
		if hasOwn {
			pods = ni.Pods
		}
		for _, existing := range pods {
			m.add(pi.PreferredAffinityTerms, existing.Pod, node, 1, ns)
			m.add(pi.PreferredAntiAffinityTerms, existing.Pod, node, -1, ns)
			if p.hardPodAffinityWeight > 0 {
				for _, t := range existing.RequiredAffinityTerms {
					m.add([]fw.WeightedAffinityTerm{{AffinityTerm: t, Weight: p.hardPodAffinityWeight}}, pod, node, 1, ns)
				}
			}
			if !p.ignorePreferredOfOthers {
				m.add(existing.PreferredAffinityTerms, pod, node, 1, ns)
				m.add(existing.PreferredAntiAffinityTerms, pod, node, -1, ns)
			}
		}
	}
	if len(m) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	state.Write(preScoreKey, &preScoreState{topologyScore: m})
	return nil
}

// Score implements fw.ScorePlugin: the sum over the node's labels of the
// domain's accumulated weight.
func (p *InterPodAffinity) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreKey, err))
	}
	var score int64
	for key, byValue := range d.(*preScoreState).topologyScore {
		if v, ok := nodeInfo.Node().Labels[key]; ok {
			score += byValue[v]
		}
	}
	return score, nil
}

// ScoreExtensions implements fw.ScorePlugin.
func (p *InterPodAffinity) ScoreExtensions() fw.ScoreExtensions { return p }

// NormalizeScore implements fw.ScoreExtensions: min-max scaling to [0, 100].
func (p *InterPodAffinity) NormalizeScore(_ context.Context, _ *fw.CycleState, _ *v1.Pod, scores fw.NodeScoreList) *fw.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi > lo {
			scores[i].Score = fw.MaxNodeScore * (scores[i].Score - lo) / (hi - lo)
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}
