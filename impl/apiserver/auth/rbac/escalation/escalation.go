// Package escalation is kube-apiserver's RBAC privilege-escalation
// prevention: the check its RBAC REST storage (the "policybased" stores of
// roles, clusterroles, rolebindings and clusterrolebindings) makes before
// a create or an update is written.
//
// A user may write a Role or ClusterRole only with rules they already
// hold, and bind a role only when they hold its rules, unless:
//
//   - they are in system:masters (the API server's own loopback identity
//     and cluster administrators): always allowed;
//   - for roles and clusterroles, the authorizer lets them "escalate" the
//     resource being written (the clusterrole-aggregation controller has
//     it);
//   - for bindings, the authorizer lets them "bind" the referenced role by
//     name, in the binding's namespace ("" for a ClusterRoleBinding).
//
// A ClusterRole with an aggregationRule (set on create, or on either side
// of an update) needs every permission ("*" on "*.*" and on every URL).
// An update that changes only ownerReferences and finalizers (what the
// garbage collector writes) is not checked; any other update checks the
// whole new object, not only what it adds.
//
// The pure parts — Refusal (the covering decision and upstream's
// message), OnlyGCFieldsChange, EscalationAllowed and the attributes of
// the escalate and bind questions — are separate from Checker, which asks
// the authorizer and the rule resolvers.
package escalation

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// SystemMastersGroup is the group whose members may always write RBAC
// objects.
const SystemMastersGroup = "system:masters"

// AggregationRuleMessage is the refusal of an aggregationRule to a user
// without every permission.
const AggregationRuleMessage = "must have cluster-admin privileges to use the aggregationRule"

// FullAuthority is what an aggregationRule requires: every verb on every
// resource of every group, and on every non-resource URL.
var FullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// EscalationAllowed reports whether user may write any RBAC object: a
// member of system:masters. A request without a user is not.
func EscalationAllowed(user *request.User) bool {
	return user != nil && slices.Contains(user.Groups, SystemMastersGroup)
}

// Refusal decides whether a user holding owned may grant requested. It
// returns nil when owned covers requested (component-helpers' Covers);
// otherwise the reason, in kube-apiserver's words:
//
//	user "<name>" (groups=["g1" "g2"]) is attempting to grant RBAC permissions not currently held:
//	{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}
//
// with one line per missing rule (the broken-down missing rules
// compacted, described and sorted, duplicates dropped), and
// "; resolution errors: [...]" appended when resolving owned met
// errors (bindings whose role is missing).
func Refusal(user *request.User, owned []rbacv1.PolicyRule, resolveErrs []error, requested []rbacv1.PolicyRule) error {
	covered, missing := validation.Covers(owned, requested)
	if covered {
		return nil
	}
	seen := map[string]bool{}
	var lines []string
	for _, r := range CompactRules(missing) {
		s := CompactString(r)
		if !seen[s] {
			seen[s] = true
			lines = append(lines, s)
		}
	}
	sort.Strings(lines)
	var name string
	var groups []string
	if user != nil {
		name, groups = user.Name, user.Groups
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		name, groups, strings.Join(lines, "\n"))
	if agg := utilerrors.NewAggregate(resolveErrs); agg != nil {
		// kube-apiserver keeps the resolver's aggregate in a list of its
		// own, hence the brackets around it.
		msg += fmt.Sprintf("; resolution errors: %v", []error{agg})
	}
	return &Error{Message: msg}
}

// Error is a refusal's reason; the API server answers it as a 403 on the
// written object.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

// CompactRules merges rules that name one API group and one resource and
// nothing but verbs (as Covers' missing rules do) into one rule per group
// and resource, their verbs in order; other rules are kept as they are.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type groupResource struct{ group, resource string }
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[groupResource]int{} // index in out
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
			out = append(out, r)
			continue
		}
		k := groupResource{r.APIGroups[0], r.Resources[0]}
		if i, ok := simple[k]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		simple[k] = len(out)
		out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources,
			Verbs: append([]string(nil), r.Verbs...)})
	}
	return out
}

// CompactString describes a rule as kube-apiserver's escalation message
// does: its non-empty fields among APIGroups, Resources, NonResourceURLs,
// ResourceNames and Verbs, in that order, each a quoted list, in braces.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// OnlyGCFieldsChange reports whether obj differs from old in its
// ownerReferences and finalizers alone (semantic equality otherwise), the
// fields the garbage collector writes: such an update is not checked.
func OnlyGCFieldsChange(obj, old runtime.Object) bool {
	if obj == nil || old == nil {
		return false
	}
	cp := obj.DeepCopyObject()
	cm, err := meta.Accessor(cp)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	return equality.Semantic.DeepEqual(cp, old)
}

// HasAggregationRule reports whether r aggregates other roles.
func HasAggregationRule(r *rbacv1.ClusterRole) bool {
	return r != nil && r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// EscalateAttributes is the question whether user may "escalate" the role
// resource info writes (roles or clusterroles of rbac.authorization.k8s.io,
// by the request's namespace and name — none on a create); ok is false
// for any other request, which is never allowed to escalate.
func EscalateAttributes(user *request.User, info *request.Info) (a auth.Attributes, ok bool) {
	if user == nil || info == nil || !info.IsResourceRequest || info.APIGroup != rbacv1.GroupName ||
		(info.Resource != "roles" && info.Resource != "clusterroles") {
		return auth.Attributes{}, false
	}
	return auth.Attributes{User: user, Info: &request.Info{
		IsResourceRequest: true, Verb: "escalate",
		APIGroup: info.APIGroup, APIVersion: "*", Resource: info.Resource,
		Namespace: info.Namespace, Name: info.Name,
	}}, true
}

// BindAttributes is the question whether user may "bind" the role ref
// names in namespace (the binding's; "" for a ClusterRoleBinding): the
// verb bind on roles or clusterroles of ref's group, by ref's name. ok is
// false for a ref of another kind.
func BindAttributes(user *request.User, ref rbacv1.RoleRef, namespace string) (a auth.Attributes, ok bool) {
	var resource string
	switch ref.Kind {
	case "ClusterRole":
		resource = "clusterroles"
	case "Role":
		resource = "roles"
	default:
		return auth.Attributes{}, false
	}
	if user == nil {
		return auth.Attributes{}, false
	}
	return auth.Attributes{User: user, Info: &request.Info{
		IsResourceRequest: true, Verb: "bind",
		APIGroup: ref.APIGroup, APIVersion: "*", Resource: resource,
		Namespace: namespace, Name: ref.Name,
	}}, true
}
