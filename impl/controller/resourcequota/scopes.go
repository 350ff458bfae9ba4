package resourcequota

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Covers tells whether q counts obj of resource gr. A quota without scopes
// counts every object; a quota with spec.scopes or a scopeSelector counts
// only the pods in every one of its scopes (Terminating, NotTerminating,
// BestEffort, NotBestEffort, PriorityClass), as the admission plugin.
func Covers(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) bool {
	if len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || gr != podResource {
		return false
	}
	for _, s := range q.Spec.Scopes {
		if !podInScope(pod, s, corev1.ScopeSelectorOpExists, nil) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, e := range q.Spec.ScopeSelector.MatchExpressions {
			if !podInScope(pod, e.ScopeName, e.Operator, e.Values) {
				return false
			}
		}
	}
	return true
}

// podInScope evaluates one scope requirement against a pod.
func podInScope(pod *corev1.Pod, scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values []string) bool {
	if scope == corev1.ResourceQuotaScopePriorityClass {
		name := pod.Spec.PriorityClassName
		switch op {
		case corev1.ScopeSelectorOpExists:
			return name != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return name == ""
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(values, name)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(values, name)
		}
		return false
	}
	var in bool
	switch scope {
	case corev1.ResourceQuotaScopeTerminating:
		in = pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	case corev1.ResourceQuotaScopeNotTerminating:
		in = pod.Spec.ActiveDeadlineSeconds == nil
	case corev1.ResourceQuotaScopeBestEffort:
		in = isBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		in = !isBestEffort(pod)
	default:
		return false
	}
	if op == corev1.ScopeSelectorOpDoesNotExist {
		return !in
	}
	return in
}

// isBestEffort: no container (init, app or ephemeral) requests or limits
// cpu or memory.
func isBestEffort(pod *corev1.Pod) bool {
	var lists []corev1.ResourceList
	for _, c := range pod.Spec.InitContainers {
		lists = append(lists, c.Resources.Requests, c.Resources.Limits)
	}
	for _, c := range pod.Spec.Containers {
		lists = append(lists, c.Resources.Requests, c.Resources.Limits)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		lists = append(lists, c.Resources.Requests, c.Resources.Limits)
	}
	for _, l := range lists {
		if _, ok := l[corev1.ResourceCPU]; ok {
			return false
		}
		if _, ok := l[corev1.ResourceMemory]; ok {
			return false
		}
	}
	return true
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
