package endpointslicemirroring

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/endpointslice"
	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// Name is the controller's name in logs and queue metrics.
const Name = "endpointslicemirroring"

// Controller is the informer loop around Reconcile, keyed by Endpoints
// (namespace/name, the service's): an Endpoints change, a selector-less
// service's creation or deletion, a service gaining or losing its
// selector, and a mirrored slice changed or deleted by someone else
// cause a sync.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	endpoints corelisters.EndpointsLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	maxPer    int
	tracker   *endpointslice.Tracker
	// batchPeriod delays the syncs Endpoints changes cause.
	batchPeriod time.Duration
}

// Option adjusts a Controller.
type Option func(*Controller)

// WithRecorder records upstream's warnings on the Endpoints
// (InvalidIPAddress, TooManyAddressesToMirror) and failed writes
// (FailedToUpdateEndpointSlices) through r.
func WithRecorder(r record.EventRecorder) Option { return func(c *Controller) { c.recorder = r } }

// WithBatchPeriod delays the sync an Endpoints change causes by d
// (--mirroring-endpointslice-updates-batch-period); 0 does not delay.
func WithBatchPeriod(d time.Duration) Option { return func(c *Controller) { c.batchPeriod = d } }

// WithMaxEndpointsPerSubset sets --mirroring-max-endpoints-per-subset
// (DefaultMaxEndpointsPerSubset when 0).
func WithMaxEndpointsPerSubset(n int) Option { return func(c *Controller) { c.maxPer = n } }

// New wires the controller to the service, endpoints and EndpointSlice
// informers (start their factory after New).
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, endpoints coreinformers.EndpointsInformer,
	endpointSlices discoveryinformers.EndpointSliceInformer, opts ...Option) (*Controller, error) {
	c := &Controller{
		client:    client,
		services:  services.Lister(),
		endpoints: endpoints.Lister(),
		slices:    endpointSlices.Lister(),
		synced:    []cache.InformerSynced{services.Informer().HasSynced, endpoints.Informer().HasSynced, endpointSlices.Informer().HasSynced},
		queue:     workloop.NewQueue(Name),
		maxPer:    DefaultMaxEndpointsPerSubset,
		tracker:   endpointslice.NewTracker(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.maxPer <= 0 {
		c.maxPer = DefaultMaxEndpointsPerSubset
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{services.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueSelectorless,
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Service)
				n, ok2 := cur.(*corev1.Service)
				if ok1 && ok2 && (o.Spec.Selector == nil) != (n.Spec.Selector == nil) {
					c.enqueue(cur)
				}
			},
			DeleteFunc: c.enqueueSelectorless,
		}},
		{endpoints.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueBatched,
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Endpoints)
				n, ok2 := cur.(*corev1.Endpoints)
				if ok1 && ok2 && (ShouldMirror(o) || ShouldMirror(n)) {
					c.enqueueBatched(cur)
				}
			},
			DeleteFunc: c.enqueueBatched,
		}},
		{endpointSlices.Informer(), c.tracker.Handler(ControllerName, c.queue)},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("%s: adding event handler: %w", Name, err)
		}
	}
	return c, nil
}

// Run waits for the caches, then syncs Endpoints with workers goroutines
// until ctx is done; it returns once they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, Name, c.queue, c.synced...); err != nil {
		return err
	}
	workloop.Run(ctx, Name, c.queue, workers, c.sync)
	return nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueBatched(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.AddAfter(key, c.batchPeriod)
	}
}

func (c *Controller) enqueueSelectorless(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if svc, ok := obj.(*corev1.Service); ok && svc.Spec.Selector == nil {
		c.enqueue(svc)
	}
}

// sync converges the mirrored slices of the Endpoints key names.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ep, err := c.endpoints.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) {
		ep = nil
	} else if err != nil {
		return fmt.Errorf("getting endpoints %s: %w", key, err)
	}
	selectorless := false
	if ep != nil {
		svc, err := c.services.Services(ns).Get(name)
		switch {
		case err == nil:
			selectorless = svc.Spec.Selector == nil
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("getting service %s: %w", key, err)
		}
	}
	listed, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromValidatedSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName}))
	if err != nil {
		return fmt.Errorf("listing mirrored slices of %s: %w", key, err)
	}
	listed = slices.DeleteFunc(slices.Clone(listed), func(s *discoveryv1.EndpointSlice) bool { return s.DeletionTimestamp != nil })
	mirrored := ep != nil && selectorless && ShouldMirror(ep)
	if !mirrored && len(listed) == 0 {
		c.tracker.Forget(key)
		return nil
	}
	if c.tracker.Stale(key, listed) {
		return fmt.Errorf("syncing %s: %w", key, endpointslice.ErrStale)
	}
	res := Reconcile(Input{Endpoints: ep, ServiceWithoutSelector: selectorless, Slices: listed, MaxEndpointsPerSubset: c.maxPer})
	if c.recorder != nil && ep != nil {
		if res.InvalidAddresses > 0 {
			c.recorder.Eventf(ep, corev1.EventTypeWarning, "InvalidIPAddress",
				"Skipped %d invalid IP addresses when mirroring to EndpointSlices", res.InvalidAddresses)
		}
		if res.OverMax > 0 {
			c.recorder.Eventf(ep, corev1.EventTypeWarning, "TooManyAddressesToMirror",
				"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", c.maxPer, res.OverMax)
		}
	}
	if res.Plan.Empty() {
		return nil
	}
	slog.Debug("endpointslicemirroring: writing slices", "endpoints", key,
		"create", len(res.Plan.Create), "update", len(res.Plan.Update), "delete", len(res.Plan.Delete))
	err = endpointslice.Write(ctx, c.client.DiscoveryV1().EndpointSlices(ns), c.tracker, key, res.Plan)
	if err != nil {
		if c.recorder != nil && ep != nil && !apierrors.IsConflict(err) {
			c.recorder.Eventf(ep, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
				"Error updating Endpoint Slices for Endpoints %s/%s: %v", ns, name, err)
		}
		return fmt.Errorf("writing mirrored slices of %s: %w", key, err)
	}
	return nil
}
