package props

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeproof/kubeproof/model"
)

// TraceValidator checks that the sequence of abstract states a run
// observes is a behaviour of the specification (issue 6, check 2): each
// observed model state must be reachable from the previous one by a
// sequence of model actions (stuttering allowed). The unobservable parts of
// each state (caches, expectations, budgets) are taken as after a fresh
// start (model.FromSnapshot), which lets the model explain any lag the
// implementation's components had.
//
// Observations are sampled, so several implementation steps may lie
// between two of them. The search (explain: best-first, guided by the
// observable distance still to go, memo on states with canonical pod
// slots) looks for a path of at most MaxDepth actions visiting at most
// MaxStates states; a step it cannot explain is a failure, whether the
// search proved that no such path exists or ran out of budget (the report
// says which). A live deployment's old ReplicaSet that disappears
// (revisionHistoryLimit cleanup, not a model action) is validated as if it
// were still there with zero replicas.
type TraceValidator struct {
	Model     *model.Model
	MaxDepth  int // longest path of model actions searched per step
	MaxStates int // states the search may visit per step
	// FailDistance: a step the search neither explains nor proves
	// impossible within its budget is a failure when the observable
	// distance between the two states is at most this; a larger one is
	// counted in OverBudget (and saved) instead.
	FailDistance int

	prev      model.State
	have      bool
	pending   bool // a Reset dropped the previous state: the next step is not checked
	Validated int  // steps explained by a path of model actions (including stutters)
	Skipped   int  // steps not checked: the trace restarted across them (Reset)
	// OverBudget counts steps farther apart than FailDistance that the
	// search could not connect within its budget: not checked.
	OverBudget int
	// LastDistance is the observable distance of the last step.
	LastDistance int
	Longest      int // longest path found
	Explored     int // most states one search visited

	allowed []allowance // what the harness did since the previous state
	// earlier holds the last observed states whose deployments differ
	// (spec, lifecycle): the views the deployment controller may still
	// act on, which a snapshot cannot show (model.StaleDeploymentViews).
	earlier []model.State
	// LastAllowed is what the last validated step was allowed to
	// contain (saved with a failure).
	LastAllowed []allowance
}

// maxEarlier bounds the earlier deployment versions a stale view is taken
// from (the search starts from every combination).
const maxEarlier = 4

// remember keeps s as an earlier version of the deployments if they differ
// from the last one kept.
func (v *TraceValidator) remember(s model.State) {
	if n := len(v.earlier); n > 0 {
		same := true
		for d := 1; d <= model.MaxDeployments; d++ {
			same = same && model.DeploymentNow(&v.earlier[n-1], d) == model.DeploymentNow(&s, d)
		}
		if same {
			return
		}
	}
	v.earlier = append(v.earlier, s)
	if len(v.earlier) > maxEarlier {
		v.earlier = v.earlier[1:]
	}
}

// maxAllowances bounds the harness's operations between two validated
// states; beyond it the trace restarts.
const maxAllowances = 8

func (v *TraceValidator) allow(a allowance) {
	if len(v.allowed) >= maxAllowances {
		v.Reset()
		return
	}
	v.allowed = append(v.allowed, a)
}

// UserDeletedPod tells the validator that the user deleted a pod of
// deployment d's ReplicaSet of version ver (numbers of the abstraction)
// after the previous observed state: the next step may include it.
func (v *TraceValidator) UserDeletedPod(d, ver int) { v.allow(allowance{Delete: podGroup{d, ver}}) }

// UserTouched tells the validator that the user changed deployment d in a
// way the abstraction does not show (pause, resume): its generation moved.
func (v *TraceValidator) UserTouched(d int) { v.allow(allowance{Touch: d}) }

// UserDid tells the validator that the harness did the model action of a
// user-only kind (CreateDeployment, ScaleDeployment, UpdateDeployment,
// DeleteDeployment, NodeFail, NodeRecover, ...) with these arguments: the
// next step may include it. No other user-only action is ever taken.
func (v *TraceValidator) UserDid(k model.Kind, args ...int) {
	v.allow(allowance{Action: userAction(k, args...)})
}

// Reset forgets the previous state: the next observed step is not checked
// (a user operation the model does not have, or an observation outside its
// bounds, lies between the two states). Each such step counts as Skipped.
func (v *TraceValidator) Reset() {
	if v.have {
		v.pending = true
	}
	v.have = false
	v.allowed = nil
}

// Step validates the move from the previous observed state to s. It
// returns a description of the failure, or "" when the step is a
// behaviour of the model.
func (v *TraceValidator) Step(s model.State) string {
	prev, had := v.prev, v.have
	v.prev, v.have = s, true
	allowed := v.allowed
	v.allowed = nil
	v.LastAllowed = allowed
	if !had {
		if v.pending {
			v.Skipped++
			v.pending = false
		}
		return ""
	}
	target := historyCleanedUp(&prev, s)
	// The deployment controller may still be acting on an earlier
	// version of a deployment (its informer lags): the search starts from
	// the previous state with every view earlier observations had.
	e := explain(v.Model, v.Model.StaleDeploymentViews(prev, v.earlier), target, v.MaxDepth, v.MaxStates, allowed)
	v.remember(prev)
	v.Explored = max(v.Explored, e.Explored)
	if e.Found {
		v.Validated++
		v.Longest = max(v.Longest, len(e.Path))
		return ""
	}
	fromObs, toObs := v.Model.Observable(&prev), v.Model.Observable(&target)
	v.LastDistance = observableDistance(v.Model, &fromObs, &toObs)
	if !e.Complete && v.LastDistance > v.FailDistance {
		v.OverBudget++
		return ""
	}
	how := fmt.Sprintf("no sequence of at most %d model actions exists (all %d states within that depth searched)", v.MaxDepth, e.Explored)
	if !e.Complete {
		how = fmt.Sprintf("none found within the search budget (%d states, paths of at most %d actions)", e.Explored, v.MaxDepth)
	}
	removed, added := v.changes(&prev, &s)
	return fmt.Sprintf("no sequence of model actions leads from the previous observed state to this one: %s; changed:\n    - %s\n    + %s",
		how, strings.Join(removed, "\n    - "), strings.Join(added, "\n    + "))
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

// historyCleanedUp returns b with every ReplicaSet of a live deployment
// that was in a and is gone in b put back, with zero replicas and owning
// its remaining pods: the deployment controller's revisionHistoryLimit
// cleanup deletes such ReplicaSets, which the model does not describe (its
// old ReplicaSets stay at zero replicas).
func historyCleanedUp(a *model.State, b model.State) model.State {
	for d := 1; d <= model.MaxDeployments; d++ {
		for v := 1; v <= model.MaxVersions; v++ {
			if a.RSState[d][v] == model.Absent || b.RSState[d][v] != model.Absent || b.DepState[d] != model.Live {
				continue
			}
			b.RSState[d][v], b.RSReplicas[d][v] = model.Live, 0
			for k := 1; k <= model.MaxPodsPerRS; k++ {
				if p := model.Pod(d, v, k); b.PodState[p] != model.Absent {
					b.PodOwners[p] |= 1 << v
				}
			}
		}
	}
	return b
}

// TraceStep is one observed step kept for replay: two snapshots and
// whether the model must explain the move from the first to the second
// (testdata/trace-steps/*.json, replayed by TestTraceSteps).
type TraceStep struct {
	// Note says where the step comes from and why it is kept.
	Note      string         `json:"note"`
	Explained bool           `json:"explained"`
	From      model.Snapshot `json:"from"`
	To        model.Snapshot `json:"to"`
	// Allowed are the operations the harness did between the two.
	Allowed []allowance `json:"allowed,omitempty"`
	// Earlier are observed states before From whose deployments differ
	// from its: views the deployment controller may still act on.
	Earlier []model.Snapshot `json:"earlier,omitempty"`
}

// SaveTraceStep writes a step trace validation rejected to a fresh file
// under the temporary directory and returns its name.
func SaveTraceStep(from, to model.Snapshot, allowed []allowance, earlier []model.Snapshot) (string, error) {
	dir := filepath.Join(os.TempDir(), "kubeproof-props-trace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "step-*.json")
	if err != nil {
		return "", err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	err = enc.Encode(TraceStep{Note: "rejected by trace validation", From: from, To: to, Allowed: allowed, Earlier: earlier})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}
