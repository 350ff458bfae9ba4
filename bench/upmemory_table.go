package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteUpMemoryTable prints the full run's and the control's readings and
// the memory per node and per pod beyond the API server's share.
func WriteUpMemoryTable(w io.Writer, m UpMemory) {
	note := ""
	if m.MidPods > 0 && m.MidPods < m.Pods {
		note = ", which the slope rows leave out"
	}
	fmt.Fprintf(w, "Memory beyond the API server's own share, %d nodes / %d pods (issue 5: < 2 MiB per node, < 10 KiB per pod). Per node: start → nodes Ready; per pod: nodes Ready → pods Running, over all pods — with the per-node state that fills while the pods arrive%s:\n\n", m.Nodes, m.Pods, note)
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
	writeGCWork(w, m)
	writeGCSetting(w, m)
	writeUpMemorySlope(w, m, classes)
	where := "disk"
	if m.VolumeTmpfs {
		where = "tmpfs, the machine's memory outside the RSS"
	}
	if m.VolumeDir != "" {
		fmt.Fprintf(w, "| pod directories and volumes (%s; %d files) | | | %s | | %s |\n", where, m.VolumeFiles, mib(float64(m.VolumeBytes)), kib(float64(m.VolumeBytes)/float64(max(m.Pods, 1))))
	}
	if len(m.ControlObjects) > 0 {
		fmt.Fprintf(w, "\nThe control created %s (copies of the full run's node-1, its Lease, pod startup-0 (or the first that pulled the image, if it did not) with its Running status, and that pod's events for as many pods of each node as pulled the image there in the full run (usually its first), a later pod's for the others, which found the image present — as many in all as the full run's namespace held, the share its event broadcaster did not drop; each pod created and bound by the control, its status and kubelet events written by its node), each node over its own connection as system:node:<name> with the kubelet's Lease renewals, Node reads and kube-root-ca.crt watch, and the node simulator's pods and services watches, held by another process (upholders.go); the full run's namespace held %d events.\n", counts(m.ControlObjects, "%[2]d %[1]s"), m.FullEvents)
	}
}

// writeGCWork prints what a GC cycle marks once every pod is Running, in
// the full run and in the control: heap objects, and the scannable heap
// and stacks (nothing when the readings lack them).
func writeGCWork(w io.Writer, m UpMemory) {
	full, control := m.Full[2].Classes, m.Control[2].Classes
	if full["gc/heap/objects"] == 0 {
		return
	}
	fmt.Fprintf(w, "| what a GC cycle marks at pods Running, full run / control: heap objects %d / %d (per pod %.1f / %.1f); scannable heap %s / %s; scannable stacks %s / %s | | | | | |\n",
		full["gc/heap/objects"], control["gc/heap/objects"],
		float64(full["gc/heap/objects"])/float64(max(m.Pods, 1)), float64(control["gc/heap/objects"])/float64(max(m.Pods, 1)),
		mib(float64(full["gc/scan/heap"])), mib(float64(control["gc/scan/heap"])),
		mib(float64(full["gc/scan/stack"])), mib(float64(control["gc/scan/stack"])))
}

// writeGCSetting prints the GC percent of the full run and of the
// control, and how much heap each keeps in partly used spans per byte of
// heap objects at pods Running: the heap a Go process keeps resident after
// growing is near the goal its collector allowed (a span stays in use while
// any object in it lives), so the share beyond the API server is only
// comparable at one setting (nothing when the readings lack them).
func writeGCSetting(w io.Writer, m UpMemory) {
	full, control := m.Full[2].Classes, m.Control[2].Classes
	fp, fok := full["gc/gogc"]
	cp, cok := control["gc/gogc"]
	if !fok || !cok || full["heap/objects"] == 0 || control["heap/objects"] == 0 {
		return
	}
	same := ""
	if fp != cp {
		same = " — **not the same setting: the share beyond the API server is not comparable**"
	}
	fmt.Fprintf(w, "| GC percent, full run / control: %d / %d%s; partly used spans per byte of heap objects at pods Running: %.2f / %.2f | | | | | |\n",
		int64(fp), int64(cp), same,
		float64(full["heap/unused"])/float64(full["heap/objects"]), float64(control["heap/unused"])/float64(control["heap/objects"]))
}

// classBeyond is beyondPerNodePod of one memory class of the readings (0
// where a reading lacks it).
func classBeyond(m UpMemory, class string) (perNode, perPod float64) {
	of := func(r [3]MemoryReading) [3]float64 {
		return [3]float64{float64(r[0].Classes[class]), float64(r[1].Classes[class]), float64(r[2].Classes[class])}
	}
	return beyondPerNodePod(of(m.Full), of(m.Control), m.Nodes, m.Pods)
}

// writeUpMemorySlope prints per pod as the slope between the readings at
// m.MidPods and at m.Pods pods (nothing without MidPods), by memory class
// too.
func writeUpMemorySlope(w io.Writer, m UpMemory, classes []struct{ name, class string }) {
	if m.MidPods <= 0 || m.MidPods >= m.Pods {
		return
	}
	fmt.Fprintf(w, "| per pod as the slope from %d to %d pods Running (what each further pod costs; the per-node state filled by the first pods is out): | | | | | |\n", m.MidPods, m.Pods)
	rss := func(r MemoryReading) float64 { return float64(r.RSS) }
	heap := func(r MemoryReading) float64 { return float64(r.Heap) }
	row := func(name string, mid, end MemoryReading, value func(MemoryReading) float64, perPod float64) {
		fmt.Fprintf(w, "| %s | | %s at %d pods | %s | | %s |\n", name, mib(value(mid)), m.MidPods, mib(value(end)), kib(perPod))
	}
	row("RSS, `up` (full run), slope", m.FullMid, m.Full[2], rss, m.RSSPerPodSlope+m.ControlRSSPerPodSlope)
	row("RSS, control, slope", m.ControlMid, m.Control[2], rss, m.ControlRSSPerPodSlope)
	fmt.Fprintf(w, "| **RSS beyond the API server, slope** | | | | | **%s** |\n", kib(m.RSSPerPodSlope))
	row("live heap, `up` (full run), slope", m.FullMid, m.Full[2], heap, m.HeapPerPodSlope+m.ControlHeapPerPodSlope)
	row("live heap, control, slope", m.ControlMid, m.Control[2], heap, m.ControlHeapPerPodSlope)
	fmt.Fprintf(w, "| **live heap beyond the API server, slope** | | | | | **%s** |\n", kib(m.HeapPerPodSlope))
	fmt.Fprintf(w, "| per node with what the pods phase fills per node (growth beyond, start → pods Running, less slope × pods, over nodes): RSS | | | | %s | |\n", kib(m.RSSPerNodeFilled))
	fmt.Fprintf(w, "| the same, live heap | | | | %s | |\n", kib(m.HeapPerNodeFilled))
	var byClass []string
	for _, c := range classes {
		of := func(r MemoryReading) float64 { return float64(r.Classes[c.class]) }
		byClass = append(byClass, fmt.Sprintf("%s %s", c.name, kib(m.slope(of, true))))
	}
	fmt.Fprintf(w, "| slope beyond the API server by class, per pod: %s | | | | | |\n", strings.Join(byClass, "; "))
}
