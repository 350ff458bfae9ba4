package checker

import (
	"github.com/kubeproof/kubeproof/model"
)

// Liveness under weak fairness.
//
// Every LIVE property has the form <>[]Goal. A behaviour violates it iff it
// is in a state where Goal is false infinitely often. On the finite graph of
// reachable states a fair behaviour either
//
//  1. ends stuttering forever in one state s. Weak fairness allows that only
//     if no fair action is enabled in s (s is quiescent); it violates
//     <>[]Goal iff Goal is false in s. The search checks every quiescent
//     state as it meets it.
//  2. or takes infinitely many non-stuttering steps, hence eventually stays
//     inside one strongly connected component C and visits all the states
//     and edges of some cycle in C infinitely often. The most permissive
//     such behaviour runs through every state and edge of C; for weak
//     fairness more states and edges only help (an action counts as
//     "taken" or as "not continuously enabled" more easily), so C holds a
//     fair violating behaviour iff: Goal is false somewhere in C, and every
//     fair action kind is taken on an edge inside C or disabled in some
//     state of C.
//
// Fairness is checked per action kind (WF on the disjunction of all
// instances of an action), which is weaker than the specification's
// per-instance fairness: a cycle reported here may be unfair for one
// particular instance, never the other way round, so a "holds" answer is
// sound and a reported cycle is a candidate to read. The component search is
// Tarjan's algorithm, iterative, over the transitions kept during the
// search (8 bytes each, then 5 in the adjacency arrays). Kinds carry no parameters, so the check is the same
// on the symmetry-reduced graph (a cycle there lifts to one in the full
// graph taking the same kinds).
func fairCycles(set *fpSet, edgeChunks [][]uint64, goals []model.Property, nEdges *int64) (*found, int) {
	n := set.size()
	// Compressed adjacency by source (counting sort; each chunk is released
	// once copied): dst[start[s]:start[s+1]] and kind[...] are s's edges.
	start := make([]uint32, n+1)
	for _, c := range edgeChunks {
		for _, e := range c {
			src, _, _ := unpackEdge(e)
			start[src+1]++
		}
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	total := start[n]
	*nEdges = int64(total)
	dsts := make([]uint32, total)
	kinds := make([]model.Kind, total)
	fill := make([]uint32, n)
	copy(fill, start[:n])
	// enabled[s]: fair kinds enabled in s (it has an edge of that kind).
	enabled := make([]uint64, n)
	for i, c := range edgeChunks {
		for _, e := range c {
			src, dst, k := unpackEdge(e)
			dsts[fill[src]], kinds[fill[src]] = dst, k
			fill[src]++
			if k.Fair() {
				enabled[src] |= 1 << k
			}
		}
		edgeChunks[i] = nil
	}
	fill = nil
	var fairKinds uint64
	for _, k := range model.Kinds() {
		if k.Fair() {
			fairKinds |= 1 << k
		}
	}

	const unvisited = ^uint32(0)
	index := make([]uint32, n)
	low := make([]uint32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var stack, callStack []uint32
	var edgePos []uint32
	next := uint32(0)
	sccs := 0
	var result *found

	inComp := make([]uint32, n) // component number + 1 of states being examined
	compNo := uint32(0)
	examine := func(comp []uint32) {
		// Only non-trivial components matter: more than one state, or a self-loop.
		if len(comp) == 1 {
			s := comp[0]
			self := false
			for _, dst := range dsts[start[s]:start[s+1]] {
				if dst == s {
					self = true
				}
			}
			if !self {
				return
			}
		}
		compNo++
		for _, s := range comp {
			inComp[s] = compNo
		}
		var taken uint64
		for _, s := range comp {
			for i := start[s]; i < start[s+1]; i++ {
				if inComp[dsts[i]] == compNo {
					taken |= 1 << kinds[i]
				}
			}
		}
		sccs++
		var disabledSomewhere uint64
		for _, s := range comp {
			disabledSomewhere |= fairKinds &^ enabled[s]
		}
		if fairKinds&^(taken|disabledSomewhere) != 0 {
			return // some fair action stays enabled and is never taken: unfair
		}
		for _, s := range comp {
			if g := set.goals(s); g != 0 && result == nil {
				for i, p := range goals {
					if g&(1<<i) != 0 {
						result = &found{kind: "liveness", id: p.ID, from: s, cycle: len(comp)}
						break
					}
				}
			}
		}
	}

	for root := 0; root < n && result == nil; root++ {
		if index[root] != unvisited {
			continue
		}
		callStack = append(callStack[:0], uint32(root))
		edgePos = append(edgePos[:0], start[root])
		index[root], low[root] = next, next
		next++
		stack = append(stack, uint32(root))
		onStack[root] = true
		for len(callStack) > 0 {
			v := callStack[len(callStack)-1]
			pos := edgePos[len(edgePos)-1]
			if pos < start[v+1] {
				edgePos[len(edgePos)-1]++
				w := dsts[pos]
				if index[w] == unvisited {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					callStack = append(callStack, w)
					edgePos = append(edgePos, start[w])
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			callStack = callStack[:len(callStack)-1]
			edgePos = edgePos[:len(edgePos)-1]
			if len(callStack) > 0 {
				u := callStack[len(callStack)-1]
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				var comp []uint32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				examine(comp)
			}
		}
	}
	return result, sccs
}
