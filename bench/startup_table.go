package bench

import (
	"fmt"
	"io"
	"time"
)

// WriteStartupTable prints startup results as a Markdown table.
func WriteStartupTable(w io.Writer, m Machine, results []StartupResult) {
	writeMachine(w, m)
	fmt.Fprintln(w, "| nodes | pods | arrival | Running | create→Running p50 | p99 | max | create→Ready p99 | heap/node | heap/pod | RSS/node | RSS/pod |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %d | %.0f/s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Nodes, r.Pods, r.Rate, r.Running, ms(r.CreateToRunning.P50), ms(r.CreateToRunning.P99), ms(r.CreateToRunning.Max),
			ms(r.CreateToReady.P99), kib(r.HeapPerNode), kib(r.HeapPerPod), kib(r.RSSPerNode), kib(r.RSSPerPod))
	}
	fmt.Fprintln(w, "\nMemory per node/pod: growth of the live heap (after a forced GC) and of VmRSS of the one process running etcd, API server, controller manager, scheduler and all simulated kubelets, divided by nodes (before nodes → all nodes Ready) and by pods (→ all pods Running); it includes the API server's watch cache and every component's informers.")
}

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

// WriteNodeMemoryTable prints node-memory results as a Markdown table.
func WriteNodeMemoryTable(w io.Writer, results []NodeMemoryResult) {
	fmt.Fprintln(w, "| nodes | pods | all Running after | agent heap/node | agent heap/pod | agent RSS/node | agent RSS/pod | API server RSS/node | API server RSS/pod | agent heap at end | API server RSS at end |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %.0f MiB | %.0f MiB |\n",
			r.Nodes, r.Pods, r.AllRunningAfter.Round(time.Millisecond), kib(r.AgentHeapPerNode), kib(r.AgentHeapPerPod),
			kib(r.AgentRSSPerNode), kib(r.AgentRSSPerPod), kib(r.APIServerRSSPerNode), kib(r.APIServerRSSPerPod),
			float64(r.AgentHeap[2])/(1<<20), float64(r.APIServerRSS[2])/(1<<20))
	}
	fmt.Fprintln(w, "\nThe agent is one process running the controller manager, the scheduler and every simulated kubelet (one shared pod watch); the API server runs alone in another, etcd in a third. Per node: growth from no kubelet to all nodes Ready, divided by nodes; per pod: growth to all pods Running, divided by pods. Heap is the live heap after a forced GC; RSS is VmRSS after returning freed memory.")
}
