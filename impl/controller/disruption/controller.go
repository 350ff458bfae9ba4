package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// Controller is the informer loop around Decide: budgets are enqueued when
// they change and when a pod they select (or a pod's controller's scale)
// changes; sync writes the decided status through /status.
type Controller struct {
	client      kubernetes.Interface
	pdbs        policylisters.PodDisruptionBudgetLister
	pods        corelisters.PodLister
	replicaSets appslisters.ReplicaSetLister
	deployments appslisters.DeploymentLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	// staleQueue holds pods whose DisruptionTarget condition goes stale.
	staleQueue workqueue.TypedRateLimitingInterface[string]
	now        func() time.Time
	recorder   record.EventRecorder
}

// Option adjusts a Controller.
type Option func(*Controller)

// WithRecorder records the controller's events (NoPods,
// CalculateExpectedPodCountFailed, UnmanagedPods, NotDeleted) through r;
// without it they are only logged at debug level.
func WithRecorder(r record.EventRecorder) Option { return func(c *Controller) { c.recorder = r } }

// New wires the controller to factory's PodDisruptionBudget, Pod,
// ReplicaSet and Deployment informers (start the factory after New).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, opts ...Option) (*Controller, error) {
	pdbInf := factory.Policy().V1().PodDisruptionBudgets()
	podInf := factory.Core().V1().Pods()
	rsInf := factory.Apps().V1().ReplicaSets()
	dInf := factory.Apps().V1().Deployments()
	c := &Controller{
		client:      client,
		pdbs:        pdbInf.Lister(),
		pods:        podInf.Lister(),
		replicaSets: rsInf.Lister(),
		deployments: dInf.Lister(),
		synced: []cache.InformerSynced{pdbInf.Informer().HasSynced, podInf.Informer().HasSynced,
			rsInf.Informer().HasSynced, dInf.Informer().HasSynced},
		queue:      workloop.NewQueue("disruption"),
		staleQueue: workloop.NewQueue("disruption_stale_pod_disruption"),
		now:        time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{pdbInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueuePDB,
			UpdateFunc: func(_, obj any) { c.enqueuePDB(obj) },
			DeleteFunc: c.enqueuePDB,
		}},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				c.enqueueForPod(obj)
				c.enqueueStale(obj)
			},
			UpdateFunc: func(old, obj any) {
				c.enqueueForPod(old)
				c.enqueueForPod(obj)
				c.enqueueStale(obj)
			},
			DeleteFunc: c.enqueueForPod,
		}},
		{rsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueNamespace, UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) }, DeleteFunc: c.enqueueNamespace,
		}},
		{dInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueNamespace, UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) }, DeleteFunc: c.enqueueNamespace,
		}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("disruption: adding event handler: %w", err)
		}
	}
	return c, nil
}

// Run waits for the caches, then syncs budgets with workers goroutines
// until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "disruption", c.queue, c.synced...); err != nil {
		c.staleQueue.ShutDown()
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); workloop.Run(ctx, "disruption-stale-pods", c.staleQueue, 1, c.syncStale) }()
	workloop.Run(ctx, "disruption", c.queue, workers, c.sync)
	wg.Wait()
	return nil
}

func (c *Controller) enqueuePDB(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// enqueueForPod enqueues the budgets whose selector matches the pod.
func (c *Controller) enqueueForPod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	pdbs, err := c.pdbs.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueuePDB(pdb)
		}
	}
}

// enqueueNamespace enqueues every budget in a changed controller's
// namespace (its scale may be behind a budget's expectedPods).
func (c *Controller) enqueueNamespace(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	pdbs, err := c.pdbs.PodDisruptionBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		c.enqueuePDB(pdb)
	}
}

// observe gathers what Decide needs for pdb from the listers.
func (c *Controller) observe(pdb *policyv1.PodDisruptionBudget) (Observed, error) {
	o := Observed{PDB: pdb, Now: c.now(),
		ReplicaSets: map[string]*appsv1.ReplicaSet{}, Deployments: map[string]*appsv1.Deployment{}}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return o, fmt.Errorf("parsing selector of %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	if o.Pods, err = c.pods.Pods(pdb.Namespace).List(sel); err != nil {
		return o, fmt.Errorf("listing pods: %w", err)
	}
	rss, err := c.replicaSets.ReplicaSets(pdb.Namespace).List(labels.Everything())
	if err != nil {
		return o, fmt.Errorf("listing replicasets: %w", err)
	}
	for _, rs := range rss {
		o.ReplicaSets[rs.Name] = rs
	}
	ds, err := c.deployments.Deployments(pdb.Namespace).List(labels.Everything())
	if err != nil {
		return o, fmt.Errorf("listing deployments: %w", err)
	}
	for _, d := range ds {
		o.Deployments[d.Name] = d
	}
	return o, nil
}

// record records ev on its pod, or on pdb.
func (c *Controller) record(ev Event, pdb *policyv1.PodDisruptionBudget) {
	var obj runtime.Object = pdb
	if ev.Pod != nil {
		obj = ev.Pod
	}
	if c.recorder == nil {
		slog.Debug("disruption event", "pdb", pdb.Namespace+"/"+pdb.Name, "reason", ev.Reason, "message", ev.Message)
		return
	}
	c.recorder.Event(obj, ev.Type, ev.Reason, ev.Message)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pdb, err := c.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading budget %s: %w", key, err)
	}
	o, err := c.observe(pdb)
	if err != nil {
		c.record(Event{Type: corev1.EventTypeWarning, Reason: EventNoPods, Message: fmt.Sprintf("Failed to get pods: %v", err)}, pdb)
		return err
	}
	d := Decide(o)
	for _, ev := range d.Events {
		c.record(ev, pdb)
	}
	if d.Err != nil {
		slog.Debug("disruption budget fail-safe", "pdb", key, "err", d.Err)
	}
	if !d.RecheckAt.IsZero() {
		c.queue.AddAfter(key, d.RecheckAt.Sub(o.Now))
	}
	if !d.Write {
		return nil
	}
	upd := pdb.DeepCopy()
	upd.Status = d.Status
	// The update carries the cached resourceVersion: a status written
	// since (an eviction decrementing disruptionsAllowed) makes it a
	// conflict, and the retry decides again from the newer budget.
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of budget %s: %w", key, err)
	}
	return nil
}
