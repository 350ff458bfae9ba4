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
		if len(r.Throttled) > 0 {
			fmt.Fprintf(w, "\nThrottled by the API server (429, retried after 1 s): %s.\n", counts(r.Throttled, "%[1]s %[2]d"))
		}
		if r.UpMemory != nil {
			fmt.Fprintln(w)
			WriteUpMemoryTable(w, *r.UpMemory)
		}
	}
}

// WriteUpMemoryTable prints the full run's and the control's readings and
// the memory per node and per pod beyond the API server's share.
func WriteUpMemoryTable(w io.Writer, m UpMemory) {
	fmt.Fprintf(w, "Memory beyond the API server's own share, %d nodes / %d pods (issue 5: < 2 MiB per node, < 10 KiB per pod):\n\n", m.Nodes, m.Pods)
	fmt.Fprintln(w, "| one process | start | nodes Ready | pods Running | per node | per pod |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	row := func(name string, r [3]MemoryReading, value func(MemoryReading) float64, perNode, perPod float64) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, mib(value(r[0])), mib(value(r[1])), mib(value(r[2])), kib(perNode), kib(perPod))
	}
	rss := func(r MemoryReading) float64 { return float64(r.RSS) }
	heap := func(r MemoryReading) float64 { return float64(r.Heap) }
	fullRSSNode, fullRSSPod := beyondPerNodePod([3]float64{rss(m.Full[0]), rss(m.Full[1]), rss(m.Full[2])}, [3]float64{}, m.Nodes, m.Pods)
	fullHeapNode, fullHeapPod := beyondPerNodePod([3]float64{heap(m.Full[0]), heap(m.Full[1]), heap(m.Full[2])}, [3]float64{}, m.Nodes, m.Pods)
	row("RSS, `up` (full run)", m.Full, rss, fullRSSNode, fullRSSPod)
	row("RSS, control: etcd + API server with the same objects", m.Control, rss, m.ControlRSSPerNode, m.ControlRSSPerPod)
	fmt.Fprintf(w, "| **RSS beyond the API server** | | | | **%s** | **%s** |\n", kib(m.RSSPerNode), kib(m.RSSPerPod))
	row("live heap, `up` (full run)", m.Full, heap, fullHeapNode, fullHeapPod)
	row("live heap, control", m.Control, heap, m.ControlHeapPerNode, m.ControlHeapPerPod)
	fmt.Fprintf(w, "| **live heap beyond the API server** | | | | **%s** | **%s** |\n", kib(m.HeapPerNode), kib(m.HeapPerPod))
	classes := []struct{ name, class string }{{"heap objects", "heap/objects"}, {"heap/unused (partly used spans)", "heap/unused"}, {"goroutine stacks", "heap/stacks"}, {"runtime metadata", "metadata/mspan/inuse"}, {"file-backed (etcd's mapped db pages, the binary)", "rss/file"}}
	var byClass []string
	for _, c := range classes {
		node, pod := classBeyond(m, c.class)
		byClass = append(byClass, fmt.Sprintf("%s %s / %s", c.name, kib(node), kib(pod)))
	}
	fmt.Fprintf(w, "| beyond the API server by class, per node / per pod: %s | | | | | |\n", strings.Join(byClass, "; "))
	where := "disk"
	if m.VolumeTmpfs {
		where = "tmpfs, the machine's memory outside the RSS"
	}
	if m.VolumeDir != "" {
		fmt.Fprintf(w, "| pod directories and volumes (%s; %d files) | | | %s | | %s |\n", where, m.VolumeFiles, mib(float64(m.VolumeBytes)), kib(float64(m.VolumeBytes)/float64(max(m.Pods, 1))))
	}
	if len(m.ControlObjects) > 0 {
		fmt.Fprintf(w, "\nThe control created %s (copies of the full run's node-1, its Lease, pod startup-0 with its Running status, and its events for each node's first pod, the last pod's events for the others, which found the image present; each pod created, bound and its status written); the full run's namespace held %d events.\n", counts(m.ControlObjects, "%[2]d %[1]s"), m.FullEvents)
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

// classBeyond is beyondPerNodePod of one memory class of the readings (0
// where a reading lacks it).
func classBeyond(m UpMemory, class string) (perNode, perPod float64) {
	of := func(r [3]MemoryReading) [3]float64 {
		return [3]float64{float64(r[0].Classes[class]), float64(r[1].Classes[class]), float64(r[2].Classes[class])}
	}
	return beyondPerNodePod(of(m.Full), of(m.Control), m.Nodes, m.Pods)
}
