package props

import (
	"container/heap"

	"github.com/kubeproof/kubeproof/model"
)

// explanation is the outcome of one search for a path of model actions
// between two observed states.
type explanation struct {
	Path     []model.Action // the actions, first to last (empty: the states agree)
	Found    bool
	Explored int  // distinct states expanded or generated
	Complete bool // not found and every state within MaxDepth was searched: no path of that length exists
}

// podGroup names the pods of one ReplicaSet: deployment D, template
// version V.
type podGroup struct{ D, V int }

// userOnly are the model actions of the environment that only the harness
// performs (user operations on deployments, node failures, node joins and
// deletions): the search takes one only as an allowance for this step
// says the harness did it.
var userOnly = map[model.Kind]bool{
	model.CreateDeployment: true, model.UpdateDeployment: true, model.ScaleDeployment: true, model.DeleteDeployment: true,
	model.NodeFail: true, model.NodeRecover: true, model.NodeJoin: true, model.NodeDelete: true, model.NodeReturn: true,
}

// allowance is one thing the harness did between two observed states, which
// the path between them may contain once: a model action of userOnly's
// kinds (Action), the deletion of a live pod of a ReplicaSet (Delete: not
// a model action), or a change of deployment Touch that the abstraction does
// not show but that bumps its generation (pause, resume: its new generation
// is not observed yet).
type allowance struct {
	Action model.Action
	Delete podGroup
	Touch  int
}

// userAction is the model action of the given user-only kind and arguments.
func userAction(k model.Kind, args ...int) model.Action {
	a := model.Action{Kind: k, NArg: int8(len(args))}
	for i, x := range args {
		a.Args[i] = int8(x)
	}
	return a
}

// explain searches for a sequence of at most maxDepth model actions that
// leads from one of froms (the same observed state with the values its
// hidden component memory may have; the first is the fresh-start one) to a
// state observably equal to `to`
// (model.Observable, stuttering allowed), visiting at most maxStates
// distinct states. allowed are what the harness did between the two
// states: each may be taken once, at any point of the path; no other
// user-only action (userOnly) is. A pod deletion is taken by one live pod
// of its ReplicaSet (pods of one ReplicaSet are interchangeable in the
// abstraction); the state after a deletion or a touch is taken as after a
// fresh start of the components (model.Observable), as every observed
// state is.
//
// The search is best-first (weighted A*): states are ordered by the
// actions taken so far plus twice the observable distance still to go
// (observableDistance: differing store and runtime fields, pods of one
// ReplicaSet matched at least cost). Any path it returns is a real model
// behaviour; the heuristic only decides which states are tried first, so
// with a large enough budget the search is complete up to maxDepth. States
// are kept with their pod slots in canonical order (pods of one ReplicaSet
// are interchangeable, as Observable treats them), which is what makes the
// memo small.
func explain(m *model.Model, froms []model.State, to model.State, maxDepth, maxStates int, allowed []allowance) explanation {
	target := m.Observable(&to)
	if o := m.Observable(&froms[0]); o == target {
		return explanation{Found: true, Explored: 1}
	}
	type node struct {
		parent int32
		action model.Action
		depth  int16
		cost   int32
	}
	// A search state is a model state and the allowances taken on the way
	// to it (bit i: allowed[i]).
	type key struct {
		s    model.State
		used uint8
	}
	var nodes []node
	seen := map[key]int32{}
	var states []model.State
	var used []uint8
	q := &searchQueue{}
	for _, from := range froms {
		start := m.CanonicalSlots(&from)
		if _, ok := seen[key{start, 0}]; ok {
			continue
		}
		j := int32(len(states))
		seen[key{start, 0}] = j
		states = append(states, start)
		used = append(used, 0)
		nodes = append(nodes, node{parent: -1})
		o := m.Observable(&start)
		heap.Push(q, searchItem{f: heuristicWeight * observableDistance(m, &o, &target), idx: j})
	}
	budgetHit := false
	for q.Len() > 0 {
		it := heap.Pop(q).(searchItem)
		i := it.idx
		s := states[i]
		depth, cost := nodes[i].depth, nodes[i].cost
		if int(depth) >= maxDepth {
			continue
		}
		found := int32(-1)
		u := used[i]
		visit := func(a model.Action, t *model.State, u uint8) {
			c1 := cost + actionCost(a)
			if found >= 0 || budgetHit {
				return
			}
			c := m.CanonicalSlots(t)
			if j, ok := seen[key{c, u}]; ok {
				if nodes[j].depth > depth+1 || nodes[j].cost > c1 {
					// reached by a shorter or cheaper path: search on
					// from here again
					nodes[j] = node{parent: i, action: a, depth: min(nodes[j].depth, depth+1), cost: min(nodes[j].cost, c1)}
					o := m.Observable(&c)
					heap.Push(q, searchItem{f: int(c1) + heuristicWeight*observableDistance(m, &o, &target), idx: j})
				}
				return
			}
			if len(states) >= maxStates {
				budgetHit = true
				return
			}
			j := int32(len(states))
			seen[key{c, u}] = j
			states = append(states, c)
			used = append(used, u)
			nodes = append(nodes, node{parent: i, action: a, depth: depth + 1, cost: c1})
			o := m.Observable(&c)
			if o == target {
				found = j
				return
			}
			heap.Push(q, searchItem{f: int(c1) + heuristicWeight*observableDistance(m, &o, &target), idx: j})
		}
		m.Successors(&s, func(a model.Action, t *model.State) {
			if !userOnly[a.Kind] {
				visit(a, t, u)
				return
			}
			for bit, al := range allowed {
				if u&(1<<bit) == 0 && al.Action == a {
					visit(a, t, u|1<<bit)
					return
				}
			}
		})
		for bit, al := range allowed {
			if u&(1<<bit) != 0 || al.Action.Kind != 0 {
				continue
			}
			if d := al.Touch; d != 0 {
				if s.DepState[d] == model.Live {
					t := s
					t.DepObserved[d] = false
					t = m.Observable(&t)
					visit(model.Action{}, &t, u|1<<bit)
				}
				continue
			}
			for k := 1; k <= model.MaxPodsPerRS; k++ {
				if p := model.Pod(al.Delete.D, al.Delete.V, k); s.PodState[p] == model.Live {
					t := s
					t.PodState[p] = model.Deleting
					t = m.Observable(&t)
					visit(model.Action{}, &t, u|1<<bit)
				}
			}
		}
		if found >= 0 {
			var path []model.Action
			for j := found; nodes[j].parent >= 0; j = nodes[j].parent {
				path = append(path, nodes[j].action)
			}
			for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
				path[l], path[r] = path[r], path[l]
			}
			return explanation{Path: path, Found: true, Explored: len(states)}
		}
		if budgetHit {
			return explanation{Explored: len(states)}
		}
	}
	return explanation{Explored: len(states), Complete: true}
}

// heuristicWeight weighs the observable distance still to go against the
// cost of the path so far: above 1 the search is greedier (it may return a
// longer path than the shortest, which is still a model behaviour).
const heuristicWeight = 2

// faultCost is the cost of a fault action (a crash, a dropped watch, a
// relist, a failed probe) against 1 for most
// others and 0 for a lagging view catching up: faults can explain a step
// but rarely have to, and each one opens many interleavings, so paths
// without them are tried first, while views catching up are taken as
// needed.
const faultCost = 4

// evictionCost is the cost of a node-pressure eviction (KubeletEvictPod),
// which the harness never causes: since it stops the pod's sandbox in the
// step that writes Failed (KUBELET-8) it settles up to three observable
// fields of a pod that is to go (Ready, sandbox, IP), which at faultCost
// the heuristic took for progress — a dead end, as nothing in the model
// removes a Failed pod but a user. Above twice those fields it never is.
const evictionCost = 8

func actionCost(a model.Action) int32 {
	switch a.Kind {
	case model.KubeletEvictPod:
		return evictionCost
	case model.ControllerCrash, model.ControllerRestart, model.KubeletCrash, model.KubeletRestart,
		model.WatchDrop, model.Relist, model.KubeletProbeFail:
		return faultCost
	case model.KubeletObservePod, model.DeploymentObserveReplicaSet, model.DeploymentObserveDeployment,
		model.NodeLifecycleObserveNode, model.GCObservePod, model.DeliverWatchEvent:
		// A component's view catching up changes nothing observable;
		// it only enables what the component does next.
		return 0
	}
	return 1
}

// observableDistance estimates how many model actions separate two
// observable states: one per differing deployment, ReplicaSet and node
// field, plus, per ReplicaSet, the differing pod fields of the cheapest
// matching of its pods (slots are interchangeable). It is a guide for the
// search, not a bound.
func observableDistance(m *model.Model, a, b *model.State) int {
	n := 0
	for d := 1; d <= model.MaxDeployments; d++ {
		n += count(a.DepState[d] != b.DepState[d]) + count(a.DepReplicas[d] != b.DepReplicas[d]) +
			count(a.DepVersion[d] != b.DepVersion[d]) + count(a.DepObserved[d] != b.DepObserved[d])
		for v := 1; v <= model.MaxVersions; v++ {
			n += count(a.RSState[d][v] != b.RSState[d][v]) + count(a.RSReplicas[d][v] != b.RSReplicas[d][v])
			n += podMatchCost(a, b, model.Pod(d, v, 1))
		}
	}
	for x := 1; x <= model.MaxNodes; x++ {
		n += count(a.NodeTainted[x] != b.NodeTainted[x]) + count(a.NodeState[x] != b.NodeState[x]) +
			count(a.KubeletUp[x] != b.KubeletUp[x]) + count(a.NodeUp[x] != b.NodeUp[x])
	}
	return n
}

func count(differs bool) int {
	if differs {
		return 1
	}
	return 0
}

// podFieldsDiffer counts the observable fields in which pod p of a and pod
// q of b differ.
func podFieldsDiffer(a, b *model.State, p, q int) int {
	return count(a.PodState[p] != b.PodState[q]) + count(a.PodNode[p] != b.PodNode[q]) +
		count(a.PodPhase[p] != b.PodPhase[q]) + count(a.PodOwners[p] != b.PodOwners[q]) +
		count(a.PodReady[p] != b.PodReady[q]) +
		count(a.Sandboxes[p] != b.Sandboxes[q] || a.SandboxNode[p] != b.SandboxNode[q]) +
		count(a.SandboxIP[p] != b.SandboxIP[q])
}

// slotPerms are the permutations of a ReplicaSet's pod slots.
var slotPerms = permutations(model.MaxPodsPerRS)

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// podMatchCost is the least total of podFieldsDiffer over the matchings of
// the pods of one ReplicaSet (slots from base) of a to those of b.
func podMatchCost(a, b *model.State, base int) int {
	var cost [model.MaxPodsPerRS][model.MaxPodsPerRS]int
	any := false
	for i := 0; i < model.MaxPodsPerRS; i++ {
		for j := 0; j < model.MaxPodsPerRS; j++ {
			cost[i][j] = podFieldsDiffer(a, b, base+i, base+j)
			any = any || cost[i][j] > 0
		}
	}
	if !any {
		return 0
	}
	best := -1
	for _, p := range slotPerms {
		c := 0
		for i, j := range p {
			c += cost[i][j]
		}
		if best < 0 || c < best {
			best = c
		}
	}
	return best
}

type searchItem struct {
	f   int
	idx int32
}

// searchQueue is a min-heap of states by f, first in first out among
// equal f (by index), so that the search is deterministic.
type searchQueue []searchItem

func (q searchQueue) Len() int { return len(q) }
func (q searchQueue) Less(i, j int) bool {
	if q[i].f != q[j].f {
		return q[i].f < q[j].f
	}
	return q[i].idx < q[j].idx
}
func (q searchQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *searchQueue) Push(x any)   { *q = append(*q, x.(searchItem)) }
func (q *searchQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}
