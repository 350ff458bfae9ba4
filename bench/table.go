package bench

import (
	"fmt"
	"io"
	"time"
)

// WriteTable prints write results as a Markdown table.
func WriteTable(w io.Writer, m Machine, results []WriteResult) {
	fmt.Fprintf(w, "Machine: %d cores, %s, %s, %s, commit %s\n\n", m.Cores, m.CPUModel, m.GoVersion, m.OS, m.Commit)
	fmt.Fprintln(w, "| target | clients | ops | errors | creates/s | p50 | p99 | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.0f | %s | %s | %s |\n", r.Target, r.Clients, r.Ops, r.Errors, r.Rate,
			ms(r.Latencies.P50), ms(r.Latencies.P99), ms(r.Latencies.Max))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
