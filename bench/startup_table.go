package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteStartupTable prints startup results as a Markdown table, and for
// each result with a control run its memory beyond the API server's share
// (WriteUpMemoryTable).
func WriteStartupTable(w io.Writer, m Machine, results []StartupResult) {
	writeMachine(w, m)
	fmt.Fprintln(w, "| nodes | pods | arrival | Running | create→Running p50 | p99 | max | create→Ready p99 | create→bound p99 | heap/node | heap/pod | RSS/node | RSS/pod |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %d | %.0f/s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Nodes, r.Pods, r.Rate, r.Running, ms(r.CreateToRunning.P50), ms(r.CreateToRunning.P99), ms(r.CreateToRunning.Max),
			ms(r.CreateToReady.P99), ms(r.CreateToBound.P99), kib(r.HeapPerNode), kib(r.HeapPerPod), kib(r.RSSPerNode), kib(r.RSSPerPod))
	}
	fmt.Fprintln(w, "\nOne `kubeproof up` process (cluster.UpConfig: embedded etcd with fsync on, API server, controller manager, scheduler and the simulated nodes, their pods read through one shared watch). Memory per node/pod: growth of the live heap (after a forced GC) and of VmRSS of that process, divided by nodes (before the cluster starts → all nodes Ready) and by pods (→ all pods Running); it includes etcd, the API server's watch cache and every component's informers.")
	for _, r := range results {
		writeStages(w, r)
		if len(r.Throttled) > 0 {
			fmt.Fprintf(w, "\nThrottled by the API server (429, retried after 1 s): %s.\n", counts(r.Throttled, "%[1]s %[2]d"))
		}
		if len(r.ClosedWatchers) > 0 {
			fmt.Fprintf(w, "\nWatches the watch cache closed for falling behind its events: %s.\n", counts(r.ClosedWatchers, "%[1]s %[2]d"))
		}
		if len(r.CreateErrors) > 0 {
			fmt.Fprintf(w, "\nCreates answered with an error of unknown outcome, settled by reading the pod back: %s.\n", counts(r.CreateErrors, "%[1]s: %[2]d"))
		}
		if r.UpMemory != nil {
			fmt.Fprintln(w)
			WriteUpMemoryTable(w, *r.UpMemory)
		}
	}
}

// counts lists a map's entries by key, each formatted with format (%[1]s
// the key, %[2]d the count), joined by commas.
func counts(m map[string]int, format string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf(format, k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
