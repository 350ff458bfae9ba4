// Package resourcequota is kubeproof's resource quota controller: it keeps
// every ResourceQuota's status true to the objects that exist. The
// ResourceQuota admission plugin (impl/apiserver/admission) never gives
// usage back: to status.used it adds what each write it evaluates adds (a
// create's usage; an update's growth over the stored object, such as a
// pod resize or a service's type change, or all the object's usage for a
// quota the update brings it into), judging each quota by the status
// this controller wrote (a quota with no status yet limits nothing; one
// lacking usage of a restricted name refuses, "status unknown for
// quota"). This controller recomputes status.used from
// informer caches (Usage, a pure function of the observed objects) when a
// quota is created or its spec.hard changes (RecountOnUpdate; as
// upstream, no other update of a quota — its status, scopes or metadata —
// is recounted before the periodic sync), periodically
// (--resource-quota-sync-period), and at once on a "replenishment", as
// upstream's quota monitors: an observed object is deleted, or updated in
// a way upstream's update filter passes (ReplenishOnUpdate: a pod whose
// container statuses report resized resources, that enters or leaves the
// Terminating scope, or that stops counting — terminal phase, or deletion
// grace period over when the update arrives; a service whose type moves
// between NodePort, LoadBalancer and the rest). A replenishment recounts
// the namespace's quotas whose status.hard names a resource of that kind
// (Replenishes). Other changes, such as a pod whose grace period ends with
// no update after it, or a NodePort service's ports, wait for the
// periodic recount, as upstream. (spec/ has no quota property yet; this
// package enforces none by ID.)
//
// A quota whose status does not show its spec.hard yet, or lacks usage of
// a name the controller counts (MissingUsage), is recounted by workers of
// its own queue, as upstream's missingUsageQueue, so that it is not kept
// waiting behind periodic recounts: admission judges quotas by their
// status alone.
//
// As upstream's controller, it writes status with UpdateStatus on the
// quota it read (compare-and-swap on resourceVersion, retried on
// conflict). Unlike upstream's, it reads the quota from the API server,
// not its cache (readQuota), and then makes sure that the counts it
// writes are no older than that quota: admission charges status.used
// before the objects it admitted reach the controller's informers, so a
// recount from an informer that has not yet seen them would write a lower
// used and let more writes in than the quota allows (issue 8: seen as a
// CI flake, a third pod admitted against pods=2). Each counting informer
// remembers the newest resourceVersion its event handler got (its cache
// holds every change up to it; resourceVersions are etcd revisions here,
// global and ordered). When a recount would lower a name's usage and the
// informer counting it is older than the quota (Lagging, a pure
// decision), that resource's objects in the namespace are listed from the
// API server instead, a quorum read at a revision no older than the
// quota's, and counted from that list. Raising usage, or lowering it from
// an informer that has caught up with the quota, needs no list. (Waiting
// for the informer instead would starve a quiet resource: the quota's
// resourceVersion moves on with every charge of other resources, and a
// quiet informer hears of newer revisions only from bookmarks, about once
// a minute.) What remains, as upstream, is the moment between a charge and
// the write it admitted: an object not yet stored is in no list, and a
// recount then gives its charge back until the next recount counts it.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
)

// Name is the controller's name (its queue's metrics name).
const Name = "resourcequota"

// DefaultSyncPeriod is kube-controller-manager's --resource-quota-sync-period.
const DefaultSyncPeriod = 5 * time.Minute

// DefaultWorkers is kube-controller-manager's --concurrent-resource-quota-syncs.
const DefaultWorkers = 5

// Config tunes the controller.
type Config struct {
	// SyncPeriod is how often every quota is recomputed
	// (--resource-quota-sync-period); 0 means DefaultSyncPeriod.
	SyncPeriod time.Duration
	// Clock tells when a deleted pod's grace period is over; nil is the
	// real clock.
	Clock clock.Clock
}

// Controller recomputes ResourceQuota status.
type Controller struct {
	client       kubernetes.Interface
	quotas       corelisters.ResourceQuotaLister
	monitors     map[schema.GroupResource]*monitor
	synced       []cache.InformerSynced
	queue        workqueue.TypedRateLimitingInterface[string]
	missingUsage workqueue.TypedRateLimitingInterface[string]
	syncPeriod   time.Duration
	clock        clock.Clock
	registration []registered
}

// monitor is the controller's view of one counted resource.
type monitor struct {
	gvr    schema.GroupVersionResource
	lister cache.GenericLister
	// seen is the newest resourceVersion of an object the controller's
	// event handler got for the resource (0: none yet, or not a number).
	// The informer updates its cache before it calls the handler, in
	// order, so the cache holds every change up to seen.
	seen atomic.Uint64
}

// saw records obj's resourceVersion in seen (without allocating: it runs
// for every event of every counted object, pods included).
func (m *monitor) saw(obj any) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	for {
		cur := m.seen.Load()
		if rv <= cur || m.seen.CompareAndSwap(cur, rv) {
			return
		}
	}
}

type registered struct {
	informer cache.SharedIndexInformer
	handle   cache.ResourceEventHandlerRegistration
}

// ignoredResources are never counted (as upstream: events are not quota'd).
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// QuotableResources asks discovery for the namespaced resources a quota
// can count here: served, listable and watchable, not a subresource, not
// an event. A partial discovery failure still returns what was found.
func QuotableResources(dc discovery.DiscoveryInterface) ([]schema.GroupVersionResource, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(dc)
	if len(lists) == 0 && err != nil {
		return nil, fmt.Errorf("discovering quotable resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || ignoredResources[gv.WithResource(r.Name).GroupResource()] {
				continue
			}
			var list, watch bool
			for _, v := range r.Verbs {
				list = list || v == "list"
				watch = watch || v == "watch"
			}
			if list && watch {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out, nil
}

// New builds the controller on factory's shared informers: resource
// quotas, and one informer for each of resources (QuotableResources) that
// factory has a typed informer for; others are skipped (a quota's usage
// of a resource the controller does not observe is left as the admission
// plugin charged it). Call factory.Start after New, then Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, resources []schema.GroupVersionResource, cfg Config) (*Controller, error) {
	c := &Controller{
		client:       client,
		monitors:     map[schema.GroupResource]*monitor{},
		queue:        workloop.NewQueue(Name),
		missingUsage: workloop.NewQueue(Name + "_priority"),
		syncPeriod:   cfg.SyncPeriod,
		clock:        cfg.Clock,
	}
	if c.syncPeriod <= 0 {
		c.syncPeriod = DefaultSyncPeriod
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	quotaInformer := factory.Core().V1().ResourceQuotas()
	c.quotas = quotaInformer.Lister()
	if err := c.register(quotaInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addQuota,
		UpdateFunc: c.updateQuota,
		// The sync finds it gone and does nothing, as upstream.
		DeleteFunc: c.enqueueDeleted,
	}); err != nil {
		return nil, err
	}
	for _, gvr := range resources {
		gr := gvr.GroupResource()
		if _, dup := c.monitors[gr]; dup || ignoredResources[gr] {
			continue
		}
		inf, err := factory.ForResource(gvr)
		if err != nil {
			slog.Debug("resource quota: no typed informer, not recounted", "resource", gvr.String())
			continue
		}
		m := &monitor{gvr: gvr, lister: inf.Lister()}
		if err := c.register(inf.Informer(), c.replenishHandler(gr, m)); err != nil {
			return nil, err
		}
		c.monitors[gr] = m
	}
	return c, nil
}

func (c *Controller) register(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("resource quota controller: adding event handler: %w", err)
	}
	c.registration = append(c.registration, registered{inf, reg})
	c.synced = append(c.synced, reg.HasSynced)
	return nil
}

// Observes tells whether the controller counts objects of gr.
func (c *Controller) Observes(gr schema.GroupResource) bool {
	_, ok := c.monitors[gr]
	return ok
}

// Run waits for the caches, then recomputes quotas with workers workers
// until ctx is done; it returns once every goroutine it started is gone.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer func() {
		for _, r := range c.registration {
			_ = r.informer.RemoveEventHandler(r.handle)
		}
	}()
	if err := workloop.WaitForSync(ctx, "resource quota controller", c.queue, c.synced...); err != nil {
		c.missingUsage.ShutDown()
		return err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// The full recalculation: every quota, every sync period.
		wait.JitterUntilWithContext(ctx, func(context.Context) { c.enqueueAll() }, c.syncPeriod, 0, false)
	}()
	go func() {
		defer wg.Done()
		workloop.Run(ctx, Name, c.missingUsage, workers, c.sync)
	}()
	workloop.Run(ctx, Name, c.queue, workers, c.sync)
	wg.Wait()
	return nil
}

func (c *Controller) enqueueAll() {
	quotas, err := c.quotas.List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.enqueue(q)
	}
}

func (c *Controller) enqueue(q *corev1.ResourceQuota) {
	if key, err := cache.MetaNamespaceKeyFunc(q); err == nil {
		c.queue.Add(key)
	}
}

// addQuota enqueues a quota, on the missing usage queue when its status
// lacks what it should show (MissingUsage), as upstream's addQuota.
func (c *Controller) addQuota(obj any) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(q)
	if err != nil {
		return
	}
	if MissingUsage(q, c.counts) {
		c.missingUsage.Add(key)
		return
	}
	c.queue.Add(key)
}

// counts tells whether the controller counts quota name n: it observes a
// resource whose quota evaluator matches n (quota.MatchesResource), as
// upstream asks its evaluators' MatchingResources.
func (c *Controller) counts(n corev1.ResourceName) bool {
	for gr := range c.monitors {
		if quotaeval.MatchesResource(gr, n) {
			return true
		}
	}
	return false
}

// updateQuota recounts a quota whose spec.hard changed (RecountOnUpdate).
func (c *Controller) updateQuota(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.ResourceQuota)
	q, ok2 := newObj.(*corev1.ResourceQuota)
	if ok1 && ok2 && RecountOnUpdate(old, q) {
		c.addQuota(q)
	}
}

// enqueueDeleted enqueues a deleted quota (or its tombstone).
func (c *Controller) enqueueDeleted(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// RecountOnUpdate tells whether an update of a quota from old to q is
// recounted at once, as upstream's quota informer update handler: only
// when spec.hard changed (the same names, each of the same quantity, is
// no change). A status update — the controller's own, admission's charges
// or anyone's — a scope or metadata change is not: the periodic sync
// recounts it.
func RecountOnUpdate(old, q *corev1.ResourceQuota) bool {
	if len(old.Spec.Hard) != len(q.Spec.Hard) {
		return true
	}
	for n, v := range q.Spec.Hard {
		o, ok := old.Spec.Hard[n]
		if !ok || o.Cmp(v) != 0 {
			return true
		}
	}
	return false
}

// MissingUsage tells whether a quota's status lacks what it should show,
// as upstream's addQuota decides to prioritise it: status.hard is not
// spec.hard (semantically), or a name of status.hard the controller
// counts (counts) has no status.used entry.
func MissingUsage(q *corev1.ResourceQuota, counts func(corev1.ResourceName) bool) bool {
	if !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
		return true
	}
	for n := range q.Status.Hard {
		if _, ok := q.Status.Used[n]; !ok && counts(n) {
			return true
		}
	}
	return false
}

// replenishHandler enqueues the quotas of an object's namespace that
// count gr (Replenishes) when the object is deleted or an update of it is
// a replenishment (ReplenishOnUpdate), as upstream's quota monitors, and
// records every event's resourceVersion in m.
func (c *Controller) replenishHandler(gr schema.GroupResource, m *monitor) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { m.saw(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			m.saw(newObj)
			old, ok1 := oldObj.(runtime.Object)
			cur, ok2 := newObj.(runtime.Object)
			if !ok1 || !ok2 || !ReplenishOnUpdate(gr, old, cur, c.clock.Now()) {
				return
			}
			if m, err := metaOf(cur); err == nil {
				c.enqueueKeys(c.replenishedKeys(m.GetNamespace(), gr))
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			m.saw(obj)
			o, err := metaOf(obj)
			if err != nil {
				return
			}
			c.enqueueKeys(c.replenishedKeys(o.GetNamespace(), gr))
		},
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return m, nil
}

// replenishedKeys returns the keys of the quotas in namespace that a
// replenishment for gr recounts.
func (c *Controller) replenishedKeys(namespace string, gr schema.GroupResource) []string {
	quotas, err := c.quotas.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, q := range quotas {
		if !Replenishes(q, gr) {
			continue
		}
		if key, err := cache.MetaNamespaceKeyFunc(q); err == nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// enqueueKeys enqueues the quotas of keys.
func (c *Controller) enqueueKeys(keys []string) {
	for _, key := range keys {
		c.queue.Add(key)
	}
}

// observe collects namespace's objects of the resources q counts that the
// controller watches, from its caches, with the revision each cache holds
// at least (read before the cache).
func (c *Controller) observe(namespace string, q *corev1.ResourceQuota) (Observed, error) {
	obs := Observed{Objects: map[schema.GroupResource][]runtime.Object{}, Revisions: map[schema.GroupResource]uint64{}, Now: c.clock.Now()}
	for _, gr := range Tracked(q) {
		m, ok := c.monitors[gr]
		if !ok {
			continue
		}
		obs.Revisions[gr] = m.seen.Load()
		objs, err := m.lister.ByNamespace(namespace).List(labels.Everything())
		if err != nil {
			return Observed{}, fmt.Errorf("listing %s in %s: %w", gr, namespace, err)
		}
		obs.Objects[gr] = objs
	}
	return obs, nil
}

// listFresh lists namespace's objects of gr from the API server: a quorum
// read (no resourceVersion), so at a revision no older than the quota's,
// quotaRV, read before it (checked). The controller's role may list
// everything.
func (c *Controller) listFresh(ctx context.Context, namespace string, gr schema.GroupResource, quotaRV string) ([]runtime.Object, error) {
	m := c.monitors[gr]
	rc := c.client.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || ok && r == nil {
		return nil, fmt.Errorf("listing %s in %s from the API server: the client has no REST client", gr, namespace)
	}
	prefix := []string{"/apis", m.gvr.Group, m.gvr.Version}
	if m.gvr.Group == "" {
		prefix = []string{"/api", m.gvr.Version}
	}
	obj, err := rc.Get().AbsPath(prefix...).Namespace(namespace).Resource(m.gvr.Resource).Do(ctx).Get()
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s from the API server: %w", gr, namespace, err)
	}
	l, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s from the API server: %w", gr, namespace, err)
	}
	listRV, err1 := strconv.ParseUint(l.GetResourceVersion(), 10, 64)
	minRV, err2 := strconv.ParseUint(quotaRV, 10, 64)
	if err1 != nil || err2 != nil || listRV < minRV {
		return nil, fmt.Errorf("listing %s in %s from the API server: the list's resourceVersion %q is not at least the quota's %q", gr, namespace, l.GetResourceVersion(), quotaRV)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s from the API server: %w", gr, namespace, err)
	}
	return items, nil
}

// sync recomputes one quota's status and writes it if it changed.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if _, err := c.quotas.ResourceQuotas(namespace).Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		q, err := c.readQuota(ctx, namespace, name)
		if err != nil {
			return err
		}
		obs, err := c.observe(namespace, q)
		if err != nil {
			return err
		}
		// Lower usage only from counts no older than the quota (see the
		// package comment).
		for _, gr := range Lagging(q, obs) {
			objs, err := c.listFresh(ctx, namespace, gr, q.ResourceVersion)
			if err != nil {
				return err
			}
			obs.Objects[gr] = objs
		}
		next := NextStatus(q, obs)
		if apiequality.Semantic.DeepEqual(q.Status, next) {
			return nil
		}
		updated := q.DeepCopy()
		updated.Status = next
		_, err = c.client.CoreV1().ResourceQuotas(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("updating status of quota %s: %w", key, err)
	}
	return nil
}

// readQuota reads the quota from the API server, not the cache: its
// status moves with every admitted write, and comparing a recount with a
// cached status that missed a charge would skip the write that gives
// usage back. It lists by name, since the controller's role (as
// upstream's system:controller:resourcequota-controller) may list and
// watch everything but not get.
func (c *Controller) readQuota(ctx context.Context, namespace, name string) (*corev1.ResourceQuota, error) {
	l, err := c.client.CoreV1().ResourceQuotas(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, err
	}
	for i := range l.Items {
		if l.Items[i].Name == name {
			return &l.Items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("resourcequotas"), name)
}
