package props

import (
	"fmt"
	"strings"

	"github.com/kubeproof/kubeproof/model"
	"github.com/kubeproof/kubeproof/model/checker"
)

// TraceValidator checks that the sequence of abstract states a run
// observes is a behaviour of the specification (issue 6, check 2): each
// observed model state must be reachable from the previous one in at most
// Depth model actions (checker.CanReach: breadth-first, stuttering
// allowed). The unobservable parts of each state (caches, expectations,
// budgets) are taken as after a fresh start (model.FromSnapshot), which
// lets the model explain any lag the implementation's components had.
//
// Observations are sampled, so several implementation steps may lie
// between two of them; a pair farther apart than Depth actions cannot be
// validated and is counted as Skipped rather than failed. Only a pair the
// search could not connect within Depth although the observed difference
// is small (at most SmallDiff variables of the model state change) is a
// failure. A step in which a live deployment's old ReplicaSet disappears
// (revisionHistoryLimit cleanup, not a model action) is skipped.
type TraceValidator struct {
	Model     *model.Model
	Depth     int
	SmallDiff int

	prev      model.State
	have      bool
	Validated int // pairs connected by a path of model actions
	Skipped   int // pairs too far apart to search
}

// Reset forgets the previous state (e.g. after an observation outside the
// model's bounds, or after faults the model does not describe).
func (v *TraceValidator) Reset() { v.have = false }

// Step validates the move from the previous observed state to s. It
// returns a description of the failure, or "" when the step is a
// behaviour of the model (or too large to search).
func (v *TraceValidator) Step(s model.State) string {
	prev, had := v.prev, v.have
	v.prev, v.have = s, true
	if !had {
		return ""
	}
	if historyCleanup(&prev, &s) {
		v.Skipped++
		return ""
	}
	if diff := v.diff(&prev, &s); diff > v.SmallDiff {
		v.Skipped++
		return ""
	}
	if _, ok := checker.CanReach(v.Model, prev, s, v.Depth); ok {
		v.Validated++
		return ""
	}
	removed, added := v.changes(&prev, &s)
	return fmt.Sprintf("no sequence of at most %d model actions leads from the previous observed state to this one; changed:\n    - %s\n    + %s",
		v.Depth, strings.Join(removed, "\n    - "), strings.Join(added, "\n    + "))
}

// diff counts the state variables (summary lines by name) whose observable
// value differs, a measure of how many things changed.
func (v *TraceValidator) diff(a, b *model.State) int {
	removed, added := v.changes(a, b)
	names := map[string]bool{}
	for _, l := range append(removed, added...) {
		name, _, _ := strings.Cut(l, " = ")
		names[name] = true
	}
	return len(names)
}

// changes returns the summary lines of a's observable part missing from
// b's, and those of b missing from a's.
func (v *TraceValidator) changes(a, b *model.State) (removed, added []string) {
	oa, ob := v.Model.Observable(a), v.Model.Observable(b)
	la, lb := v.Model.Summary(&oa), v.Model.Summary(&ob)
	seen := map[string]int{}
	for _, l := range la {
		seen[l]++
	}
	for _, l := range lb {
		if seen[l] > 0 {
			seen[l]--
		} else {
			added = append(added, l)
		}
	}
	for _, l := range la {
		if seen[l] > 0 {
			seen[l]--
			removed = append(removed, l)
		}
	}
	return removed, added
}

// historyCleanup reports whether a ReplicaSet of a live deployment went
// away between a and b: the deployment controller's revisionHistoryLimit
// cleanup, which the model does not describe (its old ReplicaSets stay at
// zero replicas).
func historyCleanup(a, b *model.State) bool {
	for d := 1; d <= model.MaxDeployments; d++ {
		for v := 1; v <= model.MaxVersions; v++ {
			if a.RSState[d][v] != model.Absent && b.RSState[d][v] == model.Absent && b.DepState[d] == model.Live {
				return true
			}
		}
	}
	return false
}
