package checker

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubeproof/kubeproof/model"
)

// WriteViolation prints a counterexample: the property, then the trace
// action by action with the variables each step changed.
func WriteViolation(w io.Writer, m *model.Model, v *Violation) {
	p, _ := model.LookupProperty(v.Property)
	what := p.Text
	if v.Kind == "progress" {
		what = "the progress measure does not increase on this step: liveness inconclusive"
	}
	fmt.Fprintf(w, "%s violated (%s): %s\n", v.Property, v.Kind, what)
	if m.Mutant() != "" {
		fmt.Fprintf(w, "  (model run with mutant %s)\n", m.Mutant())
	}
	fmt.Fprintf(w, "Trace, %d steps:\n", len(v.Trace)-1)
	for i, st := range v.Trace {
		if i == 0 {
			fmt.Fprintf(w, "  0. Init\n")
			for _, l := range m.Summary(&st.State) {
				fmt.Fprintf(w, "       %s\n", l)
			}
			continue
		}
		fmt.Fprintf(w, "  %d. %s\n", i, st.Action)
		for _, l := range m.Diff(&v.Trace[i-1].State, &st.State) {
			fmt.Fprintf(w, "       %s\n", l)
		}
	}
	switch {
	case v.Kind == "liveness" && v.CycleLength > 0:
		fmt.Fprintf(w, "  ... and from here the system can run forever, fairly (every fair action is taken or disabled now and then),\n"+
			"      through a strongly connected set of %d states in which %s keeps becoming false.\n", v.CycleLength, p.Name)
	case v.Kind == "liveness":
		fmt.Fprintf(w, "  ... and then no fair action is enabled: the system stutters here forever with %s false.\n", p.Name)
	}
	if v.Kind == "liveness" && len(v.Trace) > 0 {
		last := v.Trace[len(v.Trace)-1].State
		if unmet := m.UnmetGoals(&last); len(unmet) > 1 {
			fmt.Fprintf(w, "  Goals unmet in the last state: %s.\n", strings.Join(unmet, ", "))
		}
	}
}

// FormatViolation is WriteViolation into a string.
func FormatViolation(m *model.Model, v *Violation) string {
	var b strings.Builder
	WriteViolation(&b, m, v)
	return b.String()
}

// WriteSummary prints the closing table of a run.
func WriteSummary(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "configuration\tsymmetry\tdistinct states\ttransitions\tdepth\tquiescent\ttime\tstates/min\tbytes/state\tresult")
	for _, r := range results {
		result := "ok"
		if r.Violation != nil {
			result = "VIOLATED " + r.Violation.Property
		}
		name := r.Config
		if r.Mutant != "" {
			name += " [" + r.Mutant + "]"
		}
		perMin := 0.0
		if r.Duration > 0 {
			perMin = float64(r.Distinct) / r.Duration.Minutes()
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%d\t%s\t%.0f\t%.1f\t%s\n", name, r.Symmetry, r.Distinct, r.Transitions, r.Depth,
			r.Quiescent, r.Duration.Round(10*time.Millisecond), perMin, r.BytesPerState, result)
	}
	tw.Flush()
}
