package clusterroleaggregation

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregatedRules is the controller's decision for one aggregated
// ClusterRole, kube-controller-manager's sync rule: the union of the rules
// stored in the ClusterRoles (roles, the informer's view) its selectors
// select — per selector in order, the selected roles in name order, the
// role itself skipped, each rule appended unless a semantically equal one
// (apimachinery's equality.Semantic: a nil list equals an empty one) is
// already there. A selected role gives what it stores, aggregated or not:
// nothing is expanded, so a nested aggregate (admin over edit over view)
// is reached over several syncs, one per level, and a selected aggregated
// role that still holds the rules it was created with passes those on.
// The union is never nil (an empty aggregate is an empty list); a selector
// that does not parse is an error, and the role keeps its rules.
func AggregatedRules(role *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	out := []rbacv1.PolicyRule{}
	if role.AggregationRule == nil {
		return out, nil
	}
	byName := slices.Clone(roles)
	slices.SortStableFunc(byName, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %s: aggregationRule.clusterRoleSelectors[%d]: %w", role.Name, i, err)
		}
		for _, other := range byName {
			if other.Name == role.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, rule := range other.Rules {
				if !slices.ContainsFunc(out, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
					out = append(out, rule)
				}
			}
		}
	}
	return out, nil
}
