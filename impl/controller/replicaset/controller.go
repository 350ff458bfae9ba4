// Package replicaset is kubeproof's ReplicaSet controller: it keeps the
// number of active pods owned by each ReplicaSet equal to spec.replicas.
//
// The decision (Decide, PodsToDelete/Less, CalculateStatus) is pure; this
// file is the loop: informer handlers that only enqueue keys and feed the
// expectations, and an executor that performs a Plan with the API.
//
// Properties (spec/README.md):
//   - RS-1: no creation or deletion decision on a cache that has not observed
//     the previous decision's writes (Decide, package expectations).
//   - RS-2: a pod has at most one controller owner — only orphans are
//     adopted, never while the ReplicaSet is being deleted, and pods that stop
//     matching are released (Claim, adoptAndRelease).
//
// Upstream behaviour without a spec number: the controller owner reference
// with blockOwnerDeletion (ControllerRef), slow-start batches 1, 2, 4, ...
// (CreateInBatches), the deletion ranking (Less) and status (CalculateStatus).
package replicaset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

	"github.com/kubeproof/kubeproof/impl/controller/expectations"
	"github.com/kubeproof/kubeproof/impl/controller/workloop"
	"github.com/kubeproof/kubeproof/impl/faults"
)

// Event reasons, as upstream.
const (
	EventSuccessfulCreate = "SuccessfulCreate"
	EventFailedCreate     = "FailedCreate"
	EventSuccessfulDelete = "SuccessfulDelete"
	EventFailedDelete     = "FailedDelete"
)

// Controller is the ReplicaSet controller.
type Controller struct {
	client       kubernetes.Interface
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
	synced       []cache.InformerSynced
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *expectations.Expectations
	recorder     record.EventRecorder
	clock        clock.Clock
}

// New wires a ReplicaSet controller to shared informers. Call Run to start it.
func New(client kubernetes.Interface, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, clk clock.Clock) *Controller {
	c := &Controller{
		client:       client,
		rsLister:     rsInformer.Lister(),
		podLister:    podInformer.Lister(),
		synced:       []cache.InformerSynced{rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:        workloop.NewQueue("replicaset"),
		expectations: expectations.New(clk),
		recorder:     recorder,
		clock:        clk,
	}
	_, _ = rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	return c
}

// Run waits for the caches and runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "replicaset controller", c.queue, c.synced...); err != nil {
		return err
	}
	workloop.Run(ctx, "replicaset", c.queue, workers, c.sync)
	return nil
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err == nil {
		c.queue.Add(key)
	}
}

// ownerOf resolves a pod's controller reference to a ReplicaSet in the cache.
func (c *Controller) ownerOf(pod *corev1.Pod) *appsv1.ReplicaSet {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	rss, err := c.rsLister.GetPodReplicaSets(pod)
	if err != nil {
		return
	}
	for _, rs := range rss {
		c.enqueue(rs)
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if rs := c.ownerOf(pod); rs != nil {
		key, _ := cache.MetaNamespaceKeyFunc(rs)
		c.expectations.CreationObserved(key)
		c.queue.Add(key)
		return
	}
	if metav1.GetControllerOf(pod) == nil {
		c.enqueueMatching(pod)
	}
}

func (c *Controller) updatePod(oldObj, newObj any) {
	oldPod, newPod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	if newPod.DeletionTimestamp != nil {
		// A graceful delete shows up as an update; count it as observed now.
		c.deletePod(newPod)
		return
	}
	if rs := c.ownerOf(oldPod); rs != nil {
		c.enqueue(rs)
	}
	if rs := c.ownerOf(newPod); rs != nil {
		c.enqueue(rs)
	} else if metav1.GetControllerOf(newPod) == nil {
		c.enqueueMatching(newPod)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	rs := c.ownerOf(pod)
	if rs == nil {
		return
	}
	key, _ := cache.MetaNamespaceKeyFunc(rs)
	podKey, _ := cache.MetaNamespaceKeyFunc(pod)
	c.expectations.DeletionObserved(key, podKey)
	c.queue.Add(key)
}

// sync converges one ReplicaSet. It is idempotent and level-triggered.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	obs := Observed{
		RS:                    rs,
		Pods:                  pods,
		RelatedPods:           c.relatedPods(rs, pods),
		ExpectationsSatisfied: c.expectations.Satisfied(key) || faults.Enabled(faults.ReplicaSetIgnoresExpectations), // mutation (RS-1)
		Now:                   c.clock.Now(),
	}
	plan, err := Decide(obs)
	if err != nil {
		return err
	}
	owned, err := c.adoptAndRelease(ctx, rs, plan)
	if err != nil {
		return err
	}
	manageErr := c.manage(ctx, rs, key, plan)
	status := CalculateStatus(rs, owned, plan.Terminating, manageErr, plan.Create > 0, obs.Now)
	if !equality.Semantic.DeepEqual(status, rs.Status) {
		updated := rs.DeepCopy()
		updated.Status = status
		if _, err := c.client.AppsV1().ReplicaSets(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return errors.Join(manageErr, fmt.Errorf("updating status of replicaset %s: %w", key, err))
		}
	}
	if manageErr == nil {
		if d := RequeueAfterForAvailability(rs, owned, obs.Now); d > 0 {
			c.queue.AddAfter(key, d)
		}
	}
	return manageErr
}

// relatedPods returns the pods of rs and of the ReplicaSets sharing its
// controller owner (a Deployment's other ReplicaSets).
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet, pods []*corev1.Pod) []*corev1.Pod {
	siblings := map[types.UID]bool{rs.UID: true}
	if owner := metav1.GetControllerOf(rs); owner != nil {
		all, _ := c.rsLister.ReplicaSets(rs.Namespace).List(labels.Everything())
		for _, other := range all {
			if ref := metav1.GetControllerOf(other); ref != nil && ref.UID == owner.UID {
				siblings[other.UID] = true
			}
		}
	}
	var related []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && siblings[ref.UID] {
			related = append(related, p)
		}
	}
	return related
}

// adoptAndRelease performs the ownership part of plan and returns the pods
// the ReplicaSet owns afterwards.
func (c *Controller) adoptAndRelease(ctx context.Context, rs *appsv1.ReplicaSet, plan Plan) ([]*corev1.Pod, error) {
	owned := plan.Owned
	if len(plan.Adopt) > 0 {
		// Adopt only if the ReplicaSet we saw is still the live one and is not
		// being deleted (a quorum read, not the cache).
		fresh, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("rechecking replicaset %s/%s before adoption: %w", rs.Namespace, rs.Name, err)
		}
		if fresh.UID != rs.UID {
			return nil, fmt.Errorf("replicaset %s/%s was recreated (uid %s, cached %s)", rs.Namespace, rs.Name, fresh.UID, rs.UID)
		}
		adopted := map[types.UID]bool{}
		if fresh.DeletionTimestamp == nil {
			for _, pod := range plan.Adopt {
				refs := append(append([]metav1.OwnerReference(nil), pod.OwnerReferences...), ControllerRef(rs))
				err := c.patchOwnerRefs(ctx, pod, refs)
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("adopting pod %s/%s: %w", pod.Namespace, pod.Name, err)
				}
				adopted[pod.UID] = true
			}
		}
		isAdopt := map[types.UID]bool{}
		for _, p := range plan.Adopt {
			isAdopt[p.UID] = true
		}
		kept := owned[:0:0]
		for _, p := range owned {
			if !isAdopt[p.UID] || adopted[p.UID] {
				kept = append(kept, p)
			}
		}
		owned = kept
	}
	for _, pod := range plan.Release {
		var refs []metav1.OwnerReference
		for _, r := range pod.OwnerReferences {
			if r.UID != rs.UID {
				refs = append(refs, r)
			}
		}
		if err := c.patchOwnerRefs(ctx, pod, refs); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("releasing pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return owned, nil
}

// patchOwnerRefs replaces the pod's owner references with a JSON merge patch
// guarded by the pod's uid and resourceVersion, so a patch computed from a
// stale cache fails with a conflict instead of losing a concurrent change.
func (c *Controller) patchOwnerRefs(ctx context.Context, pod *corev1.Pod, refs []metav1.OwnerReference) error {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs,
		"uid":             pod.UID,
		"resourceVersion": pod.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// manage performs the creations and deletions of plan, recording
// expectations first so the pod events they cause are recognised.
func (c *Controller) manage(ctx context.Context, rs *appsv1.ReplicaSet, key string, plan Plan) error {
	switch {
	case plan.Create > 0:
		c.expectations.ExpectCreations(key, plan.Create)
		created, err := CreateInBatches(plan.Create, func() error {
			if faults.CrashPoint(ctx, faults.CrashReplicaSetMidBatch) { // crash point: some pods of the batch created, no status
				return faults.ErrCrashed
			}
			return c.createPod(ctx, rs)
		})
		for i := created; i < plan.Create; i++ {
			// Failed or skipped creations will never be observed.
			c.expectations.CreationObserved(key)
		}
		return err
	case len(plan.Delete) > 0:
		podKeys := make([]string, len(plan.Delete))
		for i, p := range plan.Delete {
			podKeys[i], _ = cache.MetaNamespaceKeyFunc(p)
		}
		c.expectations.ExpectDeletions(key, podKeys)
		var first error
		for i, p := range plan.Delete {
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			if err != nil {
				c.expectations.DeletionObserved(key, podKeys[i])
				if apierrors.IsNotFound(err) {
					continue
				}
				c.recorder.Eventf(rs, corev1.EventTypeWarning, EventFailedDelete, "Error deleting: %v", err)
				if first == nil {
					first = err
				}
				continue
			}
			c.recorder.Eventf(rs, corev1.EventTypeNormal, EventSuccessfulDelete, "Deleted pod: %s", p.Name)
		}
		// Like upstream, the first failure alone is reported (the others are
		// in events); it becomes the ReplicaFailure condition's message.
		if first != nil {
			return fmt.Errorf("unable to delete pods: %w", first)
		}
		return nil
	}
	return nil
}

// CreateInBatches calls create n times in slow-start batches of 1, 2, 4, ...:
// a batch runs only if every earlier call succeeded, so a quota or admission
// error costs one request, not n. It returns how many calls succeeded and,
// as upstream's slowStartBatch, the first error of the failing batch (the
// ReplicaFailure condition's message; each failure has its own event).
func CreateInBatches(n int, create func() error) (int, error) {
	succeeded := 0
	for batch := 1; succeeded < n; batch *= 2 {
		size := min(batch, n-succeeded)
		errs := make(chan error, size)
		for i := 0; i < size; i++ {
			go func() { errs <- create() }()
		}
		var first error
		for i := 0; i < size; i++ {
			if err := <-errs; err != nil {
				if first == nil {
					first = err
				}
			} else {
				succeeded++
			}
		}
		if first != nil {
			return succeeded, first
		}
	}
	return succeeded, nil
}

// PodFromTemplate builds the pod a ReplicaSet creates: the template's labels,
// annotations, finalizers and spec, generateName "<rs>-", and the controller
// owner reference (RS-2).
func PodFromTemplate(rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			Finalizers:      append([]string(nil), t.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{ControllerRef(rs)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, PodFromTemplate(rs), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is going away and every create would fail: as
			// upstream, no event, no ReplicaFailure, and the creation stays
			// expected (no retry until the expectations expire).
			return nil
		}
		c.recorder.Eventf(rs, corev1.EventTypeWarning, EventFailedCreate, "Error creating: %v", err)
		return err
	}
	slog.Debug("created pod", "replicaset", rs.Namespace+"/"+rs.Name, "pod", pod.Name)
	c.recorder.Eventf(rs, corev1.EventTypeNormal, EventSuccessfulCreate, "Created pod: %s", pod.Name)
	return nil
}
