// Package quota is what a ResourceQuota counts, shared by the ResourceQuota
// admission plugin (which charges usage as objects are written) and the
// resource quota controller (which recounts it): which objects a quota
// covers (its scopes), what an object uses (ObjectUsage: counts, a pod's
// compute resources, a service's load balancer and node ports), which
// resource a quota name counts and which names a resource's evaluator
// matches (MatchesResource). One piece of code, so the two can never
// disagree about coverage.
package quota

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlqos "k8s.io/kubectl/pkg/util/qos"
)

var (
	podResource     = corev1.Resource("pods")
	serviceResource = corev1.Resource("services")
)

// LegacyCounts are the core resources a quota also counts under their bare
// name ("configmaps" as well as "count/configmaps").
var LegacyCounts = map[string]bool{
	"services": true, "configmaps": true, "secrets": true, "replicationcontrollers": true,
	"resourcequotas": true, "persistentvolumeclaims": true,
}

// CountedResource names the resource whose objects a quota name other than
// a pod's counts: count/<resource>[.<group>], one of LegacyCounts, or
// services.loadbalancers and services.nodeports (services: ServiceUsage).
func CountedResource(n corev1.ResourceName) (schema.GroupResource, bool) {
	s := string(n)
	if n == corev1.ResourceServicesLoadBalancers || n == corev1.ResourceServicesNodePorts {
		return serviceResource, true
	}
	if rest, ok := strings.CutPrefix(s, "count/"); ok {
		res, group, _ := strings.Cut(rest, ".")
		return schema.GroupResource{Group: group, Resource: res}, true
	}
	if LegacyCounts[s] {
		return schema.GroupResource{Resource: s}, true
	}
	return schema.GroupResource{}, false
}

// Covers tells whether q counts obj of resource gr. A quota without scopes
// counts every object; a quota with spec.scopes or a scopeSelector counts
// only the pods in every one of its scopes (Terminating, NotTerminating,
// BestEffort, NotBestEffort, PriorityClass, CrossNamespacePodAffinity), as
// Kubernetes' quota evaluator does.
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

// MatchesScope tells whether obj, of resource gr, is in the scope sel
// names (upstream's MatchingScopes of one selector: only pods are in
// scopes).
func MatchesScope(gr schema.GroupResource, obj runtime.Object, sel corev1.ScopedResourceSelectorRequirement) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok || gr != podResource {
		return false
	}
	return podInScope(pod, sel.ScopeName, sel.Operator, sel.Values)
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
		in = IsTerminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		in = !IsTerminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		in = IsBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		in = !IsBestEffort(pod)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		in = usesCrossNamespaceAffinity(pod)
	default:
		return false
	}
	if op == corev1.ScopeSelectorOpDoesNotExist {
		return !in
	}
	return in
}

// IsBestEffort tells upstream's BestEffort quota scope: the pod's QoS
// class (GetPodQOS: status.qosClass, else ComputePodQOS as
// k8s.io/kubectl v0.37.2 ships it) is BestEffort.
func IsBestEffort(pod *corev1.Pod) bool {
	return kubectlqos.GetPodQOS(pod) == corev1.PodQOSBestEffort
}

// usesCrossNamespaceAffinity tells whether a pod affinity or anti-affinity
// term of the pod (required or preferred) names namespaces or has a
// namespace selector, as upstream's CrossNamespacePodAffinity scope.
func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	var weighted []corev1.WeightedPodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		weighted = append(weighted, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		weighted = append(weighted, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	for _, w := range weighted {
		terms = append(terms, w.PodAffinityTerm)
	}
	for _, t := range terms {
		if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// IsTerminating reports whether pod is in the Terminating quota scope:
// it has an activeDeadlineSeconds of 0 or more, as upstream's
// IsTerminating (pkg/quota/v1/evaluator/core/pods.go).
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}
