package registry

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// rbacName validates RBAC object names: anything usable as a URL path
// segment (e.g. "system:controller:foo").
var rbacName = path.ValidatePathSegmentName

func roles(now func() time.Time) *resource.Resource {
	k := kind[*rbacv1.Role]{
		namespaced: true,
		nameFn:     rbacName,
		validate: func(r *rbacv1.Role) field.ErrorList {
			return validatePolicyRules(r.Rules, true, field.NewPath("rules"))
		},
	}
	return &resource.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "roles", SingularName: "role", Kind: "Role",
		Namespaced: true, Verbs: allVerbs,
		New:      func() runtime.Object { return &rbacv1.Role{} },
		NewList:  func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

func clusterRoles(now func() time.Time) *resource.Resource {
	k := kind[*rbacv1.ClusterRole]{
		namespaced: false,
		nameFn:     rbacName,
		validate:   validateClusterRole,
	}
	return &resource.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "clusterroles", SingularName: "clusterrole", Kind: "ClusterRole",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:  func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := validatePolicyRules(r.Rules, false, field.NewPath("rules"))
	if r.AggregationRule != nil {
		selectors := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(selectors, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i, sel := range r.AggregationRule.ClusterRoleSelectors {
			if _, err := metav1.LabelSelectorAsSelector(&sel); err != nil {
				errs = append(errs, field.Invalid(selectors.Index(i), sel, err.Error()))
			}
		}
	}
	return errs
}

func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		p := path.Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}
