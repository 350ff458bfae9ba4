package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// RuleAllows reports whether rule grants the request described by info, by
// Kubernetes' matching rules: "*" matches any verb, group, resource or
// URL; a resource request's resource is "resource" or
// "resource/subresource", and "*/sub" matches subresource sub of any
// resource; resourceNames (when set) must contain the request's name, so
// they never match a create or a list; a non-resource URL rule ending in
// "*" matches every path with that prefix.
func RuleAllows(info *request.Info, rule *rbacv1.PolicyRule) bool {
	if info == nil || !verbMatches(rule, info.Verb) {
		return false
	}
	if info.IsResourceRequest {
		res := info.Resource
		if info.Subresource != "" {
			res += "/" + info.Subresource
		}
		return groupMatches(rule, info.APIGroup) &&
			resourceMatches(rule, res, info.Subresource) &&
			nameMatches(rule, info.Name)
	}
	return urlMatches(rule, info.Path)
}

// RulesAllow reports whether any of rules grants the request.
func RulesAllow(info *request.Info, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(info, &rules[i]) {
			return true
		}
	}
	return false
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func groupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && len(r) == len(subresource)+2 &&
			strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource):
			return true
		}
	}
	return false
}

func nameMatches(rule *rbacv1.PolicyRule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

func urlMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")):
			return true
		}
	}
	return false
}

// appliesTo reports whether subject names user; namespace is the binding's
// (the default namespace of a ServiceAccount subject).
func appliesTo(user *request.User, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return user.Name == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(user.Groups, s.Name)
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		if ns == "" {
			return false
		}
		return user.Name == auth.ServiceAccountUsername(ns, s.Name)
	}
	return false
}

func appliesToAny(user *request.User, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if appliesTo(user, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}
