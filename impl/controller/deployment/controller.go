// Package deployment is kubeproof's Deployment controller: it rolls a
// Deployment's pod template out through one ReplicaSet per template hash.
//
// Decide (decide.go, status.go) is the pure decision; this file is the loop:
// informer handlers that only enqueue Deployment keys, and an executor that
// performs a Plan.
//
// Properties (spec/README.md):
//   - DEP-1: once the current generation is observed, the ReplicaSets'
//     replicas total at most replicas + maxSurge (newRSNewReplicas, scale).
//   - DEP-2: old ReplicaSets are scaled down only as far as keeps
//     replicas − maxUnavailable pods available (reconcileOldReplicaSets).
//   - RS-2 (with the ReplicaSet controller): each ReplicaSet's selector
//     carries its pod-template-hash, so siblings never share pods.
//   - LIVE-1: rollouts converge (the simulation tests run them to the end).
//
// Upstream behaviour without a spec number: one ReplicaSet per template hash
// (ComputeHash), revision and revision-history annotations (so `kubectl
// rollout undo` re-adopts an old ReplicaSet under a new revision), the
// deprecated.deployment.rollback.to annotation (rollback.go), proportional
// scaling, revisionHistoryLimit, Progressing/Available conditions and status
// counts.
package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
	"github.com/kubeproof/kubeproof/impl/faults"
)

// Controller is the Deployment controller.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	clock     clock.Clock
}

// New wires a Deployment controller to shared informers.
func New(client kubernetes.Interface, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, clk clock.Clock) *Controller {
	c := &Controller{
		client:    client,
		dLister:   dInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		synced:    []cache.InformerSynced{dInformer.Informer().HasSynced, rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:     workloop.NewQueue("deployment"),
		recorder:  recorder,
		clock:     clk,
	}
	_, _ = dInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	_, _ = rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.replicaSetChanged,
		UpdateFunc: func(oldObj, newObj any) { c.replicaSetChanged(oldObj); c.replicaSetChanged(newObj) },
		DeleteFunc: c.replicaSetChanged,
	})
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Recreate waits for old pods to be gone.
		DeleteFunc: c.podDeleted,
	})
	return c
}

// Run waits for the caches and runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "deployment controller", c.queue, c.synced...); err != nil {
		return err
	}
	workloop.Run(ctx, "deployment", c.queue, workers, c.sync)
	return nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func unwrap[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

func (c *Controller) replicaSetChanged(obj any) {
	rs, ok := unwrap[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if ref.Kind == "Deployment" {
			c.queue.Add(rs.Namespace + "/" + ref.Name)
		}
		return
	}
	// An orphan: every Deployment whose selector matches may adopt it.
	ds, _ := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.enqueue(d)
		}
	}
}

// podDeleted syncs a Recreate Deployment once none of its pods is left (it
// waits for the old ones to go), as upstream's deletePod: the Deployment
// controlling the pod's ReplicaSet, and as its pods those its selector
// matches controlled by one of its ReplicaSets (from the caches, where
// upstream lists the ReplicaSets from the API server). Rolling updates
// hear of their pods through their ReplicaSets' status.
func (c *Controller) podDeleted(obj any) {
	pod, ok := unwrap[*corev1.Pod](obj)
	if !ok {
		return
	}
	d := c.deploymentOf(pod)
	if d == nil || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return
	}
	rss, err := c.rsLister.ReplicaSets(d.Namespace).List(sel)
	if err != nil {
		return
	}
	owned := map[types.UID]bool{}
	for _, rs := range rss {
		if metav1.IsControlledBy(rs, d) {
			owned[rs.UID] = true
		}
	}
	pods, err := c.podLister.Pods(d.Namespace).List(sel)
	if err != nil {
		return
	}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && owned[ref.UID] {
			return
		}
	}
	c.enqueue(d)
}

// deploymentOf is the Deployment controlling the ReplicaSet controlling
// pod, or nil.
func (c *Controller) deploymentOf(pod *corev1.Pod) *appsv1.Deployment {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	if ref = metav1.GetControllerOf(rs); ref == nil || ref.Kind != "Deployment" {
		return nil
	}
	d, err := c.dLister.Deployments(rs.Namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	d, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	rss, err := c.rsLister.ReplicaSets(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		// The pods the Deployment's selector matches, as upstream's
		// getPodMapForDeployment lists them (Decide checks again); a
		// selector that does not parse is Decide's error to report.
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			if pods, err = c.podLister.Pods(ns).List(sel); err != nil {
				return fmt.Errorf("listing pods of deployment %s: %w", key, err)
			}
		}
	}
	plan, err := Decide(Observed{Deployment: d, ReplicaSets: rss, Pods: pods, Now: c.clock.Now()})
	if err != nil {
		return err
	}
	if err := c.execute(ctx, d, plan); err != nil {
		return err
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(key, plan.RequeueAfter)
	}
	return nil
}

// execute performs plan's writes in order, stopping at the first failure
// (the next sync starts again from what is then observed).
func (c *Controller) execute(ctx context.Context, d *appsv1.Deployment, plan Plan) error {
	for _, ev := range plan.Events {
		c.recorder.Event(d, ev.Type, ev.Reason, ev.Message)
	}
	if err := c.adoptAndRelease(ctx, d, plan); err != nil {
		return err
	}
	rsClient := c.client.AppsV1().ReplicaSets(d.Namespace)
	latestRV := map[string]string{}
	for _, a := range plan.Actions {
		var err error
		switch a.Kind {
		case CreateReplicaSet:
			_, err = rsClient.Create(ctx, a.ReplicaSet, metav1.CreateOptions{})
			if err != nil {
				return c.createFailed(ctx, d, a.ReplicaSet, err)
			}
			if faults.CrashPoint(ctx, faults.CrashDeploymentAfterNewRS) { // crash point: new RS created, old not scaled
				return faults.ErrCrashed
			}
		case UpdateReplicaSet:
			rs := a.ReplicaSet
			if rv, ok := latestRV[rs.Name]; ok {
				rs.ResourceVersion = rv
			}
			var updated *appsv1.ReplicaSet
			if updated, err = rsClient.Update(ctx, rs, metav1.UpdateOptions{}); err == nil {
				latestRV[rs.Name] = updated.ResourceVersion
			}
		case DeleteReplicaSet:
			err = rsClient.Delete(ctx, a.ReplicaSet.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &a.ReplicaSet.UID}})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("%s replicaset %s/%s: %w", a.Kind, d.Namespace, a.ReplicaSet.Name, err)
		}
		if a.Event != nil {
			c.recorder.Event(d, a.Event.Type, a.Event.Reason, a.Event.Message)
		}
	}
	current := d
	if rb := plan.Rollback; rb != nil {
		if rb.Warning != nil {
			c.recorder.Event(d, rb.Warning.Type, rb.Warning.Reason, rb.Warning.Message)
		}
		updated, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, rb.Deployment, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("writing back deployment %s/%s after its rollback annotation: %w", d.Namespace, d.Name, err)
		}
		if rb.Done != nil {
			c.recorder.Event(d, rb.Done.Type, rb.Done.Reason, rb.Done.Message)
		}
		current = updated
	}
	if plan.Revision != "" || plan.Status != nil {
		// The revision annotation goes with the status, through the status
		// subresource, as upstream: it does not move metadata.generation
		// (annotations count as spec on the main resource). The
		// resourceVersion is the one observed (or the rollback's write), so
		// a status is never written for a spec this sync has not seen.
		next := current.DeepCopy()
		if plan.Revision != "" {
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[RevisionAnnotation] = plan.Revision
		}
		if plan.Status != nil {
			next.Status = *plan.Status
		}
		if _, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating revision and status of deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	return nil
}

// createFailed handles a failed new-ReplicaSet creation as upstream does: a
// name taken by a ReplicaSet with another template is a hash collision
// (status.collisionCount++); any other failure is reported in Progressing.
func (c *Controller) createFailed(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, createErr error) error {
	dClient := c.client.AppsV1().Deployments(d.Namespace)
	if apierrors.IsAlreadyExists(createErr) {
		existing, err := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading replicaset %s after AlreadyExists: %w", rs.Name, err)
		}
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&d.Spec.Template, &existing.Spec.Template) {
			return fmt.Errorf("replicaset %s exists but is not in the cache yet", rs.Name)
		}
		next := d.DeepCopy()
		if next.Status.CollisionCount == nil {
			next.Status.CollisionCount = new(int32)
		}
		*next.Status.CollisionCount++
		if _, err := dClient.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return errors.Join(createErr, err)
		}
		return createErr
	}
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, createErr)
	// As upstream: the condition only with a progress deadline (not
	// MaxInt32), written before the event.
	if hasProgressDeadline(d) {
		next := d.DeepCopy()
		setCondition(&next.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonReplicaSetCreateError, msg, c.clock.Now()))
		if _, err := dClient.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			createErr = errors.Join(createErr, err)
		}
	}
	c.recorder.Event(d, corev1.EventTypeWarning, ReasonReplicaSetCreateError, msg)
	return createErr
}

func (c *Controller) adoptAndRelease(ctx context.Context, d *appsv1.Deployment, plan Plan) error {
	if len(plan.Adopt) > 0 {
		fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("rechecking deployment %s/%s before adoption: %w", d.Namespace, d.Name, err)
		}
		if fresh.UID != d.UID || fresh.DeletionTimestamp != nil {
			return fmt.Errorf("deployment %s/%s changed identity or is being deleted; not adopting", d.Namespace, d.Name)
		}
		for _, rs := range plan.Adopt {
			refs := append(append([]metav1.OwnerReference(nil), rs.OwnerReferences...), ControllerRef(d))
			if err := c.patchOwnerRefs(ctx, rs, refs); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("adopting replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
		}
	}
	for _, rs := range plan.Release {
		var refs []metav1.OwnerReference
		for _, r := range rs.OwnerReferences {
			if r.UID != d.UID {
				refs = append(refs, r)
			}
		}
		if err := c.patchOwnerRefs(ctx, rs, refs); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

func (c *Controller) patchOwnerRefs(ctx context.Context, rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) error {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs, "uid": rs.UID, "resourceVersion": rs.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	_, err = c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
