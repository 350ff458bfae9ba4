package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/pki"
)

// The control's node holders. In the full run the API server serves 1,000
// simulated nodes, each over its own TLS connection as its own
// system:node:<name> identity (HTTP/2 state, HPACK tables, write buffers
// on the server's side of each), with a ConfigMap watch of
// kube-root-ca.crt per node once it runs a pod of the namespace, and the
// node simulator's shared pods and services watches; each node renews its
// Lease and reads its Node every 10 s and writes its pods' status and
// events. What the API server holds for all of that is its own share, so
// the control must make it hold the same. The holders do it from another
// process (`kubeproof bench --up-control FILE` with a holders request,
// started by the control process), so that the clients' own memory stays
// out of the control's readings:
//
//   - one client per node with that node's bearer token (issued by the
//     control's API server, cluster.Config.NodeTokens), all on one shared
//     transport, so their requests travel over one or two HTTP/2
//     connections (protobuf, QPS 50 / burst 100, as cluster.Start builds
//     the simulated kubelets' since session 12),
//     through which the node creates its Node (copied from the full run's
//     node-1), writes its status and creates its Lease, then renews the
//     Lease (Update) and reads its Node (Get, resourceVersion 0) every
//     NodeLeaseRenewInterval / NodeStatusUpdateFrequency (10 s, a random
//     phase per node) and reports its status every
//     NodeStatusReportFrequency (5 min; the first time moved by a random
//     -50% to +50%), as a kubelet whose status does not change does;
//   - the node simulator's watches (cluster.NodeSimulatorUser, one
//     connection): every pod (kubelet.NewPodInformer) and every service;
//   - for each pod bound to one of its nodes (seen through the pod watch),
//     that node opens its watch of kube-root-ca.crt in the pod's namespace
//     if the pod mounts it (field-selected, as the kubelet's object cache
//     does; once per node and namespace), writes the pod's Running status (the full run's
//     startup-0's, with a pod IP of its own) and creates the pod's kubelet
//     events (as many of the node's pods with the image pull's as pulled
//     on it in the full run, usually its first, later ones without), all
//     through its own connection.
//
// Not copied: the controller manager's and the scheduler's connections
// (the control binds through its admin client and writes the scheduler's
// events there), the kubelets' other reads, and pod status writes beyond
// the one that makes the pod Running.
//
// Without a binary (tests) the holders run in the control's process, and
// their memory is in its readings.

// holdersRequest is what the holders are asked to hold.
type holdersRequest struct {
	Role   string      `json:"role"` // "holders"
	URL    string      `json:"url"`
	CAPEM  []byte      `json:"caPEM"`
	Reader pki.KeyPair `json:"reader"` // cluster.NodeSimulatorUser's
	Nodes  []holderNode
	Node   *corev1.Node
	Lease  *coordinationv1.Lease
	// PodStatus is the Running status every pod is given; Events and
	// LaterEvents the kubelet's events of a node's first pod and of its
	// later ones.
	PodStatus           corev1.PodStatus
	Events, LaterEvents []corev1.Event
	// Pullers is how many pods of each node get Events (the full run's
	// pulling pods there, upTemplates.pullers); nil: the first.
	Pullers map[string]int `json:"pullers,omitempty"`
	// EventShare is the share of the template events written (eventShare).
	EventShare float64
}

// eventShare is the share of the template events the control writes: the
// full run's namespace held fullEvents, fewer than every pod's template
// events when the event broadcaster dropped some (client-go's drops what
// its queue of 1,000 cannot take while the API server throttles writes),
// and the control stores as many. 1 when the full run dropped none or
// was not counted.
func eventShare(t *upTemplates, nodes, pods, fullEvents int) float64 {
	later := t.laterEvents
	if later == nil {
		later = t.events
	}
	first := min(nodes, pods)
	if t.pullers != nil {
		first = 0
		for _, n := range t.pullers {
			first += n
		}
		first = min(first, pods)
	}
	all := first*len(t.events) + (pods-first)*len(later)
	if fullEvents <= 0 || all <= fullEvents {
		return 1
	}
	return float64(fullEvents) / float64(all)
}

// eventThinner writes that share of the events offered to it, spread
// evenly: the n-th offered is written when the writes so far are behind
// n × share.
type eventThinner struct {
	mu             sync.Mutex
	share          float64
	offered, taken int
}

func (t *eventThinner) take() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.offered++
	if t.share >= 1 || float64(t.taken) < float64(t.offered)*t.share-0.5 {
		t.taken++
		return true
	}
	return false
}

// holderNode is one node: its name, pod CIDR and bearer token.
type holderNode struct {
	Name, CIDR string
	Token      string
}

// Timing of the holders' periodic writes: kubelet's defaults.
var (
	holderRenewEvery  = kubelet.DefaultNodeLeaseRenewInterval
	holderReportEvery = kubelet.DefaultNodeStatusReportFrequency
)

// holdersNodesLine is what the holders print once every node is created
// with its status and Lease.
const holdersNodesLine = "nodes"

// nodeHolder is one node's client and what it last wrote.
type nodeHolder struct {
	holderNode
	cs kubernetes.Interface
	// pods counts the node's pods handled (for events and pod IPs).
	pods  atomic.Int64
	mu    sync.Mutex
	node  *corev1.Node
	lease *coordinationv1.Lease
	// watched are the namespaces whose kube-root-ca.crt the node watches.
	watched map[string]bool
}

// runHolders holds what req asks for until ctx ends: it prints
// holdersNodesLine to out once the nodes exist, then serves pods as they
// are bound. It returns once every goroutine it started has ended.
func runHolders(ctx context.Context, req holdersRequest, out io.Writer) error {
	if req.Node == nil || req.Lease == nil || len(req.Nodes) == 0 {
		return errors.New("holders: no templates or nodes")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	reader, err := holderClient(pki.RESTConfig(req.URL, req.CAPEM, req.Reader), "node-simulator")
	if err != nil {
		return err
	}
	// The nodes' shared transport, as cluster.Start's simulated nodes'.
	transport, err := rest.TransportFor(&rest.Config{Host: req.URL, TLSClientConfig: rest.TLSClientConfig{CAData: req.CAPEM}})
	if err != nil {
		return fmt.Errorf("holders: the nodes' transport: %w", err)
	}
	defer utilnet.CloseIdleConnectionsFor(transport)
	if err := cluster.WaitPodsReadable(ctx, reader, time.Minute); err != nil {
		return err
	}
	nodes := map[string]*nodeHolder{}
	list := make([]*nodeHolder, len(req.Nodes))
	for i, n := range req.Nodes {
		cs, err := holderClient(&rest.Config{Host: req.URL, Transport: transport, BearerToken: n.Token}, n.Name)
		if err != nil {
			return err
		}
		list[i] = &nodeHolder{holderNode: n, cs: cs, watched: map[string]bool{}}
		nodes[n.Name] = list[i]
	}

	// The node simulator's watches, open from the start as in the full run.
	pods := kubelet.NewPodInformer(reader, 0)
	services := informers.NewSharedInformerFactory(reader, 0).Core().V1().Services().Informer()
	handled := &sync.Map{} // pod UID → struct{}
	thin := &eventThinner{share: req.EventShare}
	if req.EventShare <= 0 {
		thin.share = 1
	}
	work := make(chan *corev1.Pod, 1024)
	consider := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodRunning || nodes[p.Spec.NodeName] == nil {
			return
		}
		if _, dup := handled.LoadOrStore(p.UID, struct{}{}); dup {
			return
		}
		select {
		case work <- p:
		case <-ctx.Done():
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: consider, UpdateFunc: func(_, obj any) { consider(obj) }}); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{pods, services} {
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	}
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, services.HasSynced) {
		return fmt.Errorf("holders: the node simulator's watches did not sync: %w", context.Cause(ctx))
	}

	var done atomic.Int64
	if err := parallel(ctx, len(list), &done, func(ctx context.Context, i int) error { return list[i].register(ctx, req) }); err != nil {
		return err
	}
	for _, n := range list {
		wg.Add(1)
		go func() { defer wg.Done(); n.heartbeat(ctx) }()
	}
	if _, err := fmt.Fprintln(out, holdersNodesLine); err != nil {
		return err
	}

	const workers = 16
	errc := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-work:
					if err := nodes[p.Spec.NodeName].runPod(ctx, req, p, thin, &wg); err != nil && ctx.Err() == nil {
						select {
						case errc <- err:
						default:
						}
						cancel(err)
						return
					}
				}
			}
		}()
	}
	<-ctx.Done()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// holderClient is a client of cfg's identity as cluster.Start builds a
// simulated kubelet's.
func holderClient(cfg *rest.Config, name string) (kubernetes.Interface, error) {
	cfg.QPS, cfg.Burst, cfg.UserAgent = 50, 100, "kubeproof/"+name
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("holders: client of %s: %w", name, err)
	}
	return cs, nil
}

// register creates the node (a copy of the template), its status and its
// Lease, as the node itself.
func (n *nodeHolder) register(ctx context.Context, req holdersRequest) error {
	node := req.Node.DeepCopy()
	node.ObjectMeta = freshMeta(node.ObjectMeta, n.Name)
	node.Labels = map[string]string{}
	for k, v := range req.Node.Labels {
		node.Labels[k] = v
	}
	node.Labels[corev1.LabelHostname] = n.Name
	node.Spec.PodCIDR, node.Spec.PodCIDRs = n.CIDR, []string{n.CIDR}
	created, err := n.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("holders: creating node %s: %w", n.Name, err)
	}
	created.Status = node.Status
	updated, err := n.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("holders: node %s status: %w", n.Name, err)
	}
	l := req.Lease.DeepCopy()
	l.ObjectMeta = freshMeta(l.ObjectMeta, n.Name)
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: created.UID}}
	l.Spec.HolderIdentity = &n.Name
	lease, err := n.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("holders: lease %s: %w", n.Name, err)
	}
	n.mu.Lock()
	n.node, n.lease = updated, lease
	n.mu.Unlock()
	return nil
}

// heartbeat renews the node's Lease and reads its Node every
// holderRenewEvery, from a random phase, and reports its status every
// holderReportEvery, until ctx ends. Failures are retried at the next
// beat, as a kubelet's.
func (n *nodeHolder) heartbeat(ctx context.Context) {
	leases := n.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	next := time.Duration(rand.Int64N(int64(holderRenewEvery)))
	// The first unchanged report comes holderReportEvery after the node's
	// first status write, moved as the kubelet moves it, then every
	// holderReportEvery.
	lastReport := time.Now()
	reportAfter := holderReportEvery + kubelet.NextReportDelay(true, holderReportEvery, rand.Float64())
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		next = holderRenewEvery
		if cur, err := n.cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{ResourceVersion: "0"}); err == nil {
			n.mu.Lock()
			n.node = cur
			n.mu.Unlock()
		}
		// The Lease the node last wrote, renewed (re-read after a
		// conflict), as the kubelet renews it.
		l := n.lease.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		renewed, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := leases.Get(ctx, n.Name, metav1.GetOptions{}); gerr == nil {
				fresh.Spec.RenewTime = &now
				renewed, err = leases.Update(ctx, fresh, metav1.UpdateOptions{})
			}
		}
		if err == nil {
			n.lease = renewed
		}
		if time.Since(lastReport) >= reportAfter {
			n.mu.Lock()
			node := n.node.DeepCopy()
			n.mu.Unlock()
			now := metav1.Now()
			for i := range node.Status.Conditions {
				node.Status.Conditions[i].LastHeartbeatTime = now
			}
			if _, err := n.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err == nil {
				lastReport, reportAfter = time.Now(), holderReportEvery
			}
		}
	}
}

// runPod does what the node's kubelet writes for a pod bound to it: the
// kube-root-ca.crt watch of its namespace (once), its Running status, its
// events.
func (n *nodeHolder) runPod(ctx context.Context, req holdersRequest, p *corev1.Pod, thin *eventThinner, wg *sync.WaitGroup) error {
	k := n.pods.Add(1) - 1
	n.mu.Lock()
	watch := !n.watched[p.Namespace] && projectsRootCA(p)
	n.watched[p.Namespace] = n.watched[p.Namespace] || watch
	n.mu.Unlock()
	if watch {
		wg.Add(1)
		go func() { defer wg.Done(); watchRootCA(ctx, n.cs, p.Namespace) }()
	}
	// Events first: the kubelet records them while it starts the
	// containers, before the status that says Running.
	evs := req.Events
	firsts := int64(1)
	if req.Pullers != nil {
		firsts = int64(req.Pullers[n.Name])
	}
	if k >= firsts && req.LaterEvents != nil {
		evs = req.LaterEvents
	}
	for j, e := range evs {
		if e.Source.Component != kubelet.EventComponent || !thin.take() {
			continue // the scheduler's (the control writes those), or one the full run's broadcaster dropped
		}
		ev := copyEvent(e, p, j)
		ev.Source.Host = n.Name
		if _, err := n.cs.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("holders: event of pod %s as %s: %w", p.Name, n.Name, err)
		}
	}
	st := *req.PodStatus.DeepCopy()
	ip := nodePodIP(n.CIDR, int(k))
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	// The Node authorizer learns of the binding from its own watch; until
	// then the node may not write the pod (a kubelet retries too).
	err := retryForbidden(ctx, func() error {
		cur := p.DeepCopy()
		cur.Status = st
		_, err := n.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, gerr := n.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			fresh.Status = st
			_, err = n.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("holders: status of pod %s as %s: %w", p.Name, n.Name, err)
	}
	return nil
}

// projectsRootCA reports whether pod p mounts its namespace's
// kube-root-ca.crt (as every pod with a service account token volume
// does), which its kubelet then watches.
func projectsRootCA(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == serviceaccount.RootCAConfigMapName {
			return true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil && src.ConfigMap.Name == serviceaccount.RootCAConfigMapName {
					return true
				}
			}
		}
	}
	return false
}

// copyEvent is template event e (number j of its pod's) about pod p.
func copyEvent(e corev1.Event, p *corev1.Pod, j int) *corev1.Event {
	ev := e.DeepCopy()
	ev.ObjectMeta = freshMeta(ev.ObjectMeta, fmt.Sprintf("%s.%x%d", p.Name, time.Now().UnixNano(), j))
	ev.Namespace = p.Namespace
	ev.InvolvedObject.Name, ev.InvolvedObject.Namespace, ev.InvolvedObject.UID, ev.InvolvedObject.ResourceVersion = p.Name, p.Namespace, p.UID, ""
	return ev
}

// nodePodIP is the k-th pod IP of a node's /24 pod CIDR (from .2).
func nodePodIP(cidr string, k int) string {
	base, _, _ := strings.Cut(cidr, "/")
	prefix := base[:strings.LastIndexByte(base, '.')]
	return fmt.Sprintf("%s.%d", prefix, 2+k%250)
}

// retryForbidden runs write until it is not refused as Forbidden, for at
// most 30 s.
func retryForbidden(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := write()
		if err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchRootCA keeps a field-selected watch of ns's kube-root-ca.crt open
// through cs until ctx ends, as the kubelet's object cache does for a pod
// whose service account volume projects it.
func watchRootCA(ctx context.Context, cs kubernetes.Interface, ns string) {
	sel := fields.OneTermEqualSelector("metadata.name", serviceaccount.RootCAConfigMapName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return cs.CoreV1().ConfigMaps(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return cs.CoreV1().ConfigMaps(ns).Watch(ctx, o)
		},
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.ConfigMap{}, Handler: cache.ResourceEventHandlerFuncs{}})
	ctrl.RunWithContext(ctx)
}

// holders is a running set of node holders.
type holders struct {
	stop func() error // ends them and waits (once; later calls return the same)
	// failed is closed with err set if the holders fail before stop.
	failed chan struct{}
	err    error
}

// startHolders issues the node simulator's client certificate from c's CA
// and every node's token from c's API server (c must accept node tokens:
// cluster.Config.NodeTokens), starts the holders (a process of bin, or
// goroutines of this one when bin is empty) and waits until they have
// created the nodes.
func startHolders(ctx context.Context, bin, dir string, c *cluster.Cluster, admin kubernetes.Interface, nodes int, t *upTemplates, share float64) (*holders, error) {
	if err := cluster.EnsureNodeSimulatorRBAC(ctx, admin); err != nil {
		return nil, err
	}
	req := holdersRequest{Role: "holders", URL: c.URL, CAPEM: c.CA.CertPEM, Node: t.node, Lease: t.lease, PodStatus: t.pod.Status, Events: t.events, LaterEvents: t.laterEvents, Pullers: t.pullers, EventShare: share}
	var err error
	if req.Reader, err = c.CA.IssueClient(cluster.NodeSimulatorUser, nil); err != nil {
		return nil, err
	}
	for i := 0; i < nodes; i++ {
		name, cidr := cluster.SimulatedNode(i)
		token, err := c.IssueNodeToken(name)
		if err != nil {
			return nil, err
		}
		req.Nodes = append(req.Nodes, holderNode{Name: name, CIDR: cidr, Token: token})
	}
	h := &holders{failed: make(chan struct{})}
	var fail sync.Once
	failWith := func(err error) { fail.Do(func() { h.err = err; close(h.failed) }) }
	var lines io.Reader
	if bin == "" {
		pr, pw := io.Pipe()
		hctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			err := runHolders(hctx, req, pw)
			pw.CloseWithError(errors.Join(err, io.EOF))
			done <- err
		}()
		lines = pr
		h.stop = func() error { cancel(); err := <-done; pr.Close(); return err }
	} else {
		file := filepath.Join(dir, "holders.json")
		data, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "bench", "--up-control", file)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting the holders: %w", err)
		}
		lines = stdout
		h.stop = func() error {
			stdin.Close() // the holders end when their input does
			return cmd.Wait()
		}
	}
	h.stop = sync.OnceValue(h.stop)
	ready := make(chan struct{})
	go func() {
		s := bufio.NewScanner(lines)
		sawNodes := false
		for s.Scan() {
			if s.Text() == holdersNodesLine && !sawNodes {
				sawNodes = true
				close(ready)
			}
		}
		err := s.Err()
		if err == nil {
			err = errors.New("the holders ended")
		}
		failWith(fmt.Errorf("holders: %w", err))
	}()
	select {
	case <-ready:
		return h, nil
	case <-h.failed:
		_ = h.stop()
		return nil, h.err
	case <-ctx.Done():
		_ = h.stop()
		return nil, ctx.Err()
	}
}

// runHoldersProcess is the holders' process: it holds until its standard
// input ends or ctx does.
func runHoldersProcess(ctx context.Context, req holdersRequest, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	return runHolders(ctx, req, out)
}
