// Package disruption is the disruption controller: it keeps the status of
// every PodDisruptionBudget (policy/v1) true to the pods its selector
// matches, as kube-controller-manager's disruption controller does —
// currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed,
// observedGeneration, the DisruptionAllowed condition, and the clean-up of
// disruptedPods (evictions the API server recorded that the controller
// has now seen or that timed out). It records upstream's events (NoPods,
// CalculateExpectedPodCountFailed, UnmanagedPods, NotDeleted) and resets a
// DisruptionTarget=True pod condition to False when the pod it marks is
// still not being deleted after StalePodDisruptionTimeout.
//
// The decision (Decide) is a pure function of the budget, its pods and
// their controllers; Controller is the thin informer loop that does the
// I/O. The eviction subresource (impl/apiserver/eviction) reads the
// status this controller writes.
package disruption

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/controller/podstate"
)

// DeletionTimeout is how long an eviction recorded in
// status.disruptedPods is trusted to be followed by the pod's deletion
// (upstream's 2 minutes); after it the pod counts as healthy again.
const DeletionTimeout = 2 * time.Minute

// Event reasons, as upstream's disruption controller records them.
const (
	EventNoPods                          = "NoPods"
	EventCalculateExpectedPodCountFailed = "CalculateExpectedPodCountFailed"
	EventUnmanagedPods                   = "UnmanagedPods"
	EventNotDeleted                      = "NotDeleted"
)

// Event is an event the sync records: about the budget, or about Pod
// when set.
type Event struct {
	Pod                   *corev1.Pod
	Type, Reason, Message string
}

// Condition reasons, as upstream.
const (
	ReasonSufficientPods   = "SufficientPods"
	ReasonInsufficientPods = "InsufficientPods"
	ReasonSyncFailed       = "SyncFailed"
)

// Observed is what one sync sees: the budget, the pods its selector
// matches in its namespace, and that namespace's ReplicaSets and
// Deployments by name (to find the scale behind each pod).
type Observed struct {
	PDB         *policyv1.PodDisruptionBudget
	Pods        []*corev1.Pod
	ReplicaSets map[string]*appsv1.ReplicaSet
	Deployments map[string]*appsv1.Deployment
	Now         time.Time
}

// Decision is the intended status and when to look again (zero: no need;
// set when a disruptedPods entry will time out).
type Decision struct {
	Status policyv1.PodDisruptionBudgetStatus
	// Write is false when Status equals the stored status.
	Write bool
	// RecheckAt is when a recorded disruption expires.
	RecheckAt time.Time
	// Err is why the expected pod count could not be computed; Status is
	// then the fail-safe one (no disruptions allowed, SyncFailed).
	Err error
	// Events to record.
	Events []Event
}

// Decide computes pdb's next status from what was observed, and the
// events upstream records on the way: NoPods when the selector matches no
// pod, CalculateExpectedPodCountFailed when a pod's controller cannot be
// found, UnmanagedPods when a scale-relative budget selects pods without
// a controller, NotDeleted (on the pod) when an eviction recorded in
// disruptedPods was not followed by the pod's deletion in time.
func Decide(o Observed) Decision {
	pdb := o.PDB
	var events []Event
	if len(o.Pods) == 0 {
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: EventNoPods, Message: "No matching pods found"})
	}
	expected, desired, unmanaged, err := expectedPodCount(o)
	if err != nil {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: EventCalculateExpectedPodCountFailed,
			Message: fmt.Sprintf("Failed to calculate the number of expected pods: %v", err)})
		st := failSafeStatus(pdb, err)
		return Decision{Status: st, Write: !apiequality.Semantic.DeepEqual(st, pdb.Status), Err: err, Events: events}
	}
	if len(unmanaged) > 0 {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: EventUnmanagedPods, Message: fmt.Sprintf(
			"Pods selected by this PodDisruptionBudget (selector: %v) were found to be unmanaged. As a result, the status of the PDB "+
				"cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set "+
				"\".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)})
	}
	disrupted, recheck, overdue := stillDisrupted(pdb, o.Pods, o.Now)
	for _, pod := range overdue {
		events = append(events, Event{Pod: pod, Type: corev1.EventTypeWarning, Reason: EventNotDeleted,
			Message: fmt.Sprintf("Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)})
	}
	healthy := countHealthy(o.Pods, disrupted, o.Now)
	st := pdb.Status.DeepCopy()
	st.ExpectedPods = expected
	st.DesiredHealthy = desired
	st.CurrentHealthy = healthy
	st.DisruptionsAllowed = healthy - desired
	if expected <= 0 || st.DisruptionsAllowed < 0 {
		st.DisruptionsAllowed = 0
	}
	st.DisruptedPods = disrupted
	st.ObservedGeneration = pdb.Generation
	setDisruptionAllowedCondition(st, pdb.Generation, o.Now)
	return Decision{Status: *st, Write: !apiequality.Semantic.DeepEqual(*st, pdb.Status), RecheckAt: recheck, Events: events}
}

// failSafeStatus allows no disruption and says why (upstream's failSafe).
func failSafeStatus(pdb *policyv1.PodDisruptionBudget, err error) policyv1.PodDisruptionBudgetStatus {
	st := pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: ReasonSyncFailed, Message: err.Error(), ObservedGeneration: pdb.Generation,
	})
	return *st
}

func setDisruptionAllowedCondition(st *policyv1.PodDisruptionBudgetStatus, generation int64, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now)}
	if st.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonSufficientPods
	} else {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInsufficientPods
	}
	apimeta.SetStatusCondition(&st.Conditions, c)
}

// expectedPodCount is upstream's getExpectedPodCount: maxUnavailable and
// a percentage minAvailable are relative to the scale of the pods'
// controllers; an integer minAvailable is relative to the pods that exist.
// Percentages round up. unmanaged names the pods without a controller
// where the scale counts.
func expectedPodCount(o Observed) (expected, desired int32, unmanaged []string, err error) {
	spec := o.PDB.Spec
	switch {
	case spec.MaxUnavailable != nil:
		if expected, unmanaged, err = expectedScale(o); err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("reading maxUnavailable: %w", err)
		}
		desired = max(expected-int32(maxUnavailable), 0)
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		desired = spec.MinAvailable.IntVal
		expected = int32(len(o.Pods))
	case spec.MinAvailable != nil:
		if expected, unmanaged, err = expectedScale(o); err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("reading minAvailable: %w", err)
		}
		desired = int32(minAvailable)
	}
	return expected, desired, unmanaged, nil
}

// expectedScale adds up the replicas of the controllers of the pods: a
// ReplicaSet owned by a Deployment counts with the Deployment's replicas,
// each controller once. Pods without a controller add nothing and are
// returned as unmanaged; a controller of another kind, or one not found,
// is an error.
func expectedScale(o Observed) (int32, []string, error) {
	scales := map[string]int32{}
	var unmanaged []string
	for _, pod := range o.Pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		key, scale, err := controllerScale(o, ref)
		if err != nil {
			return 0, nil, fmt.Errorf("found no controllers for pod %q: %w", pod.Name, err)
		}
		scales[key] = scale
	}
	var total int32
	for _, s := range scales {
		total += s
	}
	return total, unmanaged, nil
}

func controllerScale(o Observed, ref *metav1.OwnerReference) (string, int32, error) {
	if ref.Kind != "ReplicaSet" || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return "", 0, fmt.Errorf("controller %s %s is not a ReplicaSet or Deployment", ref.Kind, ref.Name)
	}
	rs, ok := o.ReplicaSets[ref.Name]
	if !ok || rs.UID != ref.UID {
		return "", 0, fmt.Errorf("ReplicaSet %s not found", ref.Name)
	}
	if dref := metav1.GetControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
		d, ok := o.Deployments[dref.Name]
		if !ok || d.UID != dref.UID {
			return "", 0, fmt.Errorf("Deployment %s not found", dref.Name)
		}
		return "Deployment/" + string(d.UID), replicas(d.Spec.Replicas), nil
	}
	return "ReplicaSet/" + string(rs.UID), replicas(rs.Spec.Replicas), nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// stillDisrupted keeps the disruptedPods entries of pods that exist, are
// not yet being deleted and whose eviction is younger than
// DeletionTimeout; it returns when the oldest kept entry expires, and
// the pods whose entry expired without their deletion (overdue).
func stillDisrupted(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (kept map[string]metav1.Time, recheck time.Time, overdue []*corev1.Pod) {
	for _, pod := range pods {
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if !expires.After(now) {
			overdue = append(overdue, pod)
			continue
		}
		if kept == nil {
			kept = map[string]metav1.Time{}
		}
		kept[pod.Name] = at
		if recheck.IsZero() || expires.Before(recheck) {
			recheck = expires
		}
	}
	return kept, recheck, overdue
}

// countHealthy counts ready pods that are neither being deleted nor
// recorded as disrupted.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if _, ok := disrupted[pod.Name]; ok {
			continue
		}
		if podstate.IsReady(pod) {
			n++
		}
	}
	return n
}
