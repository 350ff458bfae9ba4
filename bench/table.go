package bench

import (
	"fmt"
	"io"
	"time"
)

// WriteTable prints write results as a Markdown table.
func WriteTable(w io.Writer, m Machine, results []WriteResult) {
	writeOpsTable(w, m, "creates/s", results)
}

// writeOpsTable prints write-path results (creates or updates, by rateName)
// as a Markdown table.
func writeOpsTable(w io.Writer, m Machine, rateName string, results []WriteResult) {
	writeMachine(w, m)
	fmt.Fprintf(w, "| target | clients | ops | errors | %s | p50 | p99 | max | process CPU/op |\n", rateName)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.0f | %s | %s | %s | %s |\n", r.Target, r.Clients, r.Ops, r.Errors, r.Rate,
			ms(r.Latencies.P50), ms(r.Latencies.P99), ms(r.Latencies.Max), us(r.ProcessCPUPerOp))
	}
	for _, r := range results {
		if r.FirstError != "" {
			fmt.Fprintf(w, "\n%s at %d clients, first error: %s\n", r.Target, r.Clients, r.FirstError)
		}
	}
}

// us formats a per-operation CPU time; "—" when not measured.
func us(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// writeMachine prints the machine line above a table.
func writeMachine(w io.Writer, m Machine) {
	fmt.Fprintf(w, "Machine: %d cores, %s, %s, %s, commit %s", m.Cores, m.CPUModel, m.GoVersion, m.OS, m.Commit)
	if m.LoadAverage != "" {
		fmt.Fprintf(w, ", load average %s at the start", m.LoadAverage)
	}
	if m.Kernel != "" {
		fmt.Fprintf(w, ", Linux %s", m.Kernel)
	}
	if m.MemTotalMiB > 0 {
		fmt.Fprintf(w, ", %d MiB", m.MemTotalMiB)
	}
	if m.TransparentHugePages != "" {
		fmt.Fprintf(w, ", transparent huge pages %s", m.TransparentHugePages)
	}
	fmt.Fprint(w, "\n\n")
}
