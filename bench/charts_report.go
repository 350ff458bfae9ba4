package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// NamedChart is a chart with the file name (no extension) it is written
// under.
type NamedChart struct {
	File  string
	Chart interface{ SVG() string } // LineChart or BarChart
}

// Charts draws the report: scheduling throughput over time per 1 s window
// (one chart per workload, one line per run), the startup latency CDF
// (one line per run) and write throughput against clients (one line per
// target, the median over runs).
func (r Report) Charts() []NamedChart {
	var out []NamedChart
	var workloads []string
	runs := map[string][]SchedulingResult{}
	for _, s := range r.Scheduling {
		if _, ok := runs[s.Workload]; !ok {
			workloads = append(workloads, s.Workload)
		}
		runs[s.Workload] = append(runs[s.Workload], s)
	}
	for _, w := range workloads {
		c := LineChart{Title: w + ": SchedulingThroughput over time", XLabel: "second of the measured span", YLabel: "pods bound per 1 s window", YMin0: true}
		for i, s := range runs[w] {
			ser := Series{Name: fmt.Sprintf("run %d (avg %.0f/s)", i+1, s.SchedulingThroughput.Average)}
			for j, v := range s.SchedulingThroughput.Windows {
				ser.Points = append(ser.Points, Point{X: float64(j + 1), Y: v})
			}
			c.Series = append(c.Series, ser)
		}
		out = append(out, NamedChart{File: "throughput-" + slug(w), Chart: c})
	}
	if len(r.Startup) > 0 {
		c := LineChart{Title: "Pod startup latency CDF (create → Running)", XLabel: "latency (ms)", YLabel: "percent of pods", YMin0: true}
		for i, s := range r.Startup {
			ser := Series{Name: fmt.Sprintf("run %d: %d nodes, %.0f pods/s", i+1, s.Nodes, s.Rate)}
			for p, d := range s.RunningCDF {
				ser.Points = append(ser.Points, Point{X: msOf(d), Y: float64(p)})
			}
			c.Series = append(c.Series, ser)
		}
		out = append(out, NamedChart{File: "startup-cdf", Chart: c})
	}
	out = append(out, writesCharts(r.Writes)...)
	out = append(out, watchFanoutCharts(r.WatchFanout)...)
	out = append(out, checkersCharts(r.Checkers)...)
	return out
}

// slug makes a workload name a file name.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// WriteHTML writes a self-contained HTML report: the machine, each
// metric's median and range over runs, the comparison with a baseline
// (if any), per-run summaries and the charts as inline SVG.
func WriteHTML(w io.Writer, r Report, comparisons []Comparison) error {
	m := r.Machine
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kubeproof bench</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}.REGRESSION{background:#fdd;font-weight:bold}.improvement{background:#dfd}</style></head><body>\n")
	fmt.Fprintf(w, "<h1>kubeproof bench</h1>\n<p>Machine: %d cores, %s, %s, %s, commit %s", m.Cores, esc(m.CPUModel), esc(m.GoVersion), esc(m.OS), esc(m.Commit))
	if m.LoadAverage != "" {
		fmt.Fprintf(w, "; load average %s at the start", esc(m.LoadAverage))
	}
	if r.Repeat > 1 {
		fmt.Fprintf(w, "; %d runs of each workload", r.Repeat)
	}
	fmt.Fprintln(w, "</p>")
	if len(comparisons) > 0 {
		fmt.Fprintf(w, "<h2>Against the baseline: %d regression(s)</h2>\n", Regressions(comparisons))
		for _, warning := range r.BaselineWarnings {
			fmt.Fprintf(w, "<p><b>Warning:</b> %s.</p>\n", esc(warning))
		}
		rows := [][]string{}
		for _, c := range comparisons {
			base, ratio := "—", "—"
			if c.Verdict != VerdictNew {
				base, ratio = spreadCell(c.Baseline), fmt.Sprintf("%.2f (±%.0f%% noise)", c.Ratio, c.Noise*100)
			}
			rows = append(rows, []string{c.Name, c.Unit, base, spreadCell(c.Current), ratio, c.Verdict})
		}
		htmlTable(w, []string{"metric", "unit", "baseline median [min–max] (n)", "current", "ratio", "verdict"}, rows, 5)
	}
	fmt.Fprintln(w, "<h2>Metrics: median and range over runs</h2>")
	var rows [][]string
	for _, mt := range r.Metrics() {
		s := mt.Spread()
		rows = append(rows, []string{mt.Name, mt.Unit, num(s.Median), num(s.Min), num(s.Max), fmt.Sprint(s.N)})
	}
	htmlTable(w, []string{"metric", "unit", "median", "min", "max", "runs"}, rows, -1)
	if len(r.Scheduling) > 0 {
		fmt.Fprintln(w, "<h2>Scheduling runs</h2>")
		rows = nil
		for _, s := range r.Scheduling {
			t := s.SchedulingThroughput
			rows = append(rows, []string{s.Workload, s.Scheduler, fmt.Sprint(s.Nodes), fmt.Sprintf("%d/%d", s.Scheduled, s.Pods),
				num(t.Average), num(t.Perc50), num(t.Perc90), num(t.Perc99), ms(s.AttemptLatencyP99), fmt.Sprintf("%.1f s", s.CPUTime.Seconds()),
				fmt.Sprintf("%.0f MiB", float64(s.RSSBytes)/(1<<20)), s.Elapsed.Round(time.Millisecond).String()})
		}
		htmlTable(w, []string{"workload", "scheduler", "nodes", "bound", "Average pods/s", "Perc50", "Perc90", "Perc99", "attempt p99", "CPU", "RSS", "elapsed"}, rows, -1)
	}
	if len(r.Startup) > 0 {
		fmt.Fprintln(w, "<h2>Startup runs</h2>")
		rows = nil
		for _, s := range r.Startup {
			rows = append(rows, []string{fmt.Sprint(s.Nodes), fmt.Sprint(s.Pods), fmt.Sprintf("%.0f/s", s.Rate), fmt.Sprint(s.Running),
				ms(s.CreateToRunning.P50), ms(s.CreateToRunning.P99), ms(s.CreateToRunning.Max), ms(s.CreateToReady.P99)})
		}
		htmlTable(w, []string{"nodes", "pods", "arrival", "Running", "create→Running p50", "p99", "max", "create→Ready p99"}, rows, -1)
	}
	if len(r.Writes) > 0 {
		fmt.Fprintln(w, "<h2>Write runs</h2>")
		rows = nil
		for _, x := range r.Writes {
			op := "create"
			if x.Op != "" {
				op = x.Op
			}
			rows = append(rows, []string{x.Target, op, fmt.Sprint(x.Clients), fmt.Sprint(x.Ops), fmt.Sprint(x.Errors), num(x.Rate), ms(x.Latencies.P50), ms(x.Latencies.P99)})
		}
		htmlTable(w, []string{"target", "op", "clients", "ops", "errors", "ops/s", "p50", "p99"}, rows, -1)
	}
	writeWatchFanoutHTML(w, r.WatchFanout)
	if len(r.APIServerMemory) > 0 {
		fmt.Fprintln(w, "<h2>API server memory runs</h2>")
		rows = nil
		for _, x := range r.APIServerMemory {
			rows = append(rows, []string{fmt.Sprint(x.Pods), fmt.Sprintf("%.0f MiB", float64(x.RSSBytes)/(1<<20)), fmt.Sprintf("%.0f MiB", float64(x.PeakRSSBytes)/(1<<20)), x.CreateTime.Round(time.Millisecond).String()})
		}
		htmlTable(w, []string{"pods", "RSS", "peak RSS", "create time"}, rows, -1)
	}
	writeCheckersHTML(w, r.Checkers)
	charts := r.Charts()
	if len(charts) > 0 {
		fmt.Fprintln(w, "<h2>Charts</h2>")
	}
	for _, c := range charts {
		fmt.Fprintf(w, "<div id=\"%s\">\n%s</div>\n", esc(c.File), c.Chart.SVG())
	}
	_, err := fmt.Fprintln(w, "</body></html>")
	return err
}

// htmlTable writes a table; the cell of column classCol (if >= 0) is also
// the row's CSS class (the verdict).
func htmlTable(w io.Writer, head []string, rows [][]string, classCol int) {
	fmt.Fprint(w, "<table><tr>")
	for _, h := range head {
		fmt.Fprintf(w, "<th>%s</th>", esc(h))
	}
	fmt.Fprintln(w, "</tr>")
	for _, row := range rows {
		class := ""
		if classCol >= 0 && classCol < len(row) {
			class = fmt.Sprintf(" class=%q", strings.ReplaceAll(row[classCol], " ", "-"))
		}
		fmt.Fprintf(w, "<tr%s>", class)
		for _, c := range row {
			fmt.Fprintf(w, "<td>%s</td>", esc(c))
		}
		fmt.Fprintln(w, "</tr>")
	}
	fmt.Fprintln(w, "</table>")
}

// WriteResults writes a results directory: results.json (the report),
// results.md (the Markdown tables), report.html (WriteHTML) and one SVG
// per chart under charts/.
func WriteResults(dir string, r Report, md []byte, comparisons []Comparison) error {
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), md, 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	for _, c := range r.Charts() {
		if err := os.WriteFile(filepath.Join(dir, "charts", c.File+".svg"), []byte(c.Chart.SVG()), 0o644); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if err := WriteHTML(f, r, comparisons); err != nil {
		f.Close()
		return fmt.Errorf("writing results: %w", err)
	}
	return f.Close()
}
