package replicaset

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeproof/kubeproof/impl/controller/podstate"
)

// BurstReplicas caps how many pods one sync creates or deletes (upstream 500).
const BurstReplicas = 500

// Observed is everything one sync of a ReplicaSet looks at.
type Observed struct {
	RS *appsv1.ReplicaSet
	// Pods are all pods in the ReplicaSet's namespace, from the informer cache.
	Pods []*corev1.Pod
	// RelatedPods are the active pods of this ReplicaSet and of its siblings
	// (ReplicaSets with the same controller owner); they rank deletions by
	// how crowded a node is.
	RelatedPods []*corev1.Pod
	// ExpectationsSatisfied is false while earlier creations/deletions of this
	// ReplicaSet have not shown up in the cache.
	ExpectationsSatisfied bool
	Now                   time.Time
}

// Plan is the writes one sync intends, as data. The executor performs them
// in order: adopt, release, create, delete, then status.
type Plan struct {
	// Adopt are orphans matching the selector: patch in a controller ref.
	Adopt []*corev1.Pod
	// Release are owned pods that no longer match: patch out our ref.
	Release []*corev1.Pod
	// Owned are the active pods this ReplicaSet controls once Adopt succeeds.
	Owned []*corev1.Pod
	// Terminating are the pods it controls that are being deleted and not yet
	// finished (status.terminatingReplicas).
	Terminating []*corev1.Pod
	// Create is how many pods to create from the template (in slow-start batches).
	Create int
	// Delete are the pods to delete, best candidates first.
	Delete []*corev1.Pod
}

// ControllerRef returns the controller owner reference a ReplicaSet puts on
// its pods (RS-2: controller true, blockOwnerDeletion true).
func ControllerRef(rs *appsv1.ReplicaSet) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion:         "apps/v1",
		Kind:               "ReplicaSet",
		Name:               rs.Name,
		UID:                rs.UID,
		Controller:         &t,
		BlockOwnerDeletion: &t,
	}
}

// Decide is the ReplicaSet controller's decision: from the observed
// ReplicaSet and pods, which pods to adopt, release, create and delete.
func Decide(obs Observed) (Plan, error) {
	rs := obs.RS
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return Plan{}, fmt.Errorf("parsing selector of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	var plan Plan
	plan.Adopt, plan.Release, plan.Owned = Claim(rs, selector, obs.Pods)
	plan.Terminating = TerminatingPods(rs, selector, obs.Pods)

	// RS-1: act on the count only when the cache reflects our own
	// earlier writes; and a ReplicaSet being deleted makes no new pods.
	if !obs.ExpectationsSatisfied || rs.DeletionTimestamp != nil {
		return plan, nil
	}
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	diff := len(plan.Owned) - int(want)
	switch {
	case diff < 0:
		plan.Create = min(-diff, BurstReplicas)
	case diff > 0:
		plan.Delete = PodsToDelete(plan.Owned, obs.RelatedPods, min(diff, BurstReplicas), obs.Now)
	}
	return plan, nil
}

// Claim splits the namespace's pods into orphans to adopt, owned pods to
// release and the active pods the ReplicaSet controls afterwards, as
// upstream's ControllerRefManager does:
//   - a pod controlled by rs stays owned while it matches the selector and is
//     released when it stops matching (unless rs is being deleted);
//   - an orphan that matches, is not being deleted, and whose would-be owner is
//     not being deleted is adopted (RS-2);
//   - pods controlled by someone else are never touched.
//
// Owned holds only active pods (not finished, not being deleted).
func Claim(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) (adopt, release, owned []*corev1.Pod) {
	for _, pod := range pods {
		if pod.Namespace != rs.Namespace {
			continue
		}
		matches := selector.Matches(labels.Set(pod.Labels))
		ref := metav1.GetControllerOf(pod)
		switch {
		case ref != nil && ref.UID == rs.UID:
			if matches {
				if podstate.IsActive(pod) {
					owned = append(owned, pod)
				}
			} else if rs.DeletionTimestamp == nil {
				release = append(release, pod)
			}
		case ref != nil:
			// Controlled by another object.
		case matches && rs.DeletionTimestamp == nil && pod.DeletionTimestamp == nil:
			adopt = append(adopt, pod)
			if podstate.IsActive(pod) {
				owned = append(owned, pod)
			}
		}
	}
	return adopt, release, owned
}

// TerminatingPods returns the pods rs controls that match its selector, are
// being deleted and have not yet Succeeded or Failed, as upstream counts
// status.terminatingReplicas (FilterTerminatingPods, then FilterClaimedPods:
// orphans are never counted).
func TerminatingPods(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod.Namespace != rs.Namespace || pod.DeletionTimestamp == nil ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.UID == rs.UID && selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out
}

// PodsToDelete picks n of the owned pods to delete, ranked as upstream
// ranks them ; see Less.
func PodsToDelete(owned, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(owned) {
		return append([]*corev1.Pod(nil), owned...)
	}
	onNode := map[string]int{}
	for _, p := range related {
		if p.Spec.NodeName != "" && podstate.IsActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]rankedPod, len(owned))
	for i, p := range owned {
		rank := 0
		if p.Spec.NodeName != "" {
			rank = onNode[p.Spec.NodeName]
		}
		ranked[i] = rankedPod{pod: p, colocated: rank}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return Less(ranked[i], ranked[j], now) })
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = ranked[i].pod
	}
	return out
}
