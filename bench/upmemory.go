package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// Issue 5's memory "beyond the API server's own share", in one `kubeproof
// up` process: the startup workload's process (etcd, API server,
// controller manager, scheduler, simulated kubelets) is read at three
// points — before the cluster starts, once every node is Ready, once every
// pod is Running — and so is a control run in the same process set-up
// afterwards: cluster.Start with etcd and the API server only, populated
// through the API with copies of what the full run ended with (its Nodes
// and Leases, its pods created, bound and given the Running status a
// kubelet wrote, and each pod's events — the first pod's of a node
// including the image pull's, the later ones' not), with the same
// bookkeeping of the benchmark itself, kept live through the readings. The control's growth is the API server's (and its
// etcd's) share; what the full run grew beyond it is what the simulated
// nodes, the controller manager and the scheduler cost:
//
//	per node = ((full[nodes] − full[start]) − (control[nodes] − control[start])) / nodes
//	per pod  = ((full[pods] − full[nodes]) − (control[pods] − control[nodes])) / pods
//
// Per node includes the controller manager's and scheduler's fixed cost
// (they start with the cluster): an over-estimate. The control runs after
// the full run, in a fresh process of this binary (`kubeproof bench
// --up-control FILE`, StartupConfig.ControlBinary) so that it starts as
// the full run did — not with the pages of code, runtime metadata and
// global caches the full run left behind — or, without a binary (tests),
// in this process.

// MemoryReading is one reading of the process: the live heap after a
// forced collection (runtime/metrics /gc/heap/live:bytes), VmRSS after
// freed memory was returned to the system, and the Go runtime's memory
// classes (memoryClasses).
type MemoryReading struct {
	Heap uint64 `json:"heap"`
	// Objects is the number of heap objects at the same moment
	// (/gc/heap/objects:objects): what the collector's marking follows
	// besides the bytes.
	Objects uint64            `json:"objects,omitempty"`
	RSS     int64             `json:"rss"`
	Classes map[string]uint64 `json:"classes,omitempty"`
}

// UpMemory is the full run's and the control's readings (start, nodes
// Ready, pods Running) and what they give per node and per pod.
type UpMemory struct {
	Nodes   int              `json:"nodes"`
	Pods    int              `json:"pods"`
	Full    [3]MemoryReading `json:"full"`
	Control [3]MemoryReading `json:"control"`
	// MidPods is the pod count of the readings taken half-way (FullMid,
	// ControlMid): the pods are created in two halves, and memory is read
	// by the same rule once the first half is Running (0: not read).
	MidPods    int           `json:"midPods,omitempty"`
	FullMid    MemoryReading `json:"fullMid"`
	ControlMid MemoryReading `json:"controlMid"`
	// Beyond the API server's share (see the file comment), and the
	// control's own growth per node and per pod (the API server's share).
	RSSPerNode         float64 `json:"rssPerNode"`
	RSSPerPod          float64 `json:"rssPerPod"`
	HeapPerNode        float64 `json:"heapPerNode"`
	HeapPerPod         float64 `json:"heapPerPod"`
	ControlRSSPerNode  float64 `json:"controlRssPerNode"`
	ControlRSSPerPod   float64 `json:"controlRssPerPod"`
	ControlHeapPerNode float64 `json:"controlHeapPerNode"`
	ControlHeapPerPod  float64 `json:"controlHeapPerPod"`
	// The same per pod as a slope: growth from MidPods to Pods pods
	// Running, beyond the control's, per pod (0 without MidPods).
	RSSPerPodSlope         float64 `json:"rssPerPodSlope,omitempty"`
	HeapPerPodSlope        float64 `json:"heapPerPodSlope,omitempty"`
	ControlRSSPerPodSlope  float64 `json:"controlRssPerPodSlope,omitempty"`
	ControlHeapPerPodSlope float64 `json:"controlHeapPerPodSlope,omitempty"`
	// RSSPerNodeFilled and HeapPerNodeFilled are per node with the state
	// the pods phase fills per node (connections' HPACK tables, caches,
	// grown stacks): the whole growth beyond the control, start to pods
	// Running, less the slope times the pods, over the nodes — so that
	// nodes × per node filled + pods × slope is the whole.
	RSSPerNodeFilled  float64 `json:"rssPerNodeFilled,omitempty"`
	HeapPerNodeFilled float64 `json:"heapPerNodeFilled,omitempty"`
	// VolumeDir is the simulated kubelets' root directory (pod
	// directories and volume contents); on tmpfs (VolumeTmpfs) its files
	// take the machine's memory outside any process's RSS. VolumeBytes
	// (allocated blocks) and VolumeFiles are read once every pod is
	// Running.
	VolumeDir   string `json:"volumeDir"`
	VolumeTmpfs bool   `json:"volumeTmpfs"`
	VolumeBytes int64  `json:"volumeBytes"`
	VolumeFiles int    `json:"volumeFiles"`
	// ControlObjects is what the control created: nodes, leases, pods
	// (each created, bound and given its status) and events.
	ControlObjects map[string]int `json:"controlObjects,omitempty"`
	// FullEvents is how many events the full run's namespace held when the
	// templates were read: the control's "events" should match it.
	FullEvents int `json:"fullEvents,omitempty"`
}

// compute fills the per-node and per-pod figures from the readings.
func (m *UpMemory) compute() {
	rss := func(r [3]MemoryReading) [3]float64 {
		return [3]float64{float64(r[0].RSS), float64(r[1].RSS), float64(r[2].RSS)}
	}
	heap := func(r [3]MemoryReading) [3]float64 {
		return [3]float64{float64(r[0].Heap), float64(r[1].Heap), float64(r[2].Heap)}
	}
	m.RSSPerNode, m.RSSPerPod = beyondPerNodePod(rss(m.Full), rss(m.Control), m.Nodes, m.Pods)
	m.HeapPerNode, m.HeapPerPod = beyondPerNodePod(heap(m.Full), heap(m.Control), m.Nodes, m.Pods)
	m.ControlRSSPerNode, m.ControlRSSPerPod = beyondPerNodePod(rss(m.Control), [3]float64{}, m.Nodes, m.Pods)
	m.ControlHeapPerNode, m.ControlHeapPerPod = beyondPerNodePod(heap(m.Control), [3]float64{}, m.Nodes, m.Pods)
	if m.MidPods > 0 && m.MidPods < m.Pods {
		rssOf := func(r MemoryReading) float64 { return float64(r.RSS) }
		heapOf := func(r MemoryReading) float64 { return float64(r.Heap) }
		m.RSSPerPodSlope = m.slope(rssOf, true)
		m.HeapPerPodSlope = m.slope(heapOf, true)
		m.ControlRSSPerPodSlope = m.slope(rssOf, false)
		m.ControlHeapPerPodSlope = m.slope(heapOf, false)
		nodes, pods := float64(max(m.Nodes, 1)), float64(m.Pods)
		m.RSSPerNodeFilled = m.RSSPerNode + (m.RSSPerPod-m.RSSPerPodSlope)*pods/nodes
		m.HeapPerNodeFilled = m.HeapPerNode + (m.HeapPerPod-m.HeapPerPodSlope)*pods/nodes
	}
}

// slope is value's growth per pod from MidPods to Pods pods Running: the
// full run's beyond the control's (beyond), or the control's.
func (m *UpMemory) slope(value func(MemoryReading) float64, beyond bool) float64 {
	n := float64(m.Pods - m.MidPods)
	control := (value(m.Control[2]) - value(m.ControlMid)) / n
	if !beyond {
		return control
	}
	return (value(m.Full[2])-value(m.FullMid))/n - control
}

// beyondPerNodePod is the full run's growth beyond the control's, per
// node (start → nodes) and per pod (nodes → pods).
func beyondPerNodePod(full, control [3]float64, nodes, pods int) (perNode, perPod float64) {
	perNode = ((full[1] - full[0]) - (control[1] - control[0])) / float64(max(nodes, 1))
	perPod = ((full[2] - full[1]) - (control[2] - control[1])) / float64(max(pods, 1))
	return perNode, perPod
}

// readMemory reads the process now (after a forced collection).
func readMemory() MemoryReading {
	_, rss := liveMemory()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/objects:objects"}}
	metrics.Read(s)
	return MemoryReading{Heap: s[0].Value.Uint64(), Objects: s[1].Value.Uint64(), RSS: rss, Classes: readMemoryClasses()}
}

// settledReading takes n readings every apart (after waiting every) and
// returns the one with the lowest live heap: the simulated kubelets resync
// and relist all the time, and what a sync has in flight is not what a
// pod costs.
func settledReading(ctx context.Context, n int, every time.Duration) (MemoryReading, error) {
	return lowestHeap(ctx, settleRule{waitFirst: true, every: every, reads: n},
		func(r MemoryReading) uint64 { return r.Heap }, func() (MemoryReading, error) { return readMemory(), nil })
}

// settleRule is when lowestHeap reads and when it stops: every apart (also
// before the first reading if waitFirst), at most reads readings, or fewer
// once quiet readings in a row (if quiet > 0) brought no new low more
// than 1% below the lowest so far.
type settleRule struct {
	waitFirst bool
	every     time.Duration
	reads     int
	quiet     int
}

// lowestHeap reads by rule and returns the reading whose heap is lowest —
// the one loop both memory workloads settle with (settledReading here,
// settledMemory for the node-memory agent, each with its own rule).
func lowestHeap[R any](ctx context.Context, rule settleRule, heap func(R) uint64, read func() (R, error)) (R, error) {
	var low R
	quiet := 0
	for i := 0; i < max(rule.reads, 1); i++ {
		if i > 0 || rule.waitFirst {
			select {
			case <-ctx.Done():
				return low, ctx.Err()
			case <-time.After(rule.every):
			}
		}
		r, err := read()
		if err != nil {
			if i == 0 {
				low = r
			}
			return low, err
		}
		if i == 0 {
			low = r
			continue
		}
		if float64(heap(r)) < 0.99*float64(heap(low)) {
			quiet = 0
		} else {
			quiet++
		}
		if heap(r) < heap(low) {
			low = r
		}
		if rule.quiet > 0 && quiet >= rule.quiet {
			break
		}
	}
	return low, nil
}

// diskUsage is the allocated size and file count under dir.
func diskUsage(dir string) (bytes int64, files int, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a pod removed meanwhile
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			bytes += st.Blocks * 512
		}
		if !d.IsDir() {
			files++
		}
		return nil
	})
	return bytes, files, err
}

// upTemplates are objects of the full run that the control copies.
type upTemplates struct {
	node   *corev1.Node
	lease  *coordinationv1.Lease
	pod    *corev1.Pod
	events []corev1.Event // the pod's
	// laterEvents are the events of a pod that was not the first on its
	// node: the kubelet pulls an image once per node (Pulling, Pulled),
	// later pods' containers find it present (one Pulled, "already
	// present on machine"), so those pods have one event fewer. Nil: every
	// copy gets events.
	laterEvents []corev1.Event
	// pullers counts, per node name, the full run's pods whose kubelet
	// pulled the image (a Pulling event from that node): usually each
	// node's first pod, but not always — under load a node's later pod
	// may reach its containers first, and two pods that find the image
	// absent at once both pull. The control gives that many pods of each
	// node the pulling pod's events. Nil: one per node.
	pullers map[string]int
}

// templatePods picks the template pods from the full run's events in the
// namespace: the pod whose events are copied for pulling pods (prefer,
// when its kubelet pulled the image, else the first by name that did;
// prefer when none did) and the one copied for the others (preferLater
// when it did not pull, else the first by name that did not; empty when
// preferLater is or every pod pulled), and the pulling pods per node.
func templatePods(evs []corev1.Event, prefer, preferLater string) (first, later string, pullers map[string]int) {
	pulled := map[string]bool{} // pod name → pulled
	for _, e := range evs {
		if e.InvolvedObject.Kind != "Pod" {
			continue
		}
		if e.Reason == kubelet.EventPulling {
			if !pulled[e.InvolvedObject.Name] {
				if pullers == nil {
					pullers = map[string]int{}
				}
				pullers[e.Source.Host]++
			}
			pulled[e.InvolvedObject.Name] = true
		} else if _, ok := pulled[e.InvolvedObject.Name]; !ok {
			pulled[e.InvolvedObject.Name] = false
		}
	}
	names := slices.Sorted(maps.Keys(pulled))
	first = prefer
	if !pulled[prefer] {
		if i := slices.IndexFunc(names, func(n string) bool { return pulled[n] }); i >= 0 {
			first = names[i]
		}
	}
	if preferLater != "" {
		if p, ok := pulled[preferLater]; ok && !p {
			later = preferLater
		} else if i := slices.IndexFunc(names, func(n string) bool { return !pulled[n] }); i >= 0 {
			later = names[i]
		}
	}
	return first, later, pullers
}

// readTemplates reads node-1, its Lease, the template pods in ns
// (templatePods: pod and later preferred, later none when empty) and the
// events about them.
func readTemplates(ctx context.Context, cs kubernetes.Interface, ns, pod, later string) (*upTemplates, error) {
	t := &upTemplates{}
	all, err := listEvents(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	pod, later, t.pullers = templatePods(all, pod, later)
	if t.node, err = cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("reading node-1: %w", err)
	}
	if t.lease, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-1", metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("reading node-1's lease: %w", err)
	}
	if t.pod, err = cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("reading pod %s: %w", pod, err)
	}
	if t.events, err = podEvents(ctx, cs, t.pod); err != nil {
		return nil, err
	}
	if later != "" {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, later, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading pod %s: %w", later, err)
		}
		if t.laterEvents, err = podEvents(ctx, cs, p); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// podEvents lists the events about pod.
func podEvents(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) ([]corev1.Event, error) {
	evs, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod.Name).String()})
	if err != nil {
		return nil, fmt.Errorf("reading the events of pod %s: %w", pod.Name, err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.UID == pod.UID {
			out = append(out, e)
		}
	}
	return out, nil
}

// freshMeta is meta as a client sends it for a new object: no UID,
// resourceVersion, creation time or managedFields (the API server sets
// its own).
func freshMeta(meta metav1.ObjectMeta, name string) metav1.ObjectMeta {
	meta.Name, meta.UID, meta.ResourceVersion, meta.CreationTimestamp, meta.ManagedFields, meta.Generation = name, "", "", metav1.Time{}, nil, 0
	return meta
}

// runControl starts etcd and the API server as `kubeproof up` does (no
// controller manager, scheduler or kubelets) in dir and populates it with
// copies of t for nodes and pods, through the node holders
// (upholders.go: a process of bin, or in this process when bin is empty),
// reading the process before, after the nodes, half-way through the pods
// and after the pods. The pods are followed by a watch and a
// startupTracker as in the full run, so the benchmark's own bookkeeping
// is in both.
func runControl(ctx context.Context, cfg StartupConfig, bin string, t *upTemplates, fullEvents int, dir string, prog *progressLine) (r controlReply, err error) {
	r.Objects = map[string]int{}
	if cfg.HeapProfile != "" {
		finerHeapProfile()
	}
	prog.set("control: settle", func() int { return 0 }, 0)
	if r.Readings[0], err = settledReading(ctx, cfg.MemoryReadings, cfg.Settle); err != nil {
		return r, err
	}
	ccfg := cluster.UpConfig(filepath.Join(dir, "cluster"))
	ccfg.BindAddress, ccfg.UnsafeNoFsync, ccfg.Logger = "127.0.0.1:0", cfg.UnsafeNoFsync, cfg.Logger
	ccfg.ControllerManager, ccfg.Scheduler, ccfg.Nodes = false, false, 0
	ccfg.NodeTokens = true // the holders' nodes authenticate as the full run's do
	c, err := cluster.Start(ctx, ccfg)
	if err != nil {
		return r, fmt.Errorf("control: %w", err)
	}
	defer c.Stop()
	cs, err := kubernetes.NewForConfig(APIClientConfig(c.AdminConfig, runtime.ContentTypeProtobuf))
	if err != nil {
		return r, err
	}
	prog.set("control: nodes", func() int { return 0 }, cfg.Nodes)
	share := eventShare(t, cfg.Nodes, cfg.Pods, fullEvents)
	thin := &eventThinner{share: share}
	h, err := startHolders(ctx, bin, filepath.Join(dir, "holders"), c, cs, cfg.Nodes, t, share)
	if err != nil {
		return r, fmt.Errorf("control: %w", err)
	}
	defer h.stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-h.failed:
			cancel(h.err)
		case <-ctx.Done():
		}
	}()
	r.Objects["nodes"], r.Objects["leases"] = cfg.Nodes, cfg.Nodes
	prog.set("control: settle", func() int { return 0 }, 0)
	if r.Readings[1], err = settledReading(ctx, cfg.MemoryReadings, cfg.Settle); err != nil {
		return r, context.Cause(ctx)
	}
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile + ".control.nodes"); err != nil {
			return r, err
		}
	}

	ns := t.pod.Namespace
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return r, fmt.Errorf("control: namespace: %w", err)
	}
	if err := ensureDefaultServiceAccount(ctx, cs, ns); err != nil {
		return r, err
	}
	// The controller manager publishes the cluster CA to every namespace.
	rootCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: serviceaccount.RootCAConfigMapName, Namespace: ns}, Data: map[string]string{serviceaccount.RootCAKey: string(c.CA.CertPEM)}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, rootCA, metav1.CreateOptions{}); err != nil {
		return r, fmt.Errorf("control: kube-root-ca.crt: %w", err)
	}
	tr, stopWatch, err := watchStartup(ctx, cs, ns)
	if err != nil {
		return r, err
	}
	defer stopWatch()
	var done atomic.Int64
	createPods := func(from, to int) error {
		prog.set("control: pods", func() int { return int(done.Load()) }, cfg.Pods)
		return parallel(ctx, to-from, &done, func(ctx context.Context, i int) error {
			i += from
			name := fmt.Sprintf("startup-%d", i)
			node, _ := cluster.SimulatedNode(i % cfg.Nodes)
			p := t.pod.DeepCopy()
			p.ObjectMeta = freshMeta(p.ObjectMeta, name)
			p.Spec.NodeName, p.Status = "", corev1.PodStatus{}
			tr.sentAt(name, time.Now())
			created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("control: creating pod %s: %w", name, err)
			}
			if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: created.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("control: binding pod %s: %w", name, err)
			}
			// The scheduler's events; the holders write the kubelet's.
			for j, e := range t.events {
				if e.Source.Component == kubelet.EventComponent || !thin.take() {
					continue
				}
				if _, err := cs.CoreV1().Events(ns).Create(ctx, copyEvent(e, created, j), metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("control: event of pod %s: %w", name, err)
				}
			}
			return nil
		})
	}
	half := midPods(cfg)
	if half > 0 {
		if err := createPods(0, half); err != nil {
			return r, errors.Join(err, context.Cause(ctx))
		}
		if err := waitTracked(ctx, tr, half, cfg.Timeout, prog); err != nil {
			return r, err
		}
		prog.set("control: settle (half)", func() int { return 0 }, 0)
		if r.Mid, err = settledReading(ctx, cfg.MemoryReadings, cfg.Settle); err != nil {
			return r, context.Cause(ctx)
		}
		if cfg.HeapProfile != "" {
			if err := writeHeapProfile(cfg.HeapProfile + ".control.half"); err != nil {
				return r, err
			}
		}
	}
	if err := createPods(half, cfg.Pods); err != nil {
		return r, errors.Join(err, context.Cause(ctx))
	}
	if err := waitTracked(ctx, tr, cfg.Pods, cfg.Timeout, prog); err != nil {
		return r, err
	}
	stopWatch() // as the full run stops its watch before its last reading
	if r.Objects["events"], err = countEvents(ctx, cs, ns); err != nil {
		return r, err
	}
	r.Objects["pods"] = cfg.Pods
	prog.set("control: settle", func() int { return 0 }, 0)
	if r.Readings[2], err = settledReading(ctx, cfg.MemoryReadings, cfg.Settle); err != nil {
		return r, context.Cause(ctx)
	}
	// The bookkeeping stays live through the last reading, as the full
	// run's does (RunStartup keeps its tracker alive through them too).
	goruntime.KeepAlive(tr)
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile + ".control"); err != nil {
			return r, err
		}
	}
	if err := h.stop(); err != nil && h.err == nil {
		return r, fmt.Errorf("control: stopping the holders: %w", err)
	}
	return r, nil
}

// countEvents counts the events of namespace ns.
func countEvents(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
	evs, err := listEvents(ctx, cs, ns)
	return len(evs), err
}

// listEvents lists the events of namespace ns, page by page.
func listEvents(ctx context.Context, cs kubernetes.Interface, ns string) ([]corev1.Event, error) {
	var out []corev1.Event
	for opts := (metav1.ListOptions{Limit: 5000}); ; {
		evs, err := cs.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			return out, fmt.Errorf("listing the events: %w", err)
		}
		out = append(out, evs.Items...)
		if opts.Continue = evs.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// volumeUsage reads what the cluster's simulated kubelets keep in their
// root directory.
func volumeUsage(c *cluster.Cluster, m *UpMemory) error {
	dir, tmpfs := c.KubeletRootDir()
	m.VolumeDir, m.VolumeTmpfs = dir, tmpfs
	if dir == "" {
		return nil
	}
	var err error
	if m.VolumeBytes, m.VolumeFiles, err = diskUsage(dir); err != nil {
		return fmt.Errorf("reading the kubelets' directory %s: %w", dir, err)
	}
	return nil
}

// controlRequest is what the control process is asked to do.
type controlRequest struct {
	Role           string `json:"role,omitempty"` // "" (the control) or "holders" (holdersRequest)
	Nodes, Pods    int
	UnsafeNoFsync  bool
	Settle         time.Duration
	MemoryReadings int
	Timeout        time.Duration
	HeapProfile    string // the full run's StartupConfig.HeapProfile
	Binary         string // this binary, for the holders' process
	FullEvents     int    // events the full run's namespace held (eventShare)
	// GCPercent is the full run's GC percent (0: leave the process's
	// own). The control runs at it: the heap a process keeps resident per
	// byte it holds live grows with the percent (a GC cycle's spans stay in
	// use while any object in them lives), so the API server's share is only
	// comparable at the full run's setting.
	GCPercent   int
	Node        *corev1.Node
	Lease       *coordinationv1.Lease
	Pod         *corev1.Pod
	Events      []corev1.Event
	LaterEvents []corev1.Event
	Pullers     map[string]int // upTemplates.pullers
}

// currentGCPercent is the process's GC percent now (GOGC's or
// debug.SetGCPercent's; negative: collection off).
func currentGCPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int(int64(s[0].Value.Uint64()))
}

// controlReply is the control's readings (start, nodes, pods; Mid at
// midPods) and what it created.
type controlReply struct {
	Readings [3]MemoryReading `json:"readings"`
	Mid      MemoryReading    `json:"mid"`
	Objects  map[string]int   `json:"objects"`
	Err      string           `json:"err,omitempty"`
}

// measureControl runs the control (in a process of cfg.ControlBinary, or
// in this one without) and records its readings in m.
func measureControl(ctx context.Context, cfg StartupConfig, t *upTemplates, dir string, prog *progressLine, m *UpMemory) error {
	var r controlReply
	var err error
	if cfg.ControlBinary != "" {
		prog.set("control (own process)", func() int { return 0 }, 0)
		r, err = runControlProcess(ctx, cfg.ControlBinary, cfg, t, m.FullEvents, dir)
	} else {
		r, err = runControl(ctx, cfg, "", t, m.FullEvents, dir, prog)
	}
	m.Control, m.ControlMid, m.ControlObjects = r.Readings, r.Mid, r.Objects
	m.MidPods = midPods(cfg)
	return err
}

// newControlRequest is the control's request for the full run cfg.
func newControlRequest(cfg StartupConfig, t *upTemplates, fullEvents int, bin string) controlRequest {
	return controlRequest{Nodes: cfg.Nodes, Pods: cfg.Pods, UnsafeNoFsync: cfg.UnsafeNoFsync, Settle: cfg.Settle,
		MemoryReadings: cfg.MemoryReadings, Timeout: cfg.Timeout, HeapProfile: cfg.HeapProfile, Binary: bin, FullEvents: fullEvents,
		GCPercent: cfg.gcPercent, Node: t.node, Lease: t.lease, Pod: t.pod, Events: t.events, LaterEvents: t.laterEvents, Pullers: t.pullers}
}

// runControlProcess runs the control in a fresh process of bin (RunUpControl).
func runControlProcess(ctx context.Context, bin string, cfg StartupConfig, t *upTemplates, fullEvents int, dir string) (controlReply, error) {
	var rep controlReply
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, err
	}
	req, err := json.Marshal(newControlRequest(cfg, t, fullEvents, bin))
	if err != nil {
		return rep, err
	}
	file := filepath.Join(dir, "request.json")
	if err := os.WriteFile(file, req, 0o600); err != nil {
		return rep, err
	}
	cmd := exec.CommandContext(ctx, bin, "bench", "--up-control", file)
	cmd.Stderr = os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	out, err := cmd.Output()
	if jerr := json.Unmarshal(bytes.TrimSpace(out), &rep); jerr != nil {
		return rep, fmt.Errorf("control process (%v) said %q: %w", err, out, jerr)
	}
	if rep.Err != "" {
		return rep, errors.New("control process: " + rep.Err)
	}
	if err != nil {
		return rep, fmt.Errorf("control process: %w", err)
	}
	return rep, nil
}

// RunUpControl is the control process (`kubeproof bench --up-control
// FILE`): it runs the control the request in file asks for, in a data
// directory next to it, and writes its readings as one JSON line to out.
// With a holders request (upholders.go) it is the control's node holders
// instead, holding until its standard input ends.
func RunUpControl(ctx context.Context, file string, out io.Writer) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var role struct {
		Role string `json:"role"`
	}
	if err := json.Unmarshal(data, &role); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if role.Role == "holders" {
		var hr holdersRequest
		if err := json.Unmarshal(data, &hr); err != nil {
			return fmt.Errorf("reading %s: %w", file, err)
		}
		return runHoldersProcess(ctx, hr, os.Stdin, out)
	}
	var req controlRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if req.GCPercent != 0 {
		debug.SetGCPercent(req.GCPercent)
	}
	cfg := StartupConfig{Nodes: req.Nodes, Pods: req.Pods, UnsafeNoFsync: req.UnsafeNoFsync, Settle: req.Settle,
		MemoryReadings: req.MemoryReadings, Timeout: req.Timeout, HeapProfile: req.HeapProfile, Logger: slog.New(slog.DiscardHandler)}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	t := &upTemplates{node: req.Node, lease: req.Lease, pod: req.Pod, events: req.Events, laterEvents: req.LaterEvents, pullers: req.Pullers}
	if t.node == nil || t.lease == nil || t.pod == nil || cfg.Nodes <= 0 {
		return fmt.Errorf("%s: no templates or nodes", file)
	}
	rep, err := runControl(ctx, cfg, req.Binary, t, req.FullEvents, filepath.Dir(file), &progressLine{workload: "control"})
	if err != nil {
		rep.Err = err.Error()
	}
	b, _ := json.Marshal(rep)
	_, werr := fmt.Fprintf(out, "%s\n", b)
	return errors.Join(err, werr)
}

// midPods is the pod count at which memory is read half-way: half the
// pods, when memory beyond the API server is measured (the control runs)
// and there are at least two pods; 0 otherwise.
func midPods(cfg StartupConfig) int {
	if cfg.SkipControl || cfg.Pods < 2 {
		return 0
	}
	return cfg.Pods / 2
}

// createPodsReadingAtHalf creates the startup workload's pods at
// cfg.Rate. When memory is read half-way (midPods), arrivals stop after
// the first half until those pods are Running and Ready, memory is read
// (settledReading, as at the other readings), and the second half
// follows at the same rate: per pod between the two readings is a slope,
// free of the per-node state that fills while the first pods arrive.
func createPodsReadingAtHalf(ctx context.Context, cfg StartupConfig, cs kubernetes.Interface, ns string, tr *startupTracker, prog *progressLine) (MemoryReading, error) {
	half := midPods(cfg)
	if half == 0 {
		return MemoryReading{}, createPodsAtRate(ctx, cs, ns, 0, cfg.Pods, cfg.Rate, tr, prog)
	}
	if err := createPodsAtRate(ctx, cs, ns, 0, half, cfg.Rate, tr, prog); err != nil {
		return MemoryReading{}, err
	}
	if err := waitTracked(ctx, tr, half, cfg.Timeout, prog); err != nil {
		return MemoryReading{}, err
	}
	prog.set("settle (half)", func() int { return 0 }, 0)
	mid, err := settledReading(ctx, cfg.MemoryReadings, cfg.Settle)
	if err != nil {
		return mid, err
	}
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile + ".half"); err != nil {
			return mid, err
		}
	}
	return mid, createPodsAtRate(ctx, cs, ns, half, cfg.Pods-half, cfg.Rate, tr, prog)
}

// waitTracked waits until tr has seen n pods Running and Ready.
func waitTracked(ctx context.Context, tr *startupTracker, n int, timeout time.Duration, prog *progressLine) error {
	prog.set("wait running", func() int { return int(tr.running.Load()) }, n)
	deadline := time.Now().Add(timeout)
	for int(tr.running.Load()) < n || int(tr.ready.Load()) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d pods Running (%d Ready) after %s", tr.running.Load(), n, tr.ready.Load(), timeout)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
