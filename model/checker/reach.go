package checker

import (
	"github.com/kubeproof/kubeproof/model"
)

// CanReach answers the trace-validation query of the implementation's
// property tests: can the model go from state from to a state observably
// equal to to (model.SameObservable) in at most k steps? Stuttering is
// allowed (zero steps when from already matches). It returns a shortest
// such path (its first step is from itself).
//
// The search is breadth-first over full model states without symmetry
// reduction, so node numbers keep their meaning. Faults and user operations
// are limited by the model's configuration budgets, counted from from.
func CanReach(m *model.Model, from, to model.State, k int) ([]Step, bool) {
	return CanReachAny(m, []model.State{from}, to, k)
}

// CanReachAny is CanReach from any of several start states (e.g. one
// observed state with the different values its hidden component memory
// may have, model.StaleDeploymentViews): a shortest path from whichever
// start reaches to first. The path's first step is that start.
func CanReachAny(m *model.Model, froms []model.State, to model.State, k int) ([]Step, bool) {
	target := m.Observable(&to)
	matches := func(s *model.State) bool { return m.Observable(s) == target }
	type node struct {
		s      model.State
		parent int
		a      model.Action
	}
	seen := map[model.State]bool{}
	var nodes []node
	var level []int
	for _, from := range froms {
		if matches(&from) {
			return []Step{{State: from}}, true
		}
		if !seen[from] {
			seen[from] = true
			nodes = append(nodes, node{s: from, parent: -1})
			level = append(level, len(nodes)-1)
		}
	}
	for depth := 0; depth < k && len(level) > 0; depth++ {
		var next []int
		for _, i := range level {
			s := nodes[i].s
			found := -1
			m.Successors(&s, func(a model.Action, t *model.State) {
				if found >= 0 || seen[*t] {
					return
				}
				seen[*t] = true
				nodes = append(nodes, node{s: *t, parent: i, a: a})
				j := len(nodes) - 1
				if matches(t) {
					found = j
				}
				next = append(next, j)
			})
			if found >= 0 {
				var path []Step
				for j := found; j >= 0; j = nodes[j].parent {
					path = append([]Step{{Action: nodes[j].a, State: nodes[j].s}}, path...)
				}
				return path, true
			}
		}
		level = next
	}
	return nil, false
}
