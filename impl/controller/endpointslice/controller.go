package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/endpoints"
	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// Name is the controller's name in logs and queue metrics.
const Name = "endpointslice"

// Controller is the informer loop around Reconcile: a service is synced
// when it changes, when a pod its selector matches (before or after the
// change) is added, changed in a way its endpoint shows, or deleted, when
// one of its slices is changed or deleted by someone else, and when a
// node change leaves its topology-aware hints overloading a zone.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	maxPer   int
	tracker  *Tracker
	triggers *endpoints.TriggerTimes
	topology *topologyCache
	// batchPeriod delays the syncs pod changes cause (WithBatchPeriod).
	batchPeriod time.Duration
}

// Option adjusts a Controller.
type Option func(*Controller)

// WithRecorder records FailedToUpdateEndpointSlices warnings and the
// topology-aware hints' events on the service (as upstream) through r.
func WithRecorder(r record.EventRecorder) Option { return func(c *Controller) { c.recorder = r } }

// WithBatchPeriod delays the sync a pod change causes by d
// (kube-controller-manager's --endpointslice-updates-batch-period), so
// the changes of many pods in that window are written together; service
// changes are synced at once. 0 (the default) does not delay.
func WithBatchPeriod(d time.Duration) Option { return func(c *Controller) { c.batchPeriod = d } }

// WithMaxEndpointsPerSlice sets kube-controller-manager's
// --max-endpoints-per-slice (1–1000; DefaultMaxEndpointsPerSlice when 0).
func WithMaxEndpointsPerSlice(n int) Option { return func(c *Controller) { c.maxPer = n } }

// New wires the controller to the service, pod, node and EndpointSlice
// informers (start their factory after New).
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, pods coreinformers.PodInformer,
	nodes coreinformers.NodeInformer, endpointSlices discoveryinformers.EndpointSliceInformer, opts ...Option) (*Controller, error) {
	c := &Controller{
		client:   client,
		services: services.Lister(),
		pods:     pods.Lister(),
		nodes:    nodes.Lister(),
		slices:   endpointSlices.Lister(),
		queue:    workloop.NewQueue(Name),
		maxPer:   DefaultMaxEndpointsPerSlice,
		tracker:  NewTracker(),
		triggers: endpoints.NewTriggerTimes(),
		topology: newTopologyCache(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.maxPer <= 0 {
		c.maxPer = DefaultMaxEndpointsPerSlice
	}
	if c.maxPer > MaxMaxEndpointsPerSlice {
		return nil, fmt.Errorf("%s: max endpoints per slice %d is over %d", Name, c.maxPer, MaxMaxEndpointsPerSlice)
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{services.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueue, UpdateFunc: func(_, obj any) { c.enqueue(obj) }, DeleteFunc: c.enqueue,
		}},
		{pods.Informer(), c.podServices().Handler()},
		{endpointSlices.Informer(), c.tracker.Handler(ControllerName, c.queue)},
		{nodes.Informer(), c.topology.nodeHandler(c.nodes, c.queue.Add)},
	}
	for _, h := range handlers {
		reg, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("%s: adding event handler: %w", Name, err)
		}
		// Syncs wait until the handlers have seen the first lists (the
		// topology is computed from every node before a service's hints);
		// a registration has synced only once its informer has.
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Run waits for the caches, then syncs services with workers goroutines
// until ctx is done; it returns once they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, Name, c.queue, c.synced...); err != nil {
		return err
	}
	workloop.Run(ctx, Name, c.queue, workers, c.sync)
	return nil
}

// podServices enqueues the services a pod change can affect, after the
// batch period.
func (c *Controller) podServices() endpoints.PodServices {
	return endpoints.PodServices{Services: c.services, Queue: c.queue, BatchPeriod: c.batchPeriod}
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// sync converges the slices of the service key names.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector deletes the slices it owned.
		c.tracker.Forget(key)
		c.triggers.Forget(ns, name)
		c.topology.setHints(key, false, nil)
		return nil
	} else if err != nil {
		return fmt.Errorf("getting service %s: %w", key, err)
	}
	if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
		c.topology.setHints(key, false, nil) // its slices are no longer ours to hint
		return nil
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return fmt.Errorf("listing pods of %s: %w", key, err)
	}
	listed, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromValidatedSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName}))
	if err != nil {
		return fmt.Errorf("listing endpoint slices of %s: %w", key, err)
	}
	// Slices being deleted are not counted (nor written).
	listed = slices.DeleteFunc(slices.Clone(listed), func(s *discoveryv1.EndpointSlice) bool { return s.DeletionTimestamp != nil })
	if c.tracker.Stale(key, listed) {
		return fmt.Errorf("syncing %s: %w", key, ErrStale)
	}
	// Observed on every sync, written or not, as upstream's tracker: a
	// later write carries only changes newer than this sync's.
	triggered := c.triggers.Observe(svc, pods)
	topo, zoneHints := c.topology.get(key)
	plan := Reconcile(Input{Service: svc, Pods: pods, Slices: listed, Nodes: c.nodeZone, MaxEndpointsPerSlice: c.maxPer,
		Topology: topo, ZoneHints: zoneHints}).WithTriggerTime(triggered)
	if err := c.write(ctx, key, svc, plan); err != nil {
		return err
	}
	// Remembered (and told) once written, so a retry decides from the
	// hints the slices really give.
	c.topology.setHints(key, topologyAuto(svc), plan.ZoneHints)
	if c.recorder != nil {
		for _, e := range plan.Events {
			c.recorder.Event(svc, e.Type, e.Reason, e.Message)
		}
	}
	if len(plan.SkippedPods) > 0 {
		return fmt.Errorf("syncing %s: pods %v left out: their nodes are unknown", key, plan.SkippedPods)
	}
	return nil
}

// nodeZone gives a node's zone label and whether the node exists.
func (c *Controller) nodeZone(name string) (string, bool) {
	n, err := c.nodes.Get(name)
	if err != nil {
		return "", false
	}
	return n.Labels[corev1.LabelTopologyZone], true
}

// write makes plan's writes (Write), recording a failure as a warning
// event on the service.
func (c *Controller) write(ctx context.Context, key string, svc *corev1.Service, plan Plan) error {
	if plan.Empty() {
		return nil
	}
	slog.Debug("endpointslice: writing slices", "service", key, "create", len(plan.Create), "update", len(plan.Update), "delete", len(plan.Delete))
	err := Write(ctx, c.client.DiscoveryV1().EndpointSlices(svc.Namespace), c.tracker, key, plan)
	if err == nil {
		return nil
	}
	// A conflict means the cache is behind: the retry decides again from
	// the newer state, without an event.
	if c.recorder != nil && !apierrors.IsConflict(err) {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
	}
	return fmt.Errorf("writing endpoint slices of %s: %w", key, err)
}

// Write makes plan's writes through client, creates first, then updates,
// then deletes, as upstream (new endpoints are served before old ones
// go), recording each in tracker under key. It stops at the first
// failure; a create refused because the namespace is terminating ends it
// without error (the owner goes with the namespace).
func Write(ctx context.Context, client discoveryclient.EndpointSliceInterface, tracker *Tracker, key string, plan Plan) error {
	for _, s := range plan.Create {
		created, err := client.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		if err != nil {
			return err
		}
		tracker.Wrote(key, created)
	}
	for _, s := range plan.Update {
		updated, err := client.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		tracker.Wrote(key, updated)
	}
	for _, s := range plan.Delete {
		uid := s.UID
		err := client.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		tracker.Deleted(key, s)
	}
	return nil
}
