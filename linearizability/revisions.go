package linearizability

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Violation is one broken guarantee.
type Violation struct {
	// Check names the guarantee (see the package documentation).
	Check string `json:"check"`
	// Op and Watch identify the operation or watch stream (-1 when not
	// about one; 0 is a valid ID, so both are set explicitly).
	Op      int    `json:"op"`
	Watch   int    `json:"watch"`
	Message string `json:"message"`
}

func (v Violation) String() string { return v.Check + ": " + v.Message }

func opViolation(check string, o *Op, format string, args ...any) Violation {
	return Violation{Check: check, Op: o.ID, Watch: -1, Message: fmt.Sprintf("op %d %s: ", o.ID, describeOp(o)) + fmt.Sprintf(format, args...)}
}

// revisionNode is an operation with a known range of revisions at which it
// must have taken effect: [Lo, Hi). Writes take effect at exactly their
// revision; a linearizable read observes the state after some revision.
type revisionNode struct {
	op     *Op
	lo, hi int64
	write  bool
	// bound is the lower bound after real-time propagation and why.
	bound int64
	cause *Op
}

type byReturn []*revisionNode

func (b byReturn) Len() int           { return len(b) }
func (b byReturn) Less(i, j int) bool { return b[i].op.Return < b[j].op.Return }
func (b byReturn) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }
func (b *byReturn) Push(x any)        { *b = append(*b, x.(*revisionNode)) }
func (b *byReturn) Pop() any {
	old := *b
	x := old[len(old)-1]
	*b = old[:len(old)-1]
	return x
}

// checkRevisionOrder checks the cross-key order of revisions: there is one
// revision per linearizable operation, inside its own range, such that an
// operation that returned before another was called has a lower revision
// (not higher, between two reads). Writes: create/update/patch that
// succeeded; reads: quorum gets and the quorum lists.
func checkRevisionOrder(h *History, t *timeline) []Violation {
	var nodes []*revisionNode
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Outcome != OK {
			continue
		}
		switch {
		case o.Kind == Create || o.Kind == Update || o.Kind == Patch:
			nodes = append(nodes, &revisionNode{op: o, lo: o.Object.RV, hi: o.Object.RV + 1, write: true})
		case o.Kind == Get && o.ResourceVersion == "":
			hi := int64(math.MaxInt64)
			if next := t.after(o.Key, o.Object.RV); next != nil {
				hi = next.RV
			}
			nodes = append(nodes, &revisionNode{op: o, lo: o.Object.RV, hi: hi})
		case o.Kind == List && o.ResourceVersion == "":
			nodes = append(nodes, &revisionNode{op: o, lo: o.ListRV, hi: o.ListRV + 1})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].op.Call < nodes[j].op.Call })
	var vs []Violation
	var done byReturn
	var max int64
	var maxCause *Op
	for _, n := range nodes {
		for len(done) > 0 && done[0].op.Return < n.op.Call {
			d := heap.Pop(&done).(*revisionNode)
			if d.bound > max {
				max, maxCause = d.bound, d.op
			}
		}
		need := max
		if n.write {
			need = max + 1
		}
		n.bound, n.cause = n.lo, nil
		if need > n.lo {
			n.bound, n.cause = need, maxCause
		}
		if n.bound >= n.hi {
			switch {
			case n.write:
				vs = append(vs, opViolation("revision-order", n.op, "wrote revision %d but op %d (%s), which finished before it started, implies a revision ≥ %d", n.lo, n.cause.ID, describeOp(n.cause), need))
			default:
				vs = append(vs, opViolation("stale-read", n.op, "observed a state older than revision %d (current only in [%d,%d)), which op %d (%s) finished before this read started", need, n.lo, n.hi, n.cause.ID, describeOp(n.cause)))
			}
			n.bound = n.lo // keep checking the rest against the recorded value
		}
		heap.Push(&done, n)
	}
	return vs
}

// checkReads checks every successful read that is not a quorum get
// against what Kubernetes promises for its resourceVersion semantics, and
// every list's content against the state at its resourceVersion.
func checkReads(h *History, t *timeline) []Violation {
	var vs []Violation
	for i := range h.Ops {
		o := &h.Ops[i]
		switch {
		case o.Kind == Get && o.Outcome == OK && o.ResourceVersion != "" && o.ResourceVersion != "0":
			// Not older than R: the version must still be current at some
			// revision ≥ R.
			r, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
			if next := t.after(o.Key, o.Object.RV); next != nil && next.RV <= r {
				vs = append(vs, opViolation("not-older-than", o, "returned rv %d, replaced at revision %d ≤ %d", o.Object.RV, next.RV, r))
			}
		case o.Kind == List && o.Outcome == OK:
			vs = append(vs, checkList(h, t, o)...)
		case o.Kind == List && o.Outcome == Expired && h.ExpiredExact:
			r, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
			if !compactedBefore(h, r, o.Return) {
				vs = append(vs, opViolation("expired", o, "410 Expired for revision %d, which was not compacted", r))
			}
		}
	}
	return vs
}

// compactedBefore says whether a compaction above rv started before time.
func compactedBefore(h *History, rv, time int64) bool {
	for _, c := range h.Compactions {
		if c.Call < time && rv < c.Revision {
			return true
		}
	}
	return false
}

// compactedSurely says whether a compaction above rv finished before time.
func compactedSurely(h *History, rv, time int64) bool {
	for _, c := range h.Compactions {
		if c.Return < time && rv < c.Revision {
			return true
		}
	}
	return false
}

// checkList checks one list: every page at one revision, its items the
// exact state of the key set at that revision, and its revision as its
// resourceVersion/resourceVersionMatch demand.
func checkList(h *History, t *timeline, o *Op) []Violation {
	var vs []Violation
	for _, rv := range o.PageRVs {
		if rv != o.ListRV {
			vs = append(vs, opViolation("paginated-snapshot", o, "pages at revisions %v, not all at %d", o.PageRVs, o.ListRV))
			break
		}
	}
	if o.ResourceVersion != "" && o.ResourceVersion != "0" {
		r, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
		switch o.Match {
		case "Exact":
			if o.ListRV != r {
				vs = append(vs, opViolation("exact", o, "list at revision %d asked Exact %d", o.ListRV, r))
			}
			if h.ExpiredExact && compactedSurely(h, r, o.Call) {
				vs = append(vs, opViolation("expired", o, "revision %d was compacted before the list started, yet it was served", r))
			}
		default:
			if o.ListRV < r {
				vs = append(vs, opViolation("not-older-than", o, "list at revision %d asked not older than %d", o.ListRV, r))
			}
		}
	}
	seen := map[string]bool{}
	for _, it := range o.Items {
		if seen[it.Key] {
			vs = append(vs, opViolation("list-snapshot", o, "%s listed twice", it.Key))
			continue
		}
		seen[it.Key] = true
		if it.RV > o.ListRV {
			vs = append(vs, opViolation("list-snapshot", o, "%s at rv %d is newer than the list's revision %d", it.Key, it.RV, o.ListRV))
			continue
		}
		if next := t.after(it.Key, it.RV); next != nil && next.RV <= o.ListRV {
			what := "replaced by " + next.Object.Value
			if next.Deleted {
				what = "deleted"
			}
			vs = append(vs, opViolation("list-snapshot", o, "%s=%s@%d was %s at revision %d ≤ %d", it.Key, it.Value, it.RV, what, next.RV, o.ListRV))
		}
	}
	for _, key := range h.Keys {
		if seen[key] {
			continue
		}
		if !t.mayBeAbsentAt(key, o.ListRV, o.Return) {
			c := t.at(key, o.ListRV)
			vs = append(vs, opViolation("list-snapshot", o, "%s missing, but %s@%d was current at revision %d and no delete can have removed it", key, c.Object.Value, c.RV, o.ListRV))
		}
	}
	return vs
}
