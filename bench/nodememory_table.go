package bench

import (
	"fmt"
	"io"
	"time"
)

// WriteNodeMemoryTable prints node-memory results as a Markdown table,
// then, for each result, the agent's Go runtime memory classes per node
// and per pod next to its RSS.
func WriteNodeMemoryTable(w io.Writer, results []NodeMemoryResult) {
	fmt.Fprintln(w, "| nodes | pods | all Running after | create→Running p50 | p99 | agent CPU | agent heap/node | agent heap/pod | agent RSS/node | agent RSS/pod | API server RSS/node | API server RSS/pod | agent heap at end | API server RSS at end |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f MiB | %.0f MiB |\n",
			r.Nodes, r.Pods, r.AllRunningAfter.Round(time.Millisecond), ms(r.CreateToRunning.P50), ms(r.CreateToRunning.P99), r.AgentCPU.Round(100*time.Millisecond), kib(r.AgentHeapPerNode), kib(r.AgentHeapPerPod),
			kib(r.AgentRSSPerNode), kib(r.AgentRSSPerPod), kib(r.APIServerRSSPerNode), kib(r.APIServerRSSPerPod),
			float64(r.AgentHeap[2])/(1<<20), float64(r.APIServerRSS[2])/(1<<20))
	}
	fmt.Fprintln(w, "\nThe agent is one process running the controller manager, the scheduler and every simulated kubelet (one shared pod watch); the API server runs alone in another, etcd in a third. Per node: growth from no kubelet to all nodes Ready, divided by nodes; per pod: growth to all pods Running, divided by pods. Heap is the live heap after a forced GC; RSS is VmRSS after returning freed memory. Agent CPU: the agent's CPU time (user + system) from the first pod created to the last one Running.")
	for _, r := range results {
		writeNodeMemoryClasses(w, r)
	}
}

// writeNodeMemoryClasses prints one result's agent memory classes: per
// node, per pod and at the end, with RSS and the part of RSS the Go
// runtime does not account for (the binary's pages and anything mapped
// outside the Go heap): RSS − (total − heap/released).
func writeNodeMemoryClasses(w io.Writer, r NodeMemoryResult) {
	if r.AgentClasses[2] == nil {
		return
	}
	fmt.Fprintf(w, "\nAgent memory by runtime/metrics class, %d nodes / %d pods (bytes classes in KiB; goroutines as counts):\n\n", r.Nodes, r.Pods)
	fmt.Fprintln(w, "| class | per node | per pod | at end |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	row := func(name string, perNode, perPod, end float64) {
		switch name {
		case "gc/gogc":
			fmt.Fprintf(w, "| %s | | | %.0f |\n", name, end)
			return
		case "gc/gomemlimit":
			if end >= 1<<62 {
				fmt.Fprintf(w, "| %s | | | none |\n", name)
			} else {
				fmt.Fprintf(w, "| %s | | | %.0f MiB |\n", name, end/(1<<20))
			}
			return
		case "goroutines", "gc/heap/objects":
			fmt.Fprintf(w, "| %s | %.2f | %.3f | %.0f |\n", name, perNode, perPod, end)
			return
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f MiB |\n", name, kib(perNode), kib(perPod), end/(1<<20))
	}
	row("RSS", r.AgentRSSPerNode, r.AgentRSSPerPod, float64(r.AgentRSS[2]))
	for _, c := range memoryClasses {
		row(c.name, r.AgentClassesPerNode[c.name], r.AgentClassesPerPod[c.name], float64(r.AgentClasses[2][c.name]))
	}
	outside := func(i int) float64 {
		c := r.AgentClasses[i]
		return float64(r.AgentRSS[i]) - (float64(c["total"]) - float64(c["heap/released"]))
	}
	n, p := float64(max(r.Nodes, 1)), float64(max(r.Pods, 1))
	row("RSS − (total − released)", (outside(1)-outside(0))/n, (outside(2)-outside(1))/p, outside(2))
}
