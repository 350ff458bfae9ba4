package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// Name is the controller's name in logs and queue metrics.
const Name = "endpoint"

// Controller is the informer loop around Decide: a service is enqueued
// when it changes, when its Endpoints are deleted, and when a pod its
// selector matches (before or after the change) is added, changed in a
// way that shows in Endpoints, or deleted.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	triggers  *TriggerTimes
	// batchPeriod delays the syncs pod changes cause (see WithBatchPeriod).
	batchPeriod time.Duration
}

// Option adjusts a Controller.
type Option func(*Controller)

// WithRecorder records the controller's events (FailedToCreateEndpoint,
// FailedToUpdateEndpoint, as upstream's) through r; without it failed
// writes are only logged at debug level and retried.
func WithRecorder(r record.EventRecorder) Option { return func(c *Controller) { c.recorder = r } }

// WithBatchPeriod delays the sync a pod change causes by d
// (kube-controller-manager's --endpoint-updates-batch-period), so the
// changes of many pods in that window are written in one update of their
// service's Endpoints; service changes are synced at once. 0 (the
// default) does not delay.
func WithBatchPeriod(d time.Duration) Option { return func(c *Controller) { c.batchPeriod = d } }

// leaderAnnotation marks an Endpoints object used as a leader-election
// lock, which is no service's and is never deleted as left over.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// New wires the controller to the service, pod and endpoints informers
// (start their factory after New).
func New(client kubernetes.Interface, services coreinformers.ServiceInformer, pods coreinformers.PodInformer, endpoints coreinformers.EndpointsInformer, opts ...Option) (*Controller, error) {
	c := &Controller{
		client:    client,
		services:  services.Lister(),
		pods:      pods.Lister(),
		endpoints: endpoints.Lister(),
		synced:    []cache.InformerSynced{services.Informer().HasSynced, pods.Informer().HasSynced, endpoints.Informer().HasSynced},
		queue:     workloop.NewQueue(Name),
		triggers:  NewTriggerTimes(),
	}
	for _, o := range opts {
		o(c)
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{services.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueue, UpdateFunc: func(_, obj any) { c.enqueue(obj) }, DeleteFunc: c.enqueue,
		}},
		{pods.Informer(), c.podServices().Handler()},
		// Deleted Endpoints of a service with a selector are recreated.
		{endpoints.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueue}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("%s: adding event handler: %w", Name, err)
		}
	}
	return c, nil
}

// Run waits for the caches, then syncs services with workers goroutines
// until ctx is done; it returns once they have stopped. Every existing
// Endpoints object is checked once at the start, so the Endpoints of a
// service deleted while no controller ran are deleted too.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, Name, c.queue, c.synced...); err != nil {
		return err
	}
	c.enqueueLeftovers()
	workloop.Run(ctx, Name, c.queue, workers, c.sync)
	return nil
}

// enqueueLeftovers enqueues the key of every Endpoints object but the
// leader-election locks; a key whose service exists is a no-op sync.
func (c *Controller) enqueueLeftovers() {
	eps, err := c.endpoints.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ep := range eps {
		if _, ok := ep.Annotations[leaderAnnotation]; !ok {
			c.enqueue(ep)
		}
	}
}

// podServices enqueues the services a pod change can affect, after the
// batch period.
func (c *Controller) podServices() PodServices {
	return PodServices{Services: c.services, Queue: c.queue, BatchPeriod: c.batchPeriod}
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// sync converges the Endpoints of the service key names.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		svc = nil
		c.triggers.Forget(ns, name)
	} else if err != nil {
		return fmt.Errorf("getting service %s: %w", key, err)
	}
	current, err := c.endpoints.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) {
		current = nil
	} else if err != nil {
		return fmt.Errorf("getting endpoints %s: %w", key, err)
	}
	var pods []*corev1.Pod
	var triggered time.Time
	if svc != nil && len(svc.Spec.Selector) > 0 && svc.Spec.Type != corev1.ServiceTypeExternalName {
		if pods, err = c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector)); err != nil {
			return fmt.Errorf("listing pods of %s: %w", key, err)
		}
		// Observed on every sync, written or not, as upstream's tracker:
		// a later write carries only changes newer than this sync's.
		triggered = c.triggers.Observe(svc, pods)
	}
	plan := Decide(svc, pods, current).WithTriggerTime(triggered)
	if plan.Action == None {
		return nil
	}
	slog.Debug("endpoint: writing endpoints", "service", key, "action", plan.Action.String())
	client := c.client.CoreV1().Endpoints(ns)
	switch plan.Action {
	case Delete:
		// The service informer may be behind (a service created just
		// before its Endpoints, as the API server's own): the service's
		// absence is confirmed with the API server before the delete.
		_, gerr := c.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if gerr == nil {
			return nil
		}
		if !apierrors.IsNotFound(gerr) {
			return fmt.Errorf("confirming service %s is gone: %w", key, gerr)
		}
		uid := plan.Endpoints.UID
		err = client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
	case Create:
		_, err = client.Create(ctx, plan.Endpoints, metav1.CreateOptions{})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is going away, and the Endpoints with it.
			err = nil
		}
	case Update:
		_, err = client.Update(ctx, plan.Endpoints, metav1.UpdateOptions{})
	}
	if err != nil {
		// A conflict or an already-existing object means the cache is
		// behind: the retry decides again from the newer state.
		c.recordFailure(plan, key, err)
		return fmt.Errorf("%s endpoints %s: %w", plan.Action, key, err)
	}
	return nil
}

// recordFailure records a failed create or update as a warning event on
// the Endpoints, as upstream (a conflict is the cache being behind, not
// worth an event).
func (c *Controller) recordFailure(plan Plan, key string, err error) {
	if c.recorder == nil || apierrors.IsConflict(err) {
		return
	}
	switch plan.Action {
	case Create:
		c.recorder.Eventf(plan.Endpoints, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s: %v", key, err)
	case Update:
		c.recorder.Eventf(plan.Endpoints, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s: %v", key, err)
	}
}
