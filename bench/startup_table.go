package bench

import (
	"fmt"
	"io"
)

// WriteStartupTable prints startup results as a Markdown table.
func WriteStartupTable(w io.Writer, m Machine, results []StartupResult) {
	writeMachine(w, m)
	fmt.Fprintln(w, "| nodes | pods | arrival | Running | create→Running p50 | p99 | max | create→Ready p99 | create→bound p99 | heap/node | heap/pod | RSS/node | RSS/pod |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %d | %.0f/s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Nodes, r.Pods, r.Rate, r.Running, ms(r.CreateToRunning.P50), ms(r.CreateToRunning.P99), ms(r.CreateToRunning.Max),
			ms(r.CreateToReady.P99), ms(r.CreateToBound.P99), kib(r.HeapPerNode), kib(r.HeapPerPod), kib(r.RSSPerNode), kib(r.RSSPerPod))
	}
	fmt.Fprintln(w, "\nMemory per node/pod: growth of the live heap (after a forced GC) and of VmRSS of the one process running etcd, API server, controller manager, scheduler and all simulated kubelets, divided by nodes (before nodes → all nodes Ready) and by pods (→ all pods Running); it includes the API server's watch cache and every component's informers.")
}

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
