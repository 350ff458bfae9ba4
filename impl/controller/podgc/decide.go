// Package podgc is the pod garbage collector, as kube-controller-manager's
// podgc controller (controller name pod-garbage-collector). Every check
// period it force-deletes (grace period 0):
//
//   - terminated pods (phase Succeeded or Failed) beyond
//     --terminated-pod-gc-threshold, evicted ones first, then oldest first
//     by creationTimestamp, then by name;
//   - terminating pods on nodes that are not Ready and carry the
//     node.kubernetes.io/out-of-service taint;
//   - pods bound to a node that no longer exists (orphans; spec LIVE-4:
//     every pod bound to a deleted node is eventually deleted). A node
//     missing from the informer is quarantined first (40 s) and then
//     confirmed gone with a quorum GET; its pods get the DisruptionTarget
//     condition (reason DeletionByPodGC) with phase Failed before the
//     delete;
//   - terminating pods that were never scheduled.
//
// A pod not yet in a terminal phase is patched to phase Failed before it
// is deleted, so a pod whose kubelet is gone never stays Running.
//
// Decide and Orphans are pure functions of the observed pods and nodes
// returning the intended deletions as data; Controller is the thin loop
// over the shared informers that does the I/O.
package podgc

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's defaults.
const (
	// DefaultTerminatedPodThreshold is --terminated-pod-gc-threshold's
	// default.
	DefaultTerminatedPodThreshold = 12500
	// DefaultCheckPeriod is how often the collector runs (gcCheckPeriod).
	DefaultCheckPeriod = 20 * time.Second
	// DefaultQuarantine is how long a node missing from the informer is
	// given to appear before a quorum GET decides whether it is gone.
	DefaultQuarantine = 40 * time.Second
)

// Reason says why a pod is collected; the values are the reason label of
// upstream's pod_gc_collector metrics.
type Reason string

// Reasons.
const (
	ReasonTerminated             Reason = "terminated"
	ReasonOutOfService           Reason = "out-of-service"
	ReasonOrphaned               Reason = "orphaned"
	ReasonTerminatingUnscheduled Reason = "unscheduled"
)

// DisruptionTarget condition of an orphaned pod, as upstream.
const (
	ConditionReasonDeletionByPodGC = "DeletionByPodGC"
	ConditionMessageNodeGone       = "PodGC: node no longer exists"
)

// Action is one intended force deletion.
type Action struct {
	Pod    *corev1.Pod
	Reason Reason
	// Condition, when set, is added to the pod's status (with phase
	// Failed) before the delete.
	Condition *corev1.PodCondition
}

// MarkFailed reports whether the pod's status is patched to phase Failed
// before the delete: every pod not already terminal.
func (a Action) MarkFailed() bool { return !isTerminated(a.Pod) }

// Observed is what one collection pass sees.
type Observed struct {
	Pods  []*corev1.Pod
	Nodes []*corev1.Node
	// Quarantined are the node names found missing earlier, with when
	// they were first found missing.
	Quarantined map[string]time.Time
	Now         time.Time
}

// Config holds the collector's knobs.
type Config struct {
	// TerminatedPodThreshold is how many terminated pods may exist before
	// the oldest are deleted; 0 or less turns that collection off.
	TerminatedPodThreshold int
	// Quarantine before a missing node is checked (DefaultQuarantine when
	// 0).
	Quarantine time.Duration
	// CheckPeriod between passes of the loop (DefaultCheckPeriod when 0).
	CheckPeriod time.Duration
}

// Plan is the outcome of one pass before the quorum check of missing nodes.
type Plan struct {
	// Deletes, in upstream's order: terminated over the threshold,
	// terminating on out-of-service nodes, unscheduled terminating. A pod
	// appears at most once.
	Deletes []Action
	// Quarantined is the next quarantine: every node that pods are bound
	// to and the informer does not know, with the time it was first
	// found missing.
	Quarantined map[string]time.Time
	// Verify are quarantined nodes whose quarantine is over: the loop
	// GETs each from the API server (a quorum read) and passes those not
	// found to Orphans.
	Verify []string
}

// Decide is one pass of the collector over observed state.
func Decide(o Observed, cfg Config) Plan {
	quarantine := cfg.Quarantine
	if quarantine <= 0 {
		quarantine = DefaultQuarantine
	}
	nodes := make(map[string]*corev1.Node, len(o.Nodes))
	for _, n := range o.Nodes {
		nodes[n.Name] = n
	}
	var p Plan
	chosen := map[*corev1.Pod]bool{}
	add := func(pod *corev1.Pod, r Reason) {
		if !chosen[pod] {
			chosen[pod] = true
			p.Deletes = append(p.Deletes, Action{Pod: pod, Reason: r})
		}
	}
	if cfg.TerminatedPodThreshold > 0 {
		var terminated []*corev1.Pod
		for _, pod := range o.Pods {
			if isTerminated(pod) {
				terminated = append(terminated, pod)
			}
		}
		if excess := len(terminated) - cfg.TerminatedPodThreshold; excess > 0 {
			sortForCollection(terminated)
			for _, pod := range terminated[:excess] {
				add(pod, ReasonTerminated)
			}
		}
	}
	var outOfService []*corev1.Pod
	for _, pod := range o.Pods {
		if pod.DeletionTimestamp == nil {
			continue
		}
		if n, ok := nodes[pod.Spec.NodeName]; ok && !nodeReady(n) && hasTaintKey(n, corev1.TaintNodeOutOfService) {
			outOfService = append(outOfService, pod)
		}
	}
	sortForCollection(outOfService)
	for _, pod := range outOfService {
		add(pod, ReasonOutOfService)
	}
	for _, pod := range o.Pods {
		if pod.DeletionTimestamp != nil && pod.Spec.NodeName == "" {
			add(pod, ReasonTerminatingUnscheduled)
		}
	}

	p.Quarantined = map[string]time.Time{}
	for _, pod := range o.Pods {
		name := pod.Spec.NodeName
		if name == "" || nodes[name] != nil {
			continue
		}
		if _, ok := p.Quarantined[name]; ok {
			continue
		}
		since, ok := o.Quarantined[name]
		if !ok {
			since = o.Now
		}
		p.Quarantined[name] = since
		if !o.Now.Before(since.Add(quarantine)) {
			p.Verify = append(p.Verify, name)
		}
	}
	slices.Sort(p.Verify)
	return p
}

// Orphans returns the deletions of the pods bound to nodes confirmed gone,
// each with the DisruptionTarget condition (LIVE-4). Pods in skip (already
// planned for deletion this pass) are left out.
func Orphans(pods []*corev1.Pod, goneNodes map[string]bool, skip []Action, now time.Time) []Action {
	skipped := map[*corev1.Pod]bool{}
	for _, a := range skip {
		skipped[a.Pod] = true
	}
	var out []Action
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || !goneNodes[pod.Spec.NodeName] || skipped[pod] {
			continue
		}
		out = append(out, Action{Pod: pod, Reason: ReasonOrphaned, Condition: DisruptionTargetCondition(now)})
	}
	return out
}

// DisruptionTargetCondition is the condition an orphaned pod gets.
func DisruptionTargetCondition(now time.Time) *corev1.PodCondition {
	return &corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ConditionReasonDeletionByPodGC, Message: ConditionMessageNodeGone,
		LastTransitionTime: metav1.NewTime(now),
	}
}

// isTerminated: phase Succeeded or Failed (any phase but Pending, Running
// and Unknown, as upstream; an empty phase counts as Pending).
func isTerminated(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return false
}

// isEvicted is the kubelet's evicted marker: Failed with reason Evicted.
func isEvicted(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == "Evicted"
}

// sortForCollection orders pods as upstream collects them: evicted first,
// then oldest creationTimestamp, then name.
func sortForCollection(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaintKey(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
