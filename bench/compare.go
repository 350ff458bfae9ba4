package bench

import (
	"fmt"
	"io"
	"math"
)

// Verdicts of a comparison.
const (
	VerdictRegression  = "REGRESSION"
	VerdictImprovement = "improvement"
	VerdictNoise       = "within noise"
	VerdictNew         = "no baseline"
)

// DefaultNoise is the relative change below which a difference is noise
// when the runs themselves do not show more (the anchors note 10–15% run
// to run on this class of machine).
const DefaultNoise = 0.15

// Comparison is one metric against its baseline.
type Comparison struct {
	Name           string
	Unit           string
	HigherIsBetter bool
	Baseline       Spread
	Current        Spread
	// Ratio is current median / baseline median.
	Ratio float64
	// Noise is the threshold used: the larger of the configured noise and
	// the relative range of either side's runs.
	Noise   float64
	Verdict string
}

// Compare compares every current metric with the baseline's metric of
// the same name by the ratio of medians. A change is a regression (or an
// improvement) only when it exceeds the noise: the larger of noise and
// either side's run-to-run relative range, and, with repeats on both
// sides, only when the ranges do not overlap.
func Compare(baseline, current []Metric, noise float64) []Comparison {
	base := map[string]Metric{}
	for _, m := range baseline {
		base[m.Name] = m
	}
	var out []Comparison
	for _, m := range current {
		c := Comparison{Name: m.Name, Unit: m.Unit, HigherIsBetter: m.HigherIsBetter, Current: m.Spread(), Verdict: VerdictNew}
		b, ok := base[m.Name]
		if !ok || len(b.Values) == 0 {
			out = append(out, c)
			continue
		}
		c.Baseline = b.Spread()
		c.Noise = math.Max(noise, math.Max(c.Baseline.RelativeRange(), c.Current.RelativeRange()))
		switch {
		case c.Baseline.Median == 0 && c.Current.Median == 0:
			c.Ratio = 1
		case c.Baseline.Median == 0:
			c.Ratio = math.Inf(1)
		default:
			c.Ratio = c.Current.Median / c.Baseline.Median
		}
		better := c.Ratio > 1
		if !m.HigherIsBetter {
			better = c.Ratio < 1
		}
		change := math.Abs(c.Ratio - 1)
		overlap := c.Baseline.N > 1 && c.Current.N > 1 && c.Current.Min <= c.Baseline.Max && c.Baseline.Min <= c.Current.Max
		switch {
		case change <= c.Noise || overlap:
			c.Verdict = VerdictNoise
		case better:
			c.Verdict = VerdictImprovement
		default:
			c.Verdict = VerdictRegression
		}
		out = append(out, c)
	}
	return out
}

// Regressions counts the comparisons whose verdict is a regression.
func Regressions(cs []Comparison) int {
	n := 0
	for _, c := range cs {
		if c.Verdict == VerdictRegression {
			n++
		}
	}
	return n
}

// WriteComparisonTable prints comparisons as a Markdown table: baseline
// and current median [min–max] (n runs), the ratio and the verdict.
func WriteComparisonTable(w io.Writer, cs []Comparison) {
	fmt.Fprintln(w, "| metric | unit | better | baseline median [min–max] (n) | current median [min–max] (n) | ratio | noise | verdict |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---|")
	for _, c := range cs {
		dir := "lower"
		if c.HigherIsBetter {
			dir = "higher"
		}
		base, ratio, noise := "—", "—", "—"
		if c.Verdict != VerdictNew {
			base, ratio, noise = spreadCell(c.Baseline), fmt.Sprintf("%.2f", c.Ratio), fmt.Sprintf("±%.0f%%", c.Noise*100)
		}
		verdict := c.Verdict
		if verdict == VerdictRegression {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Name, c.Unit, dir, base, spreadCell(c.Current), ratio, noise, verdict)
	}
}

// WriteSpreadTable prints each metric's median and range over repeats.
func WriteSpreadTable(w io.Writer, ms []Metric) {
	fmt.Fprintln(w, "| metric | unit | median | min | max | range | runs |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, m := range ms {
		s := m.Spread()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | ±%.0f%% | %d |\n", m.Name, m.Unit, num(s.Median), num(s.Min), num(s.Max), s.RelativeRange()*50, s.N)
	}
}

func spreadCell(s Spread) string {
	if s.N <= 1 {
		return fmt.Sprintf("%s (1)", num(s.Median))
	}
	return fmt.Sprintf("%s [%s–%s] (%d)", num(s.Median), num(s.Min), num(s.Max), s.N)
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// MachineWarnings says why results from baseline's machine and current's
// may not be comparable: different cores or CPU model, or either run
// started on a machine busier than its cores (1-minute load average), or
// their kernels' transparent huge page modes differ (memory results).
func MachineWarnings(baseline, current Machine) []string {
	var out []string
	if baseline.Cores != current.Cores || baseline.CPUModel != current.CPUModel {
		out = append(out, fmt.Sprintf("different machines: baseline %d cores %s, this run %d cores %s", baseline.Cores, baseline.CPUModel, current.Cores, current.CPUModel))
	}
	if b, c := baseline.TransparentHugePages, current.TransparentHugePages; b != "" && c != "" && b != c {
		out = append(out, fmt.Sprintf("transparent huge pages: baseline %s, this run %s: resident and anonymous memory are not comparable", b, c))
	}
	for _, m := range []struct {
		which string
		m     Machine
	}{{"baseline", baseline}, {"this run", current}} {
		var load float64
		if _, err := fmt.Sscan(m.m.LoadAverage, &load); err == nil && m.m.Cores > 0 && load > float64(m.m.Cores) {
			out = append(out, fmt.Sprintf("%s started at load average %s on %d cores: its numbers measure a busy machine", m.which, m.m.LoadAverage, m.m.Cores))
		}
	}
	return out
}
