// Package nodelifecycle is kubeproof's node lifecycle controller: it notices
// kubelets that stopped renewing their Lease (or posting status), marks
// their nodes' conditions Unknown, keeps the condition taints in step with
// the conditions, and — as the NoExecute taint manager — evicts pods from
// nodes with NoExecute taints they do not tolerate, at once or after their
// tolerationSeconds.
//
// The not-ready/unreachable NoExecute taints are added at a rate limited
// per zone (topology.kubernetes.io/zone), as kube-controller-manager's
// --node-eviction-rate, --secondary-node-eviction-rate,
// --unhealthy-zone-threshold and --large-cluster-size-threshold: a zone in
// partial disruption slows down or stops, and when every zone is fully
// disrupted the taints are removed and tainting stops altogether.
//
// The NoExecute taints follow the Ready status a monitor pass read, the
// NoSchedule ones the conditions it leaves (NoExecuteReady): when the
// controller turns Ready from True to Unknown, the next pass queues the
// node for its NoExecute taint, as upstream's processTaintBaseEviction.
//
// A node's pods are marked not Ready (with the node's NodeNotReady event)
// only on the pass on which the controller itself turns the node's Ready
// from True to Unknown, and on later passes while an earlier marking failed
// (DecideNotReady, upstream's monitorNodeHealth rule). A pod newly bound to
// a node (or first seen bound) whose Ready the controller last recorded as
// not True is marked at once (DecideBoundPod, upstream's processPod).
//
// DecideNode, DecideNotReady, DecideBoundPod, DecideEviction,
// DecideDisruption, GateNoExecute and TokenBucket are pure and take the
// time as input; the loop reads time from an injected clock, so tests drive
// it with a fake one.
// Properties: GC-1 (taint-based eviction is one of the allowed reasons to
// delete a pod); the scheduler's SCHED-3 relies on the taints set here.
package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coordinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// NodeLeaseNamespace is where kubelets keep their Leases.
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// EventTaintManagerEviction is the event reason for evictions, as upstream.
const EventTaintManagerEviction = "TaintManagerEviction"

// podsByNodeIndex indexes pods by spec.nodeName under upstream's index
// name, so a pod informer shared with other components of the process that
// already index it so (the kubelets' in the node-memory benchmark) keeps
// one index, not two.
const podsByNodeIndex = "spec.nodeName"

// Config holds the controller's periods (upstream flag names in comments).
type Config struct {
	MonitorPeriod time.Duration // --node-monitor-period (5s)
	MonitorGrace  time.Duration // --node-monitor-grace-period (40s)
	StartupGrace  time.Duration // --node-startup-grace-period (1m)
	Defaults      DefaultTolerations
	// Rates limit NoExecute tainting per zone; the zero value means
	// DefaultEvictionRates.
	Rates EvictionRates
}

// DefaultConfig is upstream's defaults.
func DefaultConfig() Config {
	return Config{MonitorPeriod: 5 * time.Second, MonitorGrace: 40 * time.Second, StartupGrace: time.Minute,
		Defaults: DefaultTolerations{NotReadySeconds: 300, UnreachableSeconds: 300}, Rates: DefaultEvictionRates()}
}

// Controller is the node lifecycle controller with its taint manager.
type Controller struct {
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	leaseLister coordlisters.LeaseLister
	podLister   corelisters.PodLister
	podIndexer  cache.Indexer
	synced      []cache.InformerSynced
	recorder    record.EventRecorder
	clock       clock.WithTicker
	cfg         Config
	queue       workqueue.TypedRateLimitingInterface[string]
	// podUpdates are the pods newly bound to a node (or first seen
	// bound), for processPod.
	podUpdates workqueue.TypedRateLimitingInterface[string]

	mu         sync.Mutex
	health     map[string]*Health
	underTaint map[string]time.Time // pod key → when first seen under NoExecute taints
	// Zone-limited NoExecute tainting: each zone's state and token
	// bucket, and the nodes waiting for a NoExecute taint in FIFO order.
	zoneStates map[string]ZoneState
	buckets    map[string]*TokenBucket
	pending    map[string][]string // zone → node names
	queued     map[string]string   // node name → zone, for nodes in pending
	// For /metrics (metrics.go): each zone's size and not-Ready count at
	// the last pass, and the NoExecute taints added per zone.
	zoneStats map[string]zoneStats
	evictions map[string]int
	// known are the nodes a monitor pass has seen, by name, with their
	// UIDs: a node new to it is announced with RegisteredNode, one gone
	// with RemovingNode.
	known map[string]types.UID
}

// New wires the controller to shared informers.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, leases coordinformers.LeaseInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, clk clock.WithTicker, cfg Config) (*Controller, error) {
	if cfg.Rates == (EvictionRates{}) {
		cfg.Rates = DefaultEvictionRates()
	}
	c := &Controller{
		zoneStates: map[string]ZoneState{}, buckets: map[string]*TokenBucket{}, pending: map[string][]string{}, queued: map[string]string{},
		zoneStats: map[string]zoneStats{}, evictions: map[string]int{}, known: map[string]types.UID{},
		client: client, nodeLister: nodes.Lister(), leaseLister: leases.Lister(), podLister: pods.Lister(),
		podIndexer: pods.Informer().GetIndexer(),
		synced:     []cache.InformerSynced{nodes.Informer().HasSynced, leases.Informer().HasSynced, pods.Informer().HasSynced},
		recorder:   recorder, clock: clk, cfg: cfg,
		queue:      workloop.NewQueueWithClock("node_lifecycle_taint_manager", clk),
		podUpdates: workloop.NewQueueWithClock("node_lifecycle_controller_pods", clk),
		health:     map[string]*Health{},
		underTaint: map[string]time.Time{},
	}
	if err := pods.Informer().AddIndexers(cache.Indexers{podsByNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing pods by node: %w", err)
	}
	enqueuePod := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
				c.queue.Add(key)
			}
		}
	}
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			enqueuePod(obj)
			c.enqueueBound(nil, obj)
		},
		UpdateFunc: func(oldObj, obj any) {
			enqueuePod(obj)
			c.enqueueBound(oldObj, obj)
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.forget(key)
			}
		},
	})
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueuePodsOn(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
			if !taintsEqual(o.Spec.Taints, n.Spec.Taints) {
				c.enqueuePodsOn(n)
			}
		},
	})
	return c, nil
}

func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

func (c *Controller) enqueuePodsOn(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	objs, _ := c.podIndexer.ByIndex(podsByNodeIndex, node.Name)
	for _, o := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
			c.queue.Add(key)
		}
	}
}

// Run monitors nodes every MonitorPeriod and runs the taint manager's
// workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "node lifecycle controller", c.queue, c.synced...); err != nil {
		c.podUpdates.ShutDown()
		return err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		workloop.Run(ctx, "nodelifecycle", c.queue, workers, c.syncPod)
	}()
	ticker := c.clock.NewTicker(c.cfg.MonitorPeriod)
	defer ticker.Stop()
	tainting := c.clock.NewTicker(EvictionPeriod)
	defer tainting.Stop()
	c.MonitorNodes(ctx)
	// The pods the informer listed are queued as newly bound; after the
	// first pass each finds its node's health recorded, so a pod on a node
	// already not Ready is marked. Upstream starts its pod workers
	// alongside the first pass, so which pods find a record is a race. A
	// failing pod is retried with back-off for as long as it fails, as
	// upstream's processPod puts it back rate limited with no limit.
	go func() {
		defer wg.Done()
		workloop.RunWithMaxRetries(ctx, "nodelifecycle-pods", c.podUpdates, workers, math.MaxInt, c.processPod)
	}()
	c.TaintingPass(ctx)
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-ticker.C():
			c.MonitorNodes(ctx)
		case <-tainting.C():
			c.TaintingPass(ctx)
		}
	}
}

// MonitorNodes runs one health pass over every node.
func (c *Controller) MonitorNodes(ctx context.Context) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	c.announceNodes(nodes)
	seen := map[string]bool{}
	zones := map[string][]corev1.ConditionStatus{}
	for _, node := range nodes {
		seen[node.Name] = true
		lease, err := c.leaseLister.Leases(NodeLeaseNamespace).Get(node.Name)
		if err != nil {
			lease = nil
		}
		c.mu.Lock()
		prev := c.health[node.Name]
		c.mu.Unlock()
		dec := DecideNode(node, lease, prev, now, Timing{MonitorGrace: c.cfg.MonitorGrace, StartupGrace: c.cfg.StartupGrace})
		zone := ZoneKey(node)
		queue := false
		if dec.Taints != nil {
			dec.Taints, queue = GateNoExecute(node.Spec.Taints, dec.Taints)
		}
		conds := node.Status.Conditions
		if dec.Conditions != nil {
			conds = dec.Conditions
		}
		ready := conditionStatus(conds, corev1.NodeReady)
		observed := conditionStatus(node.Status.Conditions, corev1.NodeReady)
		if observed == corev1.ConditionTrue {
			// Read Ready: no NoExecute taint is due (NoExecuteReady), also
			// when this pass turns it Unknown.
			c.dequeueTainting(node.Name)
		}
		if !ExcludedFromDisruption(node) {
			zones[zone] = append(zones[zone], ready)
		}
		// The record keeps the Ready read until the pass's status write
		// succeeds (as upstream's tryUpdateNodeHealth stores the node's
		// health after its write), so processPod never marks a pod by a
		// status the node was never given; it holds the new one before the
		// pass lists the node's pods to mark them, so a pod bound meanwhile
		// is marked by one or the other.
		c.mu.Lock()
		h := dec.Health
		h.Ready = observed
		c.health[node.Name] = &h
		c.mu.Unlock()
		statusWritten, markErr, err := c.apply(ctx, node, dec, func() {
			c.mu.Lock()
			h.Ready = dec.Health.Ready
			c.mu.Unlock()
		})
		if statusWritten {
			// As upstream: the pods are marked again next pass if any
			// could not be; a pass that fails to write the node's status
			// leaves the retry as it was.
			c.mu.Lock()
			h.RetryMarkPods = markErr != nil
			c.mu.Unlock()
		}
		if markErr != nil {
			slog.Debug("node lifecycle: could not mark every pod not ready; retrying next pass", "node", node.Name, "err", markErr)
		}
		if err != nil {
			slog.Debug("node lifecycle: update failed; retrying next pass", "node", node.Name, "err", err)
		} else if queue {
			// Queued once its new conditions are written, so the tainting
			// pass reads them.
			c.enqueueTainting(zone, node.Name)
		}
	}
	c.mu.Lock()
	for name := range c.health {
		if !seen[name] {
			delete(c.health, name)
		}
	}
	for name := range c.queued {
		if !seen[name] {
			c.dequeueLocked(name)
		}
	}
	c.mu.Unlock()
	c.handleDisruption(ctx, zones, nodes, now)
}

// announceNodes records RegisteredNode for each node of nodes the
// controller has not seen before and RemovingNode for each known node no
// longer among them, as kube-controller-manager's node lifecycle
// controller does on every monitor pass (so again for every node after a
// restart): on the node by its UID, "Node <name> event: Registered Node
// <name> in Controller" and "... Removing Node <name> from Controller".
func (c *Controller) announceNodes(nodes []*corev1.Node) {
	c.mu.Lock()
	added, removed := classifyNodes(c.known, nodes)
	for _, n := range added {
		c.known[n.Name] = n.UID
	}
	for name := range removed {
		delete(c.known, name)
	}
	c.mu.Unlock()
	for _, n := range added {
		c.nodeEvent(n.Name, n.UID, "RegisteredNode", fmt.Sprintf("Registered Node %s in Controller", n.Name))
	}
	for name, uid := range removed {
		c.nodeEvent(name, uid, "RemovingNode", fmt.Sprintf("Removing Node %s from Controller", name))
	}
}

// classifyNodes returns the nodes of nodes not in known, and the known
// nodes (name to UID) not among nodes. A node recreated under the same
// name is the same node to it, as to upstream's controller.
func classifyNodes(known map[string]types.UID, nodes []*corev1.Node) (added []*corev1.Node, removed map[string]types.UID) {
	present := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		present[n.Name] = true
		if _, ok := known[n.Name]; !ok {
			added = append(added, n)
		}
	}
	for name, uid := range known {
		if !present[name] {
			if removed == nil {
				removed = map[string]types.UID{}
			}
			removed[name] = uid
		}
	}
	return added, removed
}

// nodeRef refers to the node name (uid) as upstream's node events do: v1
// Node by name and UID, without a resourceVersion.
func nodeRef(name string, uid types.UID) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// nodeEvent records a Normal event about the node name (uid), its message
// prefixed "Node <name> event: " as upstream's node events.
func (c *Controller) nodeEvent(name string, uid types.UID, reason, event string) {
	c.recorder.Eventf(nodeRef(name, uid), corev1.EventTypeNormal, reason, "Node %s event: %s", name, event)
}

// apply writes dec: the node's new status; then, as upstream, the node's
// NodeNotReady event ("Node <name> status is now: NodeNotReady") and the
// marking of its pods not Ready, as dec says; then the node's new taints.
// statusWritten is whether the status write, if any, succeeded (the
// marking follows it); markErr says which pods could not be marked.
// written is called once the status is written (or had nothing to write),
// before the event and the marking.
func (c *Controller) apply(ctx context.Context, node *corev1.Node, dec NodeDecision, written func()) (statusWritten bool, markErr, err error) {
	current := node
	if dec.Conditions != nil {
		next := node.DeepCopy()
		next.Status.Conditions = dec.Conditions
		updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return false, nil, fmt.Errorf("updating status of node %s: %w", node.Name, err)
		}
		current = updated
	}
	written()
	if dec.RecordNotReady {
		c.recorder.Eventf(nodeRef(node.Name, node.UID), corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
	}
	if dec.MarkPodsNotReady {
		objs, _ := c.podIndexer.ByIndex(podsByNodeIndex, node.Name)
		var pods []*corev1.Pod
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p)
			}
		}
		var errs []error
		for _, p := range PodsToMarkNotReady(pods) {
			if err := c.markNotReady(ctx, p); err != nil {
				errs = append(errs, err)
			}
		}
		markErr = errors.Join(errs...)
	}
	if dec.Taints != nil {
		next := current.DeepCopy()
		next.Spec.Taints = dec.Taints
		if _, err := c.client.CoreV1().Nodes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return true, markErr, fmt.Errorf("updating taints of node %s: %w", node.Name, err)
		}
	}
	return true, markErr, nil
}

// markNotReady turns a pod's Ready condition False. It fails if the write
// fails (the next pass retries) unless the pod is gone.
func (c *Controller) markNotReady(ctx context.Context, pod *corev1.Pod) error {
	next := pod.DeepCopy()
	for i := range next.Status.Conditions {
		if next.Status.Conditions[i].Type == corev1.PodReady {
			next.Status.Conditions[i].Status = corev1.ConditionFalse
			next.Status.Conditions[i].LastTransitionTime = metav1.NewTime(c.clock.Now())
		}
	}
	_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // gone: nothing to tell
	}
	// As upstream's node controller, also when the write failed for
	// another reason.
	c.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	if err != nil {
		return fmt.Errorf("marking pod %s/%s not ready: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.underTaint, key)
	c.mu.Unlock()
}

// syncPod is the taint manager's decision loop for one pod.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	node, err := c.nodeLister.Get(pod.Spec.NodeName)
	if err != nil {
		c.forget(key)
		return nil
	}
	var noExecute []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	now := c.clock.Now()
	c.mu.Lock()
	since, tracked := c.underTaint[key]
	if !tracked {
		since = now
	}
	c.mu.Unlock()
	switch d := DecideEviction(pod, noExecute, c.cfg.Defaults, since, now); d.Kind {
	case Keep:
		if tracked {
			c.recorder.Eventf(pod, corev1.EventTypeNormal, EventTaintManagerEviction, "Cancelling deletion of Pod %s", key)
		}
		c.forget(key)
	case EvictAt:
		c.mu.Lock()
		c.underTaint[key] = since
		c.mu.Unlock()
		c.queue.AddAfter(key, d.At.Sub(now))
	case EvictNow:
		c.forget(key)
		return c.evict(ctx, pod)
	}
	return nil
}

// evict marks the pod with DisruptionTarget=True (reason
// DeletionByTaintManager) through a strategic merge patch of its status,
// then deletes it, as upstream's taint manager. A failed mark fails the
// sync (the key is retried) and nothing is deleted; the patch carries the
// pod's UID, so a newer pod of the same name is never marked.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	c.recorder.Eventf(pod, corev1.EventTypeNormal, EventTaintManagerEviction, "Marking for deletion Pod %s", key)
	if !markedByTaintManager(pod) {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": pod.UID},
			"status": map[string]any{"conditions": []corev1.PodCondition{{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByTaintManager,
				Message: MessageDeletionByTaintManager, LastTransitionTime: metav1.NewTime(c.clock.Now()),
			}}},
		})
		if err != nil {
			return fmt.Errorf("encoding the DisruptionTarget patch of pod %s: %w", key, err)
		}
		_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("marking pod %s as a disruption target: %w", key, err)
		}
	}
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("evicting pod %s: %w", key, err)
	}
	return nil
}

// The DisruptionTarget condition of a taint-based eviction, as upstream.
const (
	ReasonDeletionByTaintManager  = "DeletionByTaintManager"
	MessageDeletionByTaintManager = "Taint manager: deleting due to NoExecute taint"
)

func markedByTaintManager(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			return c.Status == corev1.ConditionTrue && c.Reason == ReasonDeletionByTaintManager
		}
	}
	return false
}
