// Package defaultpreemption is the DefaultPreemption plugin (PostFilter).
// When a pod fits no node, it looks for the node where evicting the fewest,
// lowest-priority pods makes it fit: on every node where preemption might
// help, it removes all pods of lower priority, checks the pod fits, then
// gives pods back while it still fits — first those whose eviction would
// violate a PodDisruptionBudget, then the others, each group in order of
// importance; what could not be given back are the victims. The chosen node
// minimises, in order (Kubernetes' pickOneNodeForPreemption), the number of
// victims that violate a PodDisruptionBudget, the highest victim priority,
// the sum of victim priorities, the number of victims, and prefers the
// victims that started last.
//
// A PodDisruptionBudget only steers the choice: as in Kubernetes, a pod may
// still be preempted when every alternative violates a budget too.
//
// The result is data (fw.PostFilterResult: the nominated node and the
// victims); the scheduler loop deletes the victims and sets
// status.nominatedNodeName.
package defaultpreemption

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Name is the plugin's name.
const Name = "DefaultPreemption"

// Messages, in Kubernetes' words.
const (
	ErrReasonNotHelpful = "Preemption is not helpful for scheduling"
	ErrReasonNoVictims  = "No preemption victims found for incoming pod"
	MsgPolicyNever      = "not eligible due to preemptionPolicy=Never."
	MsgTerminatingPod   = "not eligible due to a terminating pod on the nominated node."
)

// DefaultPreemption is the plugin.
type DefaultPreemption struct {
	handle fw.Handle
}

// New is the plugin factory.
func New(raw json.RawMessage, h fw.Handle) (fw.Plugin, error) {
	var args struct {
		MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
		MinCandidateNodesAbsolute   *int32 `json:"minCandidateNodesAbsolute,omitempty"`
	}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding DefaultPreemptionArgs: %w", err)
	}
	return &DefaultPreemption{handle: h}, nil
}

// Name implements fw.Plugin.
func (*DefaultPreemption) Name() string { return Name }

// candidate is a node with the victims that would make room there.
type candidate struct {
	index   int
	node    string
	victims []*v1.Pod
	// numPDBViolations counts the victims whose eviction violates a
	// PodDisruptionBudget.
	numPDBViolations int
}

// PostFilter implements fw.PostFilterPlugin.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *fw.CycleState, pod *v1.Pod, statuses fw.NodeToStatus) (*fw.PostFilterResult, *fw.Status) {
	lister := pl.handle.SnapshotSharedLister().NodeInfos()
	if ok, msg := pl.eligible(pod, lister); !ok {
		return nil, fw.NewStatus(fw.Unschedulable, msg)
	}
	all, err := lister.List()
	if err != nil {
		return nil, fw.AsStatus(err)
	}
	pdbs, err := pl.handle.PodDisruptionBudgets()
	if err != nil {
		return nil, fw.AsStatus(fmt.Errorf("listing PodDisruptionBudgets: %w", err))
	}
	results := make(fw.NodeToStatus, len(all))
	var potential []*fw.NodeInfo
	for _, ni := range all {
		if s, ok := statuses[ni.Name()]; ok && s.Code() == fw.UnschedulableAndUnresolvable {
			results[ni.Name()] = fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonNotHelpful)
			continue
		}
		potential = append(potential, ni)
	}
	cands := make([]*candidate, len(potential))
	nodeStatus := make([]*fw.Status, len(potential))
	var errOnce sync.Once
	var firstErr error
	pl.handle.Parallelizer().Until(ctx, len(potential), func(i int) {
		victims, violations, s := pl.SelectVictimsOnNode(ctx, state.Clone(), pod, potential[i].Clone(), pdbs)
		switch {
		case s.IsSuccess() && len(victims) > 0:
			cands[i] = &candidate{index: i, node: potential[i].Name(), victims: victims, numPDBViolations: violations}
		case s.IsSuccess():
			nodeStatus[i] = fw.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", potential[i].Name()))
		default:
			nodeStatus[i] = s
		}
		if nodeStatus[i].Code() == fw.Error {
			errOnce.Do(func() { firstErr = nodeStatus[i].AsError() })
		}
	})
	if firstErr != nil {
		return nil, fw.AsStatus(firstErr)
	}
	var found []*candidate
	for i, c := range cands {
		if c != nil {
			found = append(found, c)
		} else {
			results[potential[i].Name()] = nodeStatus[i]
		}
	}
	if len(found) == 0 {
		fe := &fw.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: fw.Diagnosis{NodeToStatus: results}}
		return nil, fw.NewStatus(fw.Unschedulable, "preemption: "+fe.Error())
	}
	found, st := pl.callExtenders(ctx, pod, found)
	if !st.IsSuccess() {
		return nil, st
	}
	if len(found) == 0 {
		return nil, fw.NewStatus(fw.Unschedulable, "no candidate node for preemption")
	}
	best := pickOneNode(found)
	return &fw.PostFilterResult{NominatedNodeName: best.node, Victims: best.victims}, nil
}

// callExtenders lets each interested extender with a preempt verb narrow or
// change the candidates, as kube-scheduler does: the next extender sees the
// previous one's answer; an extender's error fails preemption unless it is
// ignorable; a node it returns without victims is an error (dropped for an
// ignorable extender). Candidates keep the order the plugin found them in;
// nodes the extenders add come after, by name.
func (pl *DefaultPreemption) callExtenders(ctx context.Context, pod *v1.Pod, cands []*candidate) ([]*candidate, *fw.Status) {
	exts := pl.handle.Extenders()
	if len(exts) == 0 || len(cands) == 0 {
		return cands, nil
	}
	victims := make(map[string]*fw.Victims, len(cands))
	order := make(map[string]int, len(cands))
	for _, c := range cands {
		victims[c.node] = &fw.Victims{Pods: c.victims, NumPDBViolations: int64(c.numPDBViolations)}
		order[c.node] = c.index
	}
	lister := pl.handle.SnapshotSharedLister().NodeInfos()
	for _, ext := range exts {
		if !ext.SupportsPreemption() || !ext.IsInterested(pod) {
			continue
		}
		got, err := ext.ProcessPreemption(ctx, pod, victims, lister)
		if err != nil {
			if ext.IsIgnorable() {
				continue
			}
			return nil, fw.AsStatus(err)
		}
		for node, v := range got {
			if v == nil || len(v.Pods) == 0 {
				if ext.IsIgnorable() {
					delete(got, node)
					continue
				}
				return nil, fw.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", node))
			}
		}
		victims = got
		if len(victims) == 0 {
			break
		}
	}
	out := make([]*candidate, 0, len(victims))
	for node, v := range victims {
		idx, ok := order[node]
		if !ok {
			idx = math.MaxInt
		}
		out = append(out, &candidate{index: idx, node: node, victims: v.Pods, numPDBViolations: int(v.NumPDBViolations)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].index != out[j].index {
			return out[i].index < out[j].index
		}
		return out[i].node < out[j].node
	})
	return out, nil
}

// eligible reports whether the pod may preempt: not with preemptionPolicy
// Never, and not while a lower-priority pod on its nominated node is still
// terminating (it is already making room).
func (pl *DefaultPreemption) eligible(pod *v1.Pod, lister fw.NodeInfoLister) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, MsgPolicyNever
	}
	if nom := pod.Status.NominatedNodeName; nom != "" {
		ni, err := lister.Get(nom)
		if err == nil {
			prio := corev1helpers.PodPriority(pod)
			for _, p := range ni.Pods {
				if p.Pod.DeletionTimestamp != nil && corev1helpers.PodPriority(p.Pod) < prio {
					return false, MsgTerminatingPod
				}
			}
		}
	}
	return true, ""
}

// moreImportant orders pods by priority, then earlier start.
func moreImportant(a, b *v1.Pod) bool {
	pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return startTime(a).Before(startTime(b))
}

func startTime(p *v1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// SelectVictimsOnNode returns the fewest lower-priority pods whose removal
// from nodeInfo (a copy it may change) lets pod pass every filter, and how
// many of them violate one of pdbs. Pods whose eviction would violate a
// budget are given back first, so they are victims only when nothing else
// makes room.
func (pl *DefaultPreemption) SelectVictimsOnNode(ctx context.Context, state *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod, int, *fw.Status) {
	prio := corev1helpers.PodPriority(pod)
	var potential []*fw.PodInfo
	for _, pi := range nodeInfo.Pods {
		if corev1helpers.PodPriority(pi.Pod) < prio {
			potential = append(potential, pi)
		}
	}
	if len(potential) == 0 {
		return nil, 0, fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonNoVictims)
	}
	for _, pi := range potential {
		if err := nodeInfo.RemovePod(pi.Pod); err != nil {
			return nil, 0, fw.AsStatus(err)
		}
		if s := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !s.IsSuccess() {
			return nil, 0, s
		}
	}
	if s := pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo); !s.IsSuccess() {
		return nil, 0, s
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportant(potential[i].Pod, potential[j].Pod) })
	violating, nonViolating := splitByPDBViolation(potential, pdbs)
	var victims []*v1.Pod
	// reprieve gives pi back to the node if the pod still fits, else makes
	// it a victim.
	reprieve := func(pi *fw.PodInfo) (victim bool, s *fw.Status) {
		nodeInfo.AddPodInfo(pi)
		if s := pl.handle.RunPreFilterExtensionAddPod(ctx, state, pod, pi, nodeInfo); !s.IsSuccess() {
			return false, s
		}
		if pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo).IsSuccess() {
			return false, nil
		}
		if err := nodeInfo.RemovePod(pi.Pod); err != nil {
			return false, fw.AsStatus(err)
		}
		if s := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !s.IsSuccess() {
			return false, s
		}
		victims = append(victims, pi.Pod)
		return true, nil
	}
	violations := 0
	for _, pi := range violating {
		victim, s := reprieve(pi)
		if !s.IsSuccess() {
			return nil, 0, s
		}
		if victim {
			violations++
		}
	}
	for _, pi := range nonViolating {
		if _, s := reprieve(pi); !s.IsSuccess() {
			return nil, 0, s
		}
	}
	return victims, violations, nil
}

// splitByPDBViolation walks pods (most important first) and charges each
// to the budgets that select it, as Kubernetes does: a pod whose eviction
// leaves some budget below zero disruptions allowed is violating. Budgets
// of another namespace, with an empty or invalid selector, or that already
// count the pod in status.disruptedPods are not charged.
func splitByPDBViolation(pods []*fw.PodInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*fw.PodInfo) {
	allowed := make([]int32, len(pdbs))
	selectors := make([]labels.Selector, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() {
			selectors[i] = sel
		}
	}
	for _, pi := range pods {
		pod := pi.Pod
		violates := false
		if len(pod.Labels) > 0 {
			for i, pdb := range pdbs {
				if pdb.Namespace != pod.Namespace || selectors[i] == nil || !selectors[i].Matches(labels.Set(pod.Labels)) {
					continue
				}
				if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, pi)
		} else {
			nonViolating = append(nonViolating, pi)
		}
	}
	return violating, nonViolating
}

// pickOneNode applies upstream's criteria in order; ties go to the node
// listed first.
func pickOneNode(cands []*candidate) *candidate {
	highest := func(c *candidate) int32 {
		h := int32(math.MinInt32)
		for _, v := range c.victims {
			h = max(h, corev1helpers.PodPriority(v))
		}
		return h
	}
	sum := func(c *candidate) int64 {
		var s int64
		for _, v := range c.victims {
			// Offset so that negative priorities still add up to more
			// with more victims.
			s += int64(corev1helpers.PodPriority(v)) + int64(math.MaxInt32) + 1
		}
		return s
	}
	earliestStartOfHighest := func(c *candidate) time.Time {
		h := highest(c)
		var t time.Time
		for _, v := range c.victims {
			if corev1helpers.PodPriority(v) == h && (t.IsZero() || startTime(v).Before(t)) {
				t = startTime(v)
			}
		}
		return t
	}
	better := func(a, b *candidate) bool {
		if a.numPDBViolations != b.numPDBViolations {
			return a.numPDBViolations < b.numPDBViolations
		}
		if ha, hb := highest(a), highest(b); ha != hb {
			return ha < hb
		}
		if sa, sb := sum(a), sum(b); sa != sb {
			return sa < sb
		}
		if len(a.victims) != len(b.victims) {
			return len(a.victims) < len(b.victims)
		}
		if ta, tb := earliestStartOfHighest(a), earliestStartOfHighest(b); !ta.Equal(tb) {
			return ta.After(tb)
		}
		return a.index < b.index
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if better(c, best) {
			best = c
		}
	}
	return best
}
