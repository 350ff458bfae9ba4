package linearizability

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is the verdict on one history.
type Result struct {
	// Linearizable is porcupine's verdict on the per-key histories
	// (porcupine.Ok, Illegal or Unknown when it timed out).
	Linearizable porcupine.CheckResult `json:"linearizable"`
	// Violations are the broken guarantees found by the revision, read,
	// list and watch checks (and one entry if porcupine said Illegal).
	Violations []Violation `json:"violations"`
	// CheckTime is how long checking took.
	CheckTime time.Duration `json:"checkTime"`
	// PerKeyOps is how many operations the per-key search had, Pending
	// how many of them were ambiguous writes left unresolved (they never
	// return; see ambiguous.go), and MaxPendingPerKey the most on one key.
	PerKeyOps        int `json:"perKeyOps"`
	Pending          int `json:"pending"`
	MaxPendingPerKey int `json:"maxPendingPerKey"`

	info porcupine.LinearizationInfo
}

// OK says whether every check passed.
func (r *Result) OK() bool {
	return r.Linearizable == porcupine.Ok && len(r.Violations) == 0
}

// CheckOptions tune checking.
type CheckOptions struct {
	// PorcupineTimeout bounds the per-key linearizability search (0: one
	// minute); on timeout the result is Unknown, never Ok.
	PorcupineTimeout time.Duration
}

// Check checks a recorded history: the per-key porcupine model, the
// cross-key revision order, every read against its resourceVersion
// semantics, every list's snapshot, and every watch stream.
func Check(h *History, opts CheckOptions) *Result {
	begin := time.Now()
	if opts.PorcupineTimeout == 0 {
		opts.PorcupineTimeout = time.Minute
	}
	res := &Result{}
	t, vs := buildTimeline(h)
	ops := porcupineHistory(h, t)
	res.PerKeyOps = len(ops)
	pending := map[string]int{}
	for _, o := range ops {
		if o.Return == math.MaxInt64 {
			res.Pending++
			k := o.Input.(*Op).Key
			pending[k]++
			res.MaxPendingPerKey = max(res.MaxPendingPerKey, pending[k])
		}
	}
	res.Linearizable, res.info = porcupine.CheckOperationsVerbose(keyModel, ops, opts.PorcupineTimeout)
	switch res.Linearizable {
	case porcupine.Illegal:
		res.Violations = append(res.Violations, Violation{Check: "linearizable", Op: -1, Watch: -1, Message: "the per-key histories are not linearizable (see history.html)"})
	case porcupine.Unknown:
		res.Violations = append(res.Violations, Violation{Check: "linearizable", Op: -1, Watch: -1, Message: fmt.Sprintf("porcupine found no verdict within %s (%d operations in the per-key search, %d ambiguous writes pending, at most %d on one key)", opts.PorcupineTimeout, res.PerKeyOps, res.Pending, res.MaxPendingPerKey)})
	}
	res.Violations = append(res.Violations, vs...)
	res.Violations = append(res.Violations, checkRevisionOrder(h, t)...)
	res.Violations = append(res.Violations, checkReads(h, t)...)
	res.Violations = append(res.Violations, checkWatches(h, t)...)
	res.CheckTime = time.Since(begin)
	return res
}

// Summary is the one-line summary of a scenario.
func Summary(h *History, r *Result) string {
	verdict := "PASS"
	if !r.OK() {
		verdict = fmt.Sprintf("FAIL (%d violations, porcupine %s)", len(r.Violations), r.Linearizable)
	}
	events := 0
	for _, w := range h.Watches {
		events += len(w.Events)
	}
	return fmt.Sprintf("scenario %s: clients=%d operations=%d watches=%d events=%d duration=%s result=%s check=%s per-key=%d pending=%d (max %d on one key)",
		h.Scenario, h.Clients, len(h.Ops), len(h.Watches), events, time.Duration(h.Duration).Round(time.Millisecond), verdict, r.CheckTime.Round(time.Millisecond),
		r.PerKeyOps, r.Pending, r.MaxPendingPerKey)
}
