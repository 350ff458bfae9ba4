// Package garbagecollector is kubeproof's garbage collector: it keeps a
// graph of ownerReferences over every served resource (metadata-only
// informers) and deletes dependents whose owners are gone, implementing the
// three propagation policies:
//
//   - LIVE-2, background: when an owner disappears, each dependent is examined;
//     one whose owners are all verified absent by a live read (by uid) is
//     deleted. A dependent with another live owner is kept (GC-1).
//   - GC-2, foreground: an owner being deleted with the foregroundDeletion
//     finalizer has its dependents deleted; once no dependent with
//     blockOwnerDeletion remains, the finalizer is removed.
//   - orphan: an owner being deleted with the orphan finalizer has its
//     reference stripped from every dependent, then the finalizer removed.
//   - dangling and cross-namespace owners: a namespaced owner is looked up in
//     the dependent's namespace only; a reference to an object in another
//     namespace is reported (OwnerRefInvalidNamespace) and treated as absent.
//     A cluster-scoped dependent naming a namespaced kind can never resolve:
//     it is reported and never deleted on that basis.
//   - owners verified absent are remembered in a bounded LRU
//     (AbsentOwnerCache, as upstream's absentOwnerCache), so the other
//     dependents of a deleted owner are collected without reading it again.
//
// Graph.Apply and Decide are pure; this file is the I/O around them.
package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
	"github.com/kubeproof/kubeproof/impl/faults"
)

// EventOwnerRefInvalidNamespace is the warning for an invalid owner namespace.
const EventOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"

// Config tunes the garbage collector.
type Config struct {
	Workers int
	// Resources, if set, are watched instead of asking discovery.
	Resources []Resource
	// DiscoveryResync is how often discovery is re-read for new resources
	// (default 30 s; negative disables).
	DiscoveryResync time.Duration
	// CacheSyncTimeout bounds the wait for informers before workers start
	// (default 30 s); decisions are verified by live reads, so starting with
	// an incomplete graph is safe, only slower.
	CacheSyncTimeout time.Duration
	// AbsentOwnerCacheSize bounds the cache of owners verified absent
	// (DefaultAbsentOwnerCacheSize when 0).
	AbsentOwnerCacheSize int
	// SharedInformers, when set, returns for a resource an informer of its
	// typed objects that the controller manager already runs for other
	// controllers, or nil. The graph is built from that informer's events
	// instead of a metadata-only watch of its own, as upstream's garbage
	// collector takes the informers of the manager's shared factory where
	// it has one: every pod is then decoded and cached once in the
	// manager, not twice. The owner runs the informer; the collector adds
	// handlers (no resync) and removes them when Run returns.
	SharedInformers func(schema.GroupVersionResource) cache.SharedIndexInformer
}

// GarbageCollector is the controller.
type GarbageCollector struct {
	meta      metadata.Interface
	discovery discovery.DiscoveryInterface
	recorder  record.EventRecorder
	cfg       Config
	graph     *Graph
	// absent are owner references verified absent: their other
	// dependents skip the live read.
	absent *AbsentOwnerCache

	changes         workqueue.TypedInterface[*Change]
	attemptToDelete workqueue.TypedRateLimitingInterface[string]
	attemptToOrphan workqueue.TypedRateLimitingInterface[string]
	factory         metadatainformer.SharedInformerFactory

	mu        sync.RWMutex
	monitored map[schema.GroupVersionResource]bool
	mapping   mapping
	synced    []cache.InformerSynced
	// shared are the handlers added to Config.SharedInformers' informers.
	shared []sharedHandler
}

// New returns a garbage collector. dc may be nil when cfg.Resources is set.
func New(metaClient metadata.Interface, dc discovery.DiscoveryInterface, recorder record.EventRecorder, cfg Config) *GarbageCollector {
	if cfg.Workers < 1 {
		cfg.Workers = 5
	}
	if cfg.DiscoveryResync == 0 {
		cfg.DiscoveryResync = 30 * time.Second
	}
	if cfg.CacheSyncTimeout == 0 {
		cfg.CacheSyncTimeout = 30 * time.Second
	}
	return &GarbageCollector{
		meta:            metaClient,
		discovery:       dc,
		recorder:        recorder,
		cfg:             cfg,
		graph:           NewGraph(),
		absent:          NewAbsentOwnerCache(cfg.AbsentOwnerCacheSize),
		changes:         workqueue.NewTyped[*Change](),
		attemptToDelete: workloop.NewQueue("garbage_collector_attempt_to_delete"),
		attemptToOrphan: workloop.NewQueue("garbage_collector_attempt_to_orphan"),
		factory:         metadatainformer.NewSharedInformerFactory(metaClient, 0),
		monitored:       map[schema.GroupVersionResource]bool{},
		mapping:         mapping{},
	}
}

// Graph exposes the dependency graph (read-only use).
func (gc *GarbageCollector) Graph() *Graph { return gc.graph }

func (gc *GarbageCollector) resources() []Resource {
	if len(gc.cfg.Resources) > 0 {
		return gc.cfg.Resources
	}
	if gc.discovery != nil {
		rs, err := DeletableResources(gc.discovery)
		if err == nil && len(rs) > 0 {
			return rs
		}
		slog.Warn("garbage collector: discovery failed, watching the built-in resources", "err", err)
	}
	return FallbackResources
}

// ensureMonitors starts informers for resources not watched yet.
func (gc *GarbageCollector) ensureMonitors(ctx context.Context, rs []Resource) {
	gc.mu.Lock()
	for _, r := range rs {
		gc.mapping[schema.GroupKind{Group: r.GVR.Group, Kind: r.Kind}] = r
		if gc.monitored[r.GVR] {
			continue
		}
		gc.monitored[r.GVR] = true
		r := r
		handlers := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { gc.observe(Added, r, obj) },
			UpdateFunc: func(_, obj any) { gc.observe(Updated, r, obj) },
			DeleteFunc: func(obj any) { gc.observe(Deleted, r, obj) },
		}
		if gc.cfg.SharedInformers != nil {
			if inf := gc.cfg.SharedInformers(r.GVR); inf != nil {
				reg, err := inf.AddEventHandlerWithResyncPeriod(handlers, 0)
				if err == nil {
					gc.shared = append(gc.shared, sharedHandler{inf, reg})
					gc.synced = append(gc.synced, reg.HasSynced)
					continue
				}
				slog.Warn("garbage collector: cannot use the shared informer; watching metadata", "resource", r.GVR.String(), "err", err)
			}
		}
		inf := gc.factory.ForResource(r.GVR).Informer()
		// The graph reads only identity, owners, finalizers and deletion:
		// the cache keeps no more (labels, annotations and managedFields
		// of every object in the cluster add up).
		_ = inf.SetTransform(graphMetadata)
		_, _ = inf.AddEventHandler(handlers)
		gc.synced = append(gc.synced, inf.HasSynced)
	}
	gc.mu.Unlock()
	gc.factory.Start(ctx.Done())
}

// graphMetadata is the monitors' informer transform: an object's metadata
// reduced to what observe reads (plus its resourceVersion, which the
// informer compares). Tombstones pass through.
func graphMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	m.ObjectMeta = metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}
	return m, nil
}

func (gc *GarbageCollector) observe(t ChangeType, r Resource, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	gc.changes.Add(&Change{
		Type:       t,
		Object:     ObjectRef{APIVersion: r.GVR.GroupVersion().String(), Kind: r.Kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()},
		Owners:     m.GetOwnerReferences(),
		Deleting:   m.GetDeletionTimestamp() != nil,
		Finalizers: m.GetFinalizers(),
	})
}

// Run watches, builds the graph and collects garbage until ctx is done.
func (gc *GarbageCollector) Run(ctx context.Context) error {
	gc.ensureMonitors(ctx, gc.resources())
	syncCtx, cancel := context.WithTimeout(ctx, gc.cfg.CacheSyncTimeout)
	gc.mu.RLock()
	synced := append([]cache.InformerSynced(nil), gc.synced...)
	gc.mu.RUnlock()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) && ctx.Err() == nil {
		slog.Warn("garbage collector: not every informer synced; starting anyway")
	}
	cancel()

	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); gc.processChanges() }()
	go func() {
		defer wg.Done()
		workloop.Run(ctx, "garbagecollector-delete", gc.attemptToDelete, gc.cfg.Workers, gc.attemptToDeleteItem)
	}()
	go func() {
		defer wg.Done()
		workloop.Run(ctx, "garbagecollector-orphan", gc.attemptToOrphan, 1, gc.orphanDependents)
	}()
	if gc.discovery != nil && len(gc.cfg.Resources) == 0 && gc.cfg.DiscoveryResync > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(gc.cfg.DiscoveryResync)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if rs, err := DeletableResources(gc.discovery); err == nil {
						gc.ensureMonitors(ctx, rs)
					}
				}
			}
		}()
	}
	<-ctx.Done()
	gc.removeSharedHandlers()
	gc.changes.ShutDown()
	wg.Wait()
	gc.factory.Shutdown()
	return nil
}

// sharedHandler is the collector's registration on a shared informer.
type sharedHandler struct {
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
}

// removeSharedHandlers takes the collector's handlers off the shared
// informers, which outlive it.
func (gc *GarbageCollector) removeSharedHandlers() {
	gc.mu.Lock()
	shared := gc.shared
	gc.shared = nil
	gc.mu.Unlock()
	for _, h := range shared {
		if err := h.informer.RemoveEventHandler(h.reg); err != nil {
			slog.Warn("garbage collector: removing a handler from a shared informer", "err", err)
		}
	}
}

func (gc *GarbageCollector) processChanges() {
	for {
		ch, quit := gc.changes.Get()
		if quit {
			return
		}
		gc.trackAbsence(ch)
		eff := gc.graph.Apply(*ch)
		gc.changes.Done(ch)
		for _, uid := range eff.AttemptToDelete {
			gc.attemptToDelete.Add(string(uid))
		}
		for _, uid := range eff.AttemptToOrphan {
			gc.attemptToOrphan.Add(string(uid))
		}
		for _, inv := range eff.Invalid {
			gc.reportInvalidNamespace(inv.Dependent, inv.OwnerUID)
		}
	}
}

// trackAbsence keeps the absent-owner cache true to a change before the
// graph applies it: an object seen alive is not absent; one deleted while
// it had dependents is, so they are collected without reading it again.
func (gc *GarbageCollector) trackAbsence(ch *Change) {
	switch ch.Type {
	case Added, Updated:
		gc.absent.Forget(ch.Object.UID)
	case Deleted, VirtualDeleted:
		if snap, ok := gc.graph.Snapshot(ch.Object.UID); ok && len(snap.Dependents) > 0 {
			gc.absent.Add(ch.Object)
		}
	}
}

func (gc *GarbageCollector) reportInvalidNamespace(dep ObjectRef, owner types.UID) {
	for _, r := range gc.ownersOf(dep) {
		if r.UID == owner {
			gc.recorder.Eventf(objectReference(dep), corev1.EventTypeWarning, EventOwnerRefInvalidNamespace,
				"ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
				r.APIVersion, r.Kind, dep.Namespace, r.Name, r.UID, dep.Namespace)
		}
	}
}

func (gc *GarbageCollector) ownersOf(dep ObjectRef) []metav1.OwnerReference {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	if n, ok := gc.graph.nodes[dep.UID]; ok {
		return append([]metav1.OwnerReference(nil), n.owners...)
	}
	return nil
}

func objectReference(r ObjectRef) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

func (gc *GarbageCollector) lookup(apiVersion, kind string) (Resource, bool) {
	gc.mu.RLock()
	defer gc.mu.RUnlock()
	return gc.mapping.lookup(apiVersion, kind)
}

func (gc *GarbageCollector) client(r Resource, namespace string) metadata.ResourceInterface {
	if r.Namespaced {
		return gc.meta.Resource(r.GVR).Namespace(namespace)
	}
	return gc.meta.Resource(r.GVR)
}

// getLive reads an object's current metadata by its graph identity;
// (nil, nil) means it is absent (or another object with another uid).
func (gc *GarbageCollector) getLive(ctx context.Context, id ObjectRef) (*metav1.PartialObjectMetadata, Resource, error) {
	r, ok := gc.lookup(id.APIVersion, id.Kind)
	if !ok {
		return nil, r, errUnknownKind
	}
	if r.Namespaced && id.Namespace == "" {
		return nil, r, errUnknownKind
	}
	obj, err := gc.client(r, id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && obj.UID != id.UID) {
		return nil, r, nil
	}
	return obj, r, err
}

var (
	errUnknownKind    = errors.New("kind is not served")
	errNotYetObserved = errors.New("owner exists but the informer has not shown it yet")
)

// attemptToDeleteItem examines one node: a virtual owner is verified, an
// owner in foreground deletion is finalized when unblocked, and a dependent
// is kept, unlinked or deleted as Decide says.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, key string) error {
	snap, ok := gc.graph.Snapshot(types.UID(key))
	if !ok {
		return nil
	}
	if snap.BeingDeleted && !snap.DeletingDependents {
		return nil
	}
	latest, r, err := gc.getLive(ctx, snap.Identity)
	switch {
	case errors.Is(err, errUnknownKind):
		return nil
	case err != nil:
		return err
	case latest == nil:
		// Verified absent: a virtual delete lets its dependents be collected.
		gc.changes.Add(&Change{Type: VirtualDeleted, Object: snap.Identity})
		return nil
	}
	if snap.DeletingDependents {
		if snap.BlockingCount == 0 {
			return gc.patchFinalizers(ctx, r, latest, WithoutFinalizer(latest.Finalizers, FinalizerForeground))
		}
		for _, uid := range snap.Blocking {
			gc.attemptToDelete.Add(string(uid))
		}
		return nil
	}
	if len(latest.OwnerReferences) > 0 {
		item := Item{Owners: latest.OwnerReferences, Finalizers: latest.Finalizers,
			HasDependents: len(snap.Dependents) > 0, DependentDeletingDependents: snap.DependentDeletingDependents}
		for _, ref := range latest.OwnerReferences {
			st, err := gc.ownerState(ctx, snap.Identity, r.Namespaced, ref)
			if err != nil {
				return err
			}
			item.OwnerStates = append(item.OwnerStates, st)
		}
		if err := gc.execute(ctx, r, latest, Decide(item)); err != nil {
			return err
		}
	}
	if !snap.Observed {
		// Poll a virtual node that exists until an informer shows it.
		return errNotYetObserved
	}
	return nil
}

func (gc *GarbageCollector) ownerState(ctx context.Context, dep ObjectRef, depNamespaced bool, ref metav1.OwnerReference) (OwnerState, error) {
	r, ok := gc.lookup(ref.APIVersion, ref.Kind)
	if !ok {
		return OwnerUnresolvable, nil
	}
	ns := ""
	if r.Namespaced {
		if !depNamespaced {
			gc.recorder.Eventf(objectReference(dep), corev1.EventTypeWarning, EventOwnerRefInvalidNamespace,
				"ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
				ref.APIVersion, ref.Kind, dep.Namespace, ref.Name, ref.UID, dep.Namespace)
			return OwnerUnresolvable, nil
		}
		ns = dep.Namespace
	}
	key := refFromOwner(ref, ns)
	if gc.absent.Has(key) {
		return OwnerDangling, nil
	}
	owner, err := gc.client(r, ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gc.absent.Add(key)
		return OwnerDangling, nil
	case err != nil:
		return 0, fmt.Errorf("reading owner %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	case owner.UID != ref.UID:
		gc.absent.Add(key)
		return OwnerDangling, nil
	case owner.DeletionTimestamp != nil && has(owner.Finalizers, FinalizerForeground):
		return OwnerWaiting, nil
	}
	return OwnerSolid, nil
}

func (gc *GarbageCollector) execute(ctx context.Context, r Resource, obj *metav1.PartialObjectMetadata, a Action) error {
	switch a.Kind {
	case RemoveOwnerRefs:
		return gc.patchOwnerRefs(ctx, r, obj, WithoutOwners(obj.OwnerReferences, a.OwnerUIDs...))
	case Delete:
		if a.UnblockOwnerRefs {
			if err := gc.patchOwnerRefs(ctx, r, obj, Unblocked(obj.OwnerReferences)); err != nil {
				return err
			}
		}
		policy := a.Policy
		uid := obj.UID
		slog.Debug("garbage collector deleting", "resource", r.GVR.Resource, "namespace", obj.Namespace, "name", obj.Name, "policy", policy)
		err := gc.client(r, obj.Namespace).Delete(ctx, obj.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", r.GVR.Resource, obj.Namespace, obj.Name, err)
		}
	}
	return nil
}

// orphanDependents strips the owner's reference from every dependent, then
// removes the orphan finalizer from the owner (orphan propagation).
func (gc *GarbageCollector) orphanDependents(ctx context.Context, key string) error {
	snap, ok := gc.graph.Snapshot(types.UID(key))
	if !ok {
		return nil
	}
	var errs []error
	for _, dep := range snap.Dependents {
		latest, r, err := gc.getLive(ctx, dep)
		if errors.Is(err, errUnknownKind) || (err == nil && latest == nil) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		refs := WithoutOwners(latest.OwnerReferences, snap.Identity.UID)
		if len(refs) == len(latest.OwnerReferences) {
			continue
		}
		if err := gc.patchOwnerRefs(ctx, r, latest, refs); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if faults.CrashPoint(ctx, faults.CrashGCAfterOrphaning) { // crash point: dependents orphaned, finalizer kept
		return faults.ErrCrashed
	}
	owner, r, err := gc.getLive(ctx, snap.Identity)
	if err != nil || owner == nil || !has(owner.Finalizers, FinalizerOrphan) {
		if errors.Is(err, errUnknownKind) {
			return nil
		}
		return err
	}
	return gc.patchFinalizers(ctx, r, owner, WithoutFinalizer(owner.Finalizers, FinalizerOrphan))
}

func (gc *GarbageCollector) patchMeta(ctx context.Context, r Resource, obj *metav1.PartialObjectMetadata, fields map[string]any) error {
	fields["uid"] = obj.UID
	fields["resourceVersion"] = obj.ResourceVersion
	patch, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = gc.client(r, obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", r.GVR.Resource, obj.Namespace, obj.Name, err)
	}
	return nil
}

func (gc *GarbageCollector) patchOwnerRefs(ctx context.Context, r Resource, obj *metav1.PartialObjectMetadata, refs []metav1.OwnerReference) error {
	return gc.patchMeta(ctx, r, obj, map[string]any{"ownerReferences": refs})
}

func (gc *GarbageCollector) patchFinalizers(ctx context.Context, r Resource, obj *metav1.PartialObjectMetadata, finalizers []string) error {
	return gc.patchMeta(ctx, r, obj, map[string]any{"finalizers": finalizers})
}
