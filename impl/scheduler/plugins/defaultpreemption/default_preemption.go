// Package defaultpreemption is the DefaultPreemption plugin (PostFilter).
// When a pod fits no node, it looks for the node where evicting the fewest,
// lowest-priority pods makes it fit: on every node where preemption might
// help, it removes all pods of lower priority, checks the pod fits, then
// gives pods back in order of importance while it still fits; what could not
// be given back are the victims. The chosen node minimises, in order, the
// highest victim priority, the sum of victim priorities, the number of
// victims, and prefers the victims that started last.
//
// The result is data (fw.PostFilterResult: the nominated node and the
// victims); the scheduler loop deletes the victims and sets
// status.nominatedNodeName. PodDisruptionBudgets are not consulted.
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
		victims, s := pl.SelectVictimsOnNode(ctx, state.Clone(), pod, potential[i].Clone())
		switch {
		case s.IsSuccess() && len(victims) > 0:
			cands[i] = &candidate{index: i, node: potential[i].Name(), victims: victims}
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
	best := pickOneNode(found)
	return &fw.PostFilterResult{NominatedNodeName: best.node, Victims: best.victims}, nil
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
// from nodeInfo (a copy it may change) lets pod pass every filter.
func (pl *DefaultPreemption) SelectVictimsOnNode(ctx context.Context, state *fw.CycleState, pod *v1.Pod, nodeInfo *fw.NodeInfo) ([]*v1.Pod, *fw.Status) {
	prio := corev1helpers.PodPriority(pod)
	var potential []*fw.PodInfo
	for _, pi := range nodeInfo.Pods {
		if corev1helpers.PodPriority(pi.Pod) < prio {
			potential = append(potential, pi)
		}
	}
	if len(potential) == 0 {
		return nil, fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonNoVictims)
	}
	for _, pi := range potential {
		if err := nodeInfo.RemovePod(pi.Pod); err != nil {
			return nil, fw.AsStatus(err)
		}
		if s := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !s.IsSuccess() {
			return nil, s
		}
	}
	if s := pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo); !s.IsSuccess() {
		return nil, s
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportant(potential[i].Pod, potential[j].Pod) })
	var victims []*v1.Pod
	for _, pi := range potential {
		nodeInfo.AddPodInfo(pi)
		if s := pl.handle.RunPreFilterExtensionAddPod(ctx, state, pod, pi, nodeInfo); !s.IsSuccess() {
			return nil, s
		}
		if pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo).IsSuccess() {
			continue // reprieved
		}
		if err := nodeInfo.RemovePod(pi.Pod); err != nil {
			return nil, fw.AsStatus(err)
		}
		if s := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !s.IsSuccess() {
			return nil, s
		}
		victims = append(victims, pi.Pod)
	}
	return victims, nil
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
