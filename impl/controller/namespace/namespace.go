// Package namespace is kubeproof's namespace controller: when a namespace is
// deleted (deletionTimestamp set) it deletes every namespaced resource in it,
// waits until nothing is left, then removes the "kubernetes" finalizer
// through namespaces/<name>/finalize so the API server can remove the
// namespace (the namespace goes only after its content: LIVE-2's counterpart for namespaces).
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// FinalizerKubernetes is the namespace finalizer this controller owns.
const FinalizerKubernetes = corev1.FinalizerKubernetes

// Step is what to do next with a namespace.
type Step int

// The steps of namespace deletion.
const (
	// Nothing: not being deleted, or already finalized by us.
	Nothing Step = iota
	// DeleteContent: delete what is left in it, and look again.
	DeleteContent
	// Finalize: empty; remove the kubernetes finalizer.
	Finalize
)

// Decide is the namespace controller's decision: contentRemaining is the
// number of objects a fresh listing found in the namespace (−1 if the
// content has not been listed yet).
func Decide(ns *corev1.Namespace, contentRemaining int) Step {
	if ns.DeletionTimestamp == nil || !hasFinalizer(ns) {
		return Nothing
	}
	if contentRemaining != 0 {
		return DeleteContent
	}
	return Finalize
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == FinalizerKubernetes {
			return true
		}
	}
	return false
}

// Controller is the namespace controller.
type Controller struct {
	client    kubernetes.Interface
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	lister    corelisters.NamespaceLister
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	clock     clock.PassiveClock
	// RecheckAfter is how long to wait before looking again at a namespace
	// whose content is still going away.
	RecheckAfter time.Duration
}

// New wires a namespace controller.
func New(client kubernetes.Interface, dyn dynamic.Interface, dc discovery.DiscoveryInterface, nsInformer coreinformers.NamespaceInformer) *Controller {
	c := &Controller{
		client: client, dynamic: dyn, discovery: dc,
		lister:       nsInformer.Lister(),
		synced:       nsInformer.Informer().HasSynced,
		queue:        workloop.NewQueue("namespace"),
		RecheckAfter: 2 * time.Second,
		clock:        clock.RealClock{},
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	_, _ = nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return c
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "namespace controller", c.queue, c.synced); err != nil {
		return err
	}
	workloop.Run(ctx, "namespace", c.queue, workers, c.sync)
	return nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if Decide(cached, -1) == Nothing {
		return nil
	}
	// Work from a live read: the cache may be behind a finalize we did.
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if Decide(ns, -1) == Nothing {
		return nil
	}
	content, err := c.deleteAllContent(ctx, name)
	if conds := Conditions(ns.Status.Conditions, content, c.clock.Now()); conds != nil {
		next := ns.DeepCopy()
		next.Status.Conditions = conds
		if updated, uerr := c.client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{}); uerr == nil {
			ns = updated
		} else if !apierrors.IsNotFound(uerr) {
			slog.Debug("namespace: could not update conditions", "namespace", name, "err", uerr)
		}
	}
	if err != nil {
		return err
	}
	switch Decide(ns, content.Total) {
	case DeleteContent:
		slog.Debug("namespace content remaining", "namespace", name, "objects", content.Total)
		c.queue.AddAfter(name, c.RecheckAfter)
		return nil
	case Finalize:
		return c.finalize(ctx, ns)
	}
	return nil
}

// namespacedResources lists the namespaced resources that can be listed and
// deleted.
func (c *Controller) namespacedResources() ([]schema.GroupVersionResource, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(c.discovery)
	if len(lists) == 0 && err != nil {
		return nil, fmt.Errorf("discovering namespaced resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			verbs := map[string]bool{}
			for _, v := range r.Verbs {
				verbs[v] = true
			}
			if verbs["list"] && (verbs["delete"] || verbs["deletecollection"]) {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	if err != nil {
		// Partial discovery: delete what we can, but do not finalize.
		return out, fmt.Errorf("partial discovery: %w", err)
	}
	return out, nil
}

// deleteAllContent deletes every object in the namespace (deletecollection,
// or one by one where that is not supported) and returns how many objects a
// listing afterwards still finds (objects with finalizers or a grace period
// stay until they are really gone).
func (c *Controller) deleteAllContent(ctx context.Context, ns string) (Content, error) {
	content := Content{Remaining: map[string]int{}, Finalizers: map[string]int{}}
	gvrs, discErr := c.namespacedResources()
	content.DiscoveryErr = discErr
	if discErr != nil && len(gvrs) == 0 {
		return content, discErr
	}
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	remaining := 0
	var errs []error
	for _, gvr := range gvrs {
		rc := c.dynamic.Resource(gvr).Namespace(ns)
		// deletecollection first; whatever a listing still shows afterwards
		// (unsupported verb, objects created meanwhile) is deleted one by one.
		collectionErr := rc.DeleteCollection(ctx, opts, metav1.ListOptions{})
		list, err := rc.List(ctx, metav1.ListOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				errs = append(errs, fmt.Errorf("listing %s in %s: %w", gvr.Resource, ns, err))
			}
			continue
		}
		remaining += len(list.Items)
		if len(list.Items) > 0 {
			content.Remaining[gvr.GroupResource().String()] += len(list.Items)
		}
		for _, item := range list.Items {
			for _, f := range item.GetFinalizers() {
				content.Finalizers[f]++
			}
			if item.GetDeletionTimestamp() != nil {
				continue // going away (grace period or finalizers)
			}
			if derr := rc.Delete(ctx, item.GetName(), opts); derr != nil && !apierrors.IsNotFound(derr) {
				errs = append(errs, fmt.Errorf("deleting %s %s/%s (deletecollection: %v): %w", gvr.Resource, ns, item.GetName(), collectionErr, derr))
			}
		}
	}
	content.Total = remaining
	content.DeleteErr = errors.Join(errs...)
	if discErr != nil {
		errs = append(errs, discErr)
	}
	return content, errors.Join(errs...)
}

// finalize removes the kubernetes finalizer through the finalize subresource.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	next := ns.DeepCopy()
	var kept []corev1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if f != FinalizerKubernetes {
			kept = append(kept, f)
		}
	}
	next.Spec.Finalizers = kept
	if _, err := c.client.CoreV1().Namespaces().Finalize(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
	}
	return nil
}
