package bench

import (
	"fmt"
	"io"
)

// WriteSchedulingTable prints scheduling results as a Markdown table
// (scheduler_perf's metric names).
func WriteSchedulingTable(w io.Writer, m Machine, results []SchedulingResult) {
	writeMachine(w, m)
	fmt.Fprintln(w, "| workload | scheduler | nodes | pods bound | SchedulingThroughput Average | Perc50 | Perc90 | Perc99 | attempt p50 | attempt p99 | CPU time | RSS (peak) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		t := r.SchedulingThroughput
		p50, p99 := "n/a", "n/a"
		if r.AttemptLatencyP99 > 0 {
			p50, p99 = ms(r.AttemptLatencyP50), ms(r.AttemptLatencyP99)
		}
		cpu, rss := "n/a", "n/a"
		if r.RSSBytes > 0 {
			cpu = fmt.Sprintf("%.1f s", r.CPUTime.Seconds())
			rss = fmt.Sprintf("%.0f MiB (%.0f)", float64(r.RSSBytes)/(1<<20), float64(r.PeakRSSBytes)/(1<<20))
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d/%d | %.0f pods/s | %.0f | %.0f | %.0f | %s | %s | %s | %s |\n",
			r.Workload, r.Scheduler, r.Nodes, r.Scheduled, r.Pods, t.Average, t.Perc50, t.Perc90, t.Perc99, p50, p99, cpu, rss)
	}
	for _, r := range results {
		if r.CPUScope != "" {
			fmt.Fprintf(w, "\n%s: CPU time and RSS are of the %s.", r.Workload, r.CPUScope)
		}
	}
	fmt.Fprintln(w)
}
