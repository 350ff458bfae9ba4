package scheduler

import (
	"context"
	"errors"
	"math/rand"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubeproof/kubeproof/impl/scheduler/cache"
	"github.com/kubeproof/kubeproof/impl/scheduler/extender"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// ErrNoNodesAvailable is returned when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Bounds of percentageOfNodesToScore's adaptive formula, as upstream.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	basePercentageOfNodesToScore     = 50
)

// ScheduleResult is the decision for one pod.
type ScheduleResult struct {
	SuggestedHost  string
	EvaluatedNodes int
	FeasibleNodes  int
}

// Algorithm is the scheduling decision: a pure function of the pod, the
// profile's plugins and the snapshot, except for two pieces of state kept
// across calls as upstream does — where in the node list the next search
// starts (so that percentageOfNodesToScore rotates over all nodes) and the
// seeded random source that breaks ties among equally scored nodes.
type Algorithm struct {
	percentageOfNodesToScore int32
	nextStartNodeIndex       int
	rng                      *rand.Rand
	// Per-call scratch space reused across calls (an Algorithm serves one
	// scheduling loop at a time).
	feasibleIdx []int32
	statuses    []*fw.Status
	// extenders are called after the plugins (filter, prioritize).
	extenders []*extender.HTTPExtender
}

// NewAlgorithm returns an Algorithm. percentage 0 selects the adaptive
// formula; seed makes tie-breaking reproducible.
func NewAlgorithm(percentage int32, seed int64) *Algorithm {
	return &Algorithm{percentageOfNodesToScore: percentage, rng: rand.New(rand.NewSource(seed))}
}

// NumFeasibleNodesToFind is how many feasible nodes the search stops at:
// all of them below 100 nodes; otherwise percentage% (adaptive: 50% minus
// one point per 125 nodes, at least 5%), but never fewer than 100.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	p := int(percentage)
	if p <= 0 {
		p = basePercentageOfNodesToScore - numAllNodes/125
		if p < minFeasibleNodesPercentageToFind {
			p = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * p / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// SchedulePod picks a node for pod, or returns a *fw.FitError explaining why
// none fits (or another error).
func (a *Algorithm) SchedulePod(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, pod *v1.Pod, snap *cache.Snapshot) (ScheduleResult, error) {
	if snap.NumNodes() == 0 {
		return ScheduleResult{}, ErrNoNodesAvailable
	}
	feasible, diagnosis, err := a.findNodesThatFitPod(ctx, fwk, state, pod, snap)
	if err != nil {
		return ScheduleResult{}, err
	}
	if feasible, err = a.findNodesThatPassExtenders(ctx, pod, feasible, diagnosis.NodeToStatus); err != nil {
		return ScheduleResult{}, err
	}
	evaluated := len(feasible) + len(diagnosis.NodeToStatus)
	if len(feasible) == 0 {
		return ScheduleResult{}, &fw.FitError{Pod: pod, NumAllNodes: snap.NumNodes(), Diagnosis: diagnosis}
	}
	if len(feasible) == 1 {
		return ScheduleResult{SuggestedHost: feasible[0].Name(), EvaluatedNodes: evaluated, FeasibleNodes: 1}, nil
	}
	scores, err := a.prioritizeNodes(ctx, fwk, state, pod, feasible)
	if err != nil {
		return ScheduleResult{}, err
	}
	return ScheduleResult{SuggestedHost: a.selectHost(feasible, scores), EvaluatedNodes: evaluated, FeasibleNodes: len(feasible)}, nil
}

func (a *Algorithm) findNodesThatFitPod(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, pod *v1.Pod, snap *cache.Snapshot) ([]*fw.NodeInfo, fw.Diagnosis, error) {
	diagnosis := fw.Diagnosis{NodeToStatus: fw.NodeToStatus{}, UnschedulablePlugins: sets.New[string]()}
	all, _ := snap.List()
	if s := fwk.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, diagnosis, s.AsError()
		}
		// A PreFilter rejection applies to every node.
		for _, ni := range all {
			diagnosis.NodeToStatus[ni.Name()] = s
		}
		diagnosis.PreFilterMsg = s.Message()
		if s.Plugin() != "" {
			diagnosis.UnschedulablePlugins.Insert(s.Plugin())
		}
		return nil, diagnosis, nil
	}
	// A pod nominated by an earlier preemption tries its node first.
	if nom := pod.Status.NominatedNodeName; nom != "" {
		if ni, err := snap.Get(nom); err == nil {
			s := fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if s.IsSuccess() {
				// The extenders must accept it too, else search them all.
				ok, err := a.findNodesThatPassExtenders(ctx, pod, []*fw.NodeInfo{ni}, fw.NodeToStatus{})
				if err != nil {
					return nil, diagnosis, err
				}
				if len(ok) == 1 {
					return ok, diagnosis, nil
				}
			}
			if !s.IsRejected() {
				return nil, diagnosis, s.AsError()
			}
		}
	}
	feasible, err := a.findNodesThatPassFilters(ctx, fwk, state, pod, &diagnosis, all)
	return feasible, diagnosis, err
}

// findNodesThatPassFilters runs the filters over the nodes in parallel,
// starting where the last search stopped, until enough feasible nodes are
// found.
func (a *Algorithm) findNodesThatPassFilters(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, pod *v1.Pod, diagnosis *fw.Diagnosis, nodes []*fw.NodeInfo) ([]*fw.NodeInfo, error) {
	numAll := len(nodes)
	percentage := a.percentageOfNodesToScore
	if p := fwk.PercentageOfNodesToScore(); p != nil {
		percentage = *p
	}
	toFind := NumFeasibleNodesToFind(percentage, numAll)
	start := a.nextStartNodeIndex % numAll
	if !fwk.HasFilterPlugins() {
		out := make([]*fw.NodeInfo, toFind)
		for i := range out {
			out[i] = nodes[(start+i)%numAll]
		}
		a.nextStartNodeIndex = (start + toFind) % numAll
		return out, nil
	}
	began := time.Now()
	checkCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cap(a.feasibleIdx) < numAll {
		a.feasibleIdx = make([]int32, numAll)
		a.statuses = make([]*fw.Status, numAll)
	}
	feasibleIdx := a.feasibleIdx[:numAll]
	statuses := a.statuses[:numAll]
	clear(statuses)
	defer clear(statuses) // do not keep statuses alive between cycles
	var found atomic.Int32
	var processed atomic.Int32
	fwk.Parallelizer().Until(checkCtx, numAll, func(i int) {
		idx := (start + i) % numAll
		s := fwk.RunFilterPluginsWithNominatedPods(checkCtx, state, pod, nodes[idx])
		processed.Add(1)
		if s.IsSuccess() {
			n := found.Add(1)
			if int(n) > toFind {
				found.Add(-1)
				return
			}
			feasibleIdx[n-1] = int32(i)
			if int(n) == toFind {
				cancel()
			}
			return
		}
		statuses[i] = s
	})
	fwk.ObserveExtensionPoint(fw.ExtensionFilter, began, nil)
	n := int(found.Load())
	ordered := feasibleIdx[:n]
	sort.Slice(ordered, func(x, y int) bool { return ordered[x] < ordered[y] })
	feasible := make([]*fw.NodeInfo, n)
	for j, i := range ordered {
		feasible[j] = nodes[(start+int(i))%numAll]
	}
	for i, s := range statuses {
		if s == nil {
			continue
		}
		if !s.IsRejected() {
			return nil, s.AsError()
		}
		diagnosis.NodeToStatus[nodes[(start+i)%numAll].Name()] = s
		if s.Plugin() != "" {
			diagnosis.UnschedulablePlugins.Insert(s.Plugin())
		}
	}
	a.nextStartNodeIndex = (start + int(processed.Load())) % numAll
	return feasible, nil
}

func (a *Algorithm) prioritizeNodes(ctx context.Context, fwk *fw.Framework, state *fw.CycleState, pod *v1.Pod, nodes []*fw.NodeInfo) ([]int64, error) {
	if !fwk.HasScorePlugins() {
		scores := make([]int64, len(nodes))
		a.addExtenderScores(ctx, pod, nodes, scores)
		return scores, nil
	}
	if s := fwk.RunPreScorePlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		return nil, s.AsError()
	}
	scores, s := fwk.RunScorePlugins(ctx, state, pod, nodes)
	if !s.IsSuccess() {
		return nil, s.AsError()
	}
	a.addExtenderScores(ctx, pod, nodes, scores)
	return scores, nil
}

// findNodesThatPassExtenders lets every interested extender filter the
// nodes the plugins found feasible, recording the nodes they turned away in
// statuses (an unresolvable failure wins over a plain one). An extender's
// error fails the attempt unless the extender is ignorable.
func (a *Algorithm) findNodesThatPassExtenders(ctx context.Context, pod *v1.Pod, feasible []*fw.NodeInfo, statuses fw.NodeToStatus) ([]*fw.NodeInfo, error) {
	for _, ext := range a.extenders {
		if len(feasible) == 0 {
			break
		}
		if !ext.IsFilter() || !ext.IsInterested(pod) {
			continue
		}
		nodes := make([]*v1.Node, len(feasible))
		infos := make(map[string]*fw.NodeInfo, len(feasible))
		for i, ni := range feasible {
			nodes[i] = ni.Node()
			infos[ni.Name()] = ni
		}
		kept, failed, unresolvable, err := ext.Filter(ctx, pod, nodes)
		if err != nil {
			if ext.IsIgnorable() {
				continue
			}
			return nil, err
		}
		for name, msg := range unresolvable {
			statuses[name] = fw.NewStatus(fw.UnschedulableAndUnresolvable, msg)
		}
		for name, msg := range failed {
			if _, ok := unresolvable[name]; !ok {
				statuses[name] = fw.NewStatus(fw.Unschedulable, msg)
			}
		}
		feasible = feasible[:0:0]
		for _, n := range kept {
			feasible = append(feasible, infos[n.Name])
		}
	}
	return feasible, nil
}

// addExtenderScores adds each interested extender's scores, scaled from
// 0–10 to 0–100 and multiplied by its weight. A prioritize error is ignored
// (the other scores decide), as in kube-scheduler.
func (a *Algorithm) addExtenderScores(ctx context.Context, pod *v1.Pod, nodes []*fw.NodeInfo, scores []int64) {
	var index map[string]int
	for _, ext := range a.extenders {
		if !ext.IsPrioritizer() || !ext.IsInterested(pod) {
			continue
		}
		if index == nil {
			index = make(map[string]int, len(nodes))
			for i, ni := range nodes {
				index[ni.Name()] = i
			}
		}
		list := make([]*v1.Node, len(nodes))
		for i, ni := range nodes {
			list[i] = ni.Node()
		}
		prios, weight, err := ext.Prioritize(ctx, pod, list)
		if err != nil {
			continue
		}
		for _, hp := range prios {
			if i, ok := index[hp.Host]; ok {
				scores[i] += hp.Score * weight * (fw.MaxNodeScore / extender.MaxExtenderPriority)
			}
		}
	}
}

// selectHost returns a node with the highest score; among ties each is
// equally likely (reservoir sampling with the seeded source).
func (a *Algorithm) selectHost(nodes []*fw.NodeInfo, scores []int64) string {
	best, count := 0, 1
	for i := 1; i < len(nodes); i++ {
		switch {
		case scores[i] > scores[best]:
			best, count = i, 1
		case scores[i] == scores[best]:
			count++
			if a.rng.Intn(count) == 0 {
				best = i
			}
		}
	}
	return nodes[best].Name()
}
