// Package eviction is the pods/eviction subresource: POST
// /api/v1/namespaces/<ns>/pods/<name>/eviction with a policy/v1 Eviction
// deletes the pod only if no PodDisruptionBudget selecting it would be
// violated, as kube-apiserver's eviction REST does. A budget allowing
// disruptions is decremented with a compare-and-swap on its status
// (recording the pod in status.disruptedPods for the disruption
// controller) before the pod is deleted; with none allowed the answer is
// 429 TooManyRequests; a pod covered by more than one budget is refused
// with 500, as upstream.
//
// Evictor is the decision and its writes over two small store interfaces
// (Pods, Budgets); Handler adapts it to HTTP and to the API server's
// stores.
package eviction

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Upstream's messages.
const (
	// MessageViolatesBudget is the 429's message.
	MessageViolatesBudget = "Cannot evict pod as it would violate the pod's disruption budget."
	// MessageMultipleBudgets is the 500's message.
	MessageMultipleBudgets = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
	// MaxDisruptedPods bounds status.disruptedPods (upstream's 2000).
	MaxDisruptedPods = 2000
	// ReasonEvictionByEvictionAPI and MessageEvicting are the
	// DisruptionTarget condition every evicted pod gets before its delete.
	ReasonEvictionByEvictionAPI = "EvictionByEvictionAPI"
	MessageEvicting             = "Eviction API: evicting"
)

// Pods reads, marks and deletes pods. Errors are API status errors.
type Pods interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// UpdatePodStatus applies mutate to the latest stored pod and writes
	// it (as an update of pods/status would), returning the written pod.
	// An error from mutate aborts the write and is returned.
	UpdatePodStatus(ctx context.Context, namespace, name string, mutate func(*corev1.Pod) error) (*corev1.Pod, error)
	// DeletePod deletes as DELETE does (graceful deletion, preconditions).
	DeletePod(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) error
}

// Budgets lists budgets and writes their status.
type Budgets interface {
	ListBudgets(ctx context.Context, namespace string) ([]*policyv1.PodDisruptionBudget, error)
	GetBudget(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error)
	// UpdateBudgetStatus writes pdb's status if pdb.ResourceVersion is
	// still current, otherwise it returns a 409 Conflict.
	UpdateBudgetStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error
}

// Evictor evicts pods honouring their disruption budgets.
type Evictor struct {
	Pods    Pods
	Budgets Budgets
	// Now stamps disruptedPods entries (time.Now when nil).
	Now func() time.Time
	// Retry is the backoff for budget status conflicts (a short default
	// when zero).
	Retry wait.Backoff
}

// checkName refuses an Eviction naming another pod than the URL.
func checkName(name string, ev *policyv1.Eviction) error {
	if ev.Name != name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	return nil
}

// Evict evicts pod namespace/name as asked by ev, returning the Success
// status kube-apiserver returns (with 201 Created) or a status error.
func (e *Evictor) Evict(ctx context.Context, namespace, name string, ev *policyv1.Eviction) (*metav1.Status, error) {
	if err := checkName(name, ev); err != nil {
		return nil, err
	}
	opts := &metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		opts = ev.DeleteOptions.DeepCopy()
	}
	dryRun := len(opts.DryRun) > 0
	pod, err := e.Pods.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if canIgnoreBudgets(pod) {
		return e.deletePod(ctx, pod, opts)
	}
	pdbs, err := e.budgetsFor(ctx, pod)
	if err != nil {
		return nil, err
	}
	if len(pdbs) > 1 {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s", MessageMultipleBudgets))
	}
	if len(pdbs) == 0 {
		return e.deletePod(ctx, pod, opts)
	}
	pdb := pdbs[0]
	if !podReady(pod) {
		policy := policyv1.IfHealthyBudget
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil {
			policy = *p
		}
		// An unhealthy pod does not count towards the budget: it may go
		// when the policy says so, or when the budget is met without it.
		if policy == policyv1.AlwaysAllow ||
			(pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0) {
			if opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil {
				if opts.Preconditions == nil {
					opts.Preconditions = &metav1.Preconditions{}
				}
				rv := pod.ResourceVersion
				opts.Preconditions.ResourceVersion = &rv
			}
			return e.deletePod(ctx, pod, opts)
		}
	}
	backoff := e.Retry
	if backoff.Steps == 0 {
		backoff = wait.Backoff{Steps: 20, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Cap: time.Second}
	}
	refresh := false
	err = retry.RetryOnConflict(backoff, func() error {
		if refresh {
			var err error
			if pdb, err = e.Budgets.GetBudget(ctx, pdb.Namespace, pdb.Name); err != nil {
				return err
			}
		}
		refresh = true
		return e.checkAndDecrement(ctx, pod.Name, pdb.DeepCopy(), dryRun)
	})
	if err != nil {
		return nil, err
	}
	return e.deletePod(ctx, pod, opts)
}

// checkAndDecrement takes one disruption from pdb (upstream's
// checkAndDecrement) or says why it cannot.
func (e *Evictor) checkAndDecrement(ctx context.Context, podName string, pdb *policyv1.PodDisruptionBudget, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooManyRequests(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	}
	if len(pdb.Status.DisruptedPods) > MaxDisruptedPods {
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name,
			fmt.Errorf("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		return tooManyRequests(0, fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently",
			pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy))
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		apimeta.SetStatusCondition(&pdb.Status.Conditions, metav1.Condition{
			Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
			Reason: "InsufficientPods", ObservedGeneration: pdb.Status.ObservedGeneration,
			LastTransitionTime: metav1.NewTime(e.now()),
		})
	}
	if dryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.NewTime(e.now())
	return e.Budgets.UpdateBudgetStatus(ctx, pdb)
}

func (e *Evictor) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// deletePod marks the pod with DisruptionTarget=True (reason
// EvictionByEvictionAPI) through its status, then deletes it, as
// kube-apiserver's eviction does; a dry run marks nothing. The delete's
// preconditions are checked against the latest pod before the mark, and a
// resourceVersion precondition moves on to the version the mark wrote.
func (e *Evictor) deletePod(ctx context.Context, pod *corev1.Pod, opts *metav1.DeleteOptions) (*metav1.Status, error) {
	if len(opts.DryRun) == 0 {
		marked, err := e.Pods.UpdatePodStatus(ctx, pod.Namespace, pod.Name, func(latest *corev1.Pod) error {
			if err := checkPreconditions(latest, opts.Preconditions); err != nil {
				return err
			}
			setDisruptionTarget(latest, e.now())
			return nil
		})
		if err != nil {
			return nil, err
		}
		if p := opts.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != "" {
			opts = opts.DeepCopy()
			rv := marked.ResourceVersion
			opts.Preconditions.ResourceVersion = &rv
		}
	}
	if err := e.Pods.DeletePod(ctx, pod.Namespace, pod.Name, opts); err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// checkPreconditions is the delete's UID and resourceVersion
// preconditions against the latest pod (409 Conflict when they fail).
func checkPreconditions(pod *corev1.Pod, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
		return apierrors.NewConflict(podsGR, pod.Name, fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
		return apierrors.NewConflict(podsGR, pod.Name, fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
	}
	return nil
}

// setDisruptionTarget sets DisruptionTarget=True with the eviction's
// reason and message, keeping lastTransitionTime when the status is
// already True.
func setDisruptionTarget(pod *corev1.Pod, now time.Time) {
	want := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ReasonEvictionByEvictionAPI, Message: MessageEvicting, LastTransitionTime: metav1.NewTime(now)}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status == want.Status {
			want.LastTransitionTime = c.LastTransitionTime
		}
		*c = want
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, want)
}

// budgetsFor lists the budgets in pod's namespace whose selector matches
// it (a nil selector matches nothing, an empty one everything).
func (e *Evictor) budgetsFor(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	all, err := e.Budgets.ListBudgets(ctx, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range all {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// canIgnoreBudgets: a finished, pending or already terminating pod is
// deleted without consulting budgets (it disrupts nothing more).
func canIgnoreBudgets(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tooManyRequests(retryAfter int, cause string) error {
	err := apierrors.NewTooManyRequests(MessageViolatesBudget, retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}
