package rbac

import (
	"fmt"
	"sort"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Policy is one consistent view of the RBAC objects. Its methods are
// pure: the authorizer rebuilds a Policy when its caches change and
// decides on it.
type Policy struct {
	clusterRoles    map[string][]rbacv1.PolicyRule
	roles           map[string][]rbacv1.PolicyRule // namespace/name
	clusterBindings []*rbacv1.ClusterRoleBinding
	bindings        map[string][]*rbacv1.RoleBinding // by namespace

	// reasons keeps each granting binding's description (ruleSource ->
	// string): a policy is immutable, and describing a binding on every
	// request allowed by it costs more than the lookup.
	reasons sync.Map
}

// NewPolicy builds a Policy from the four kinds of RBAC objects. Every
// role grants the rules it stores, a ClusterRole with an aggregationRule
// included: as in kube-apiserver, the authorizer never evaluates
// selectors. The clusterrole-aggregation controller
// (impl/controller/clusterroleaggregation) writes an aggregated role's
// rules; until it has, the role grants what it was created with, and a
// role selected by it adds nothing.
func NewPolicy(clusterRoles []*rbacv1.ClusterRole, roles []*rbacv1.Role,
	clusterBindings []*rbacv1.ClusterRoleBinding, bindings []*rbacv1.RoleBinding) *Policy {
	p := &Policy{
		clusterRoles: make(map[string][]rbacv1.PolicyRule, len(clusterRoles)),
		roles:        map[string][]rbacv1.PolicyRule{},
		bindings:     map[string][]*rbacv1.RoleBinding{},
	}
	for _, r := range clusterRoles {
		p.clusterRoles[r.Name] = r.Rules
	}
	for _, r := range roles {
		p.roles[r.Namespace+"/"+r.Name] = r.Rules
	}
	p.clusterBindings = append(p.clusterBindings, clusterBindings...)
	sort.Slice(p.clusterBindings, func(i, j int) bool { return p.clusterBindings[i].Name < p.clusterBindings[j].Name })
	for _, b := range bindings {
		p.bindings[b.Namespace] = append(p.bindings[b.Namespace], b)
	}
	for _, bs := range p.bindings {
		sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	}
	return p
}

// ruleSource says which binding of which role a rule came from.
type ruleSource struct {
	bindingKind, bindingName, bindingNamespace string
	roleKind, roleName                         string
	subject                                    rbacv1.Subject
}

// visit calls fn with the rules that apply to user in namespace (""
// means cluster-scoped requests: only ClusterRoleBindings apply), the
// ClusterRoleBindings first, then the namespace's RoleBindings. fn
// returns false to stop. A binding whose role does not exist adds an
// error, in Kubernetes' words.
func (p *Policy) visit(user *request.User, namespace string, fn func(src ruleSource, rules []rbacv1.PolicyRule) bool) []error {
	var errs []error
	for _, b := range p.clusterBindings {
		i, ok := appliesToAny(user, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := p.roleRules(b.RoleRef, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src := ruleSource{bindingKind: "ClusterRoleBinding", bindingName: b.Name,
			roleKind: b.RoleRef.Kind, roleName: b.RoleRef.Name, subject: b.Subjects[i]}
		if !fn(src, rules) {
			return errs
		}
	}
	if namespace == "" {
		return errs
	}
	for _, b := range p.bindings[namespace] {
		i, ok := appliesToAny(user, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := p.roleRules(b.RoleRef, namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src := ruleSource{bindingKind: "RoleBinding", bindingName: b.Name, bindingNamespace: namespace,
			roleKind: b.RoleRef.Kind, roleName: b.RoleRef.Name, subject: b.Subjects[i]}
		if !fn(src, rules) {
			return errs
		}
	}
	return errs
}

func (p *Policy) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		rules, ok := p.clusterRoles[ref.Name]
		if !ok {
			return nil, &MissingRoleError{Kind: ref.Kind, Name: ref.Name}
		}
		return rules, nil
	case "Role":
		rules, ok := p.roles[namespace+"/"+ref.Name]
		if !ok {
			return nil, &MissingRoleError{Kind: ref.Kind, Name: ref.Name}
		}
		return rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// MissingRoleError is a binding's reference to a role that does not
// exist. Its text is the RBAC authorizer's (the informers' singular
// resource: `clusterrole.rbac.authorization.k8s.io "x" not found`);
// callers that speak as kube-apiserver's storage name the resource
// themselves from Kind and Name.
type MissingRoleError struct {
	Kind, Name string // Kind is "ClusterRole" or "Role"
}

func (e *MissingRoleError) Error() string {
	if e.Kind == "ClusterRole" {
		return fmt.Sprintf("clusterrole.rbac.authorization.k8s.io %q not found", e.Name)
	}
	return fmt.Sprintf("role.rbac.authorization.k8s.io %q not found", e.Name)
}

// Allows decides a request on the policy: allowed, and the reason (the
// granting binding, or, when denied, the errors met on the way, as
// kube-apiserver's "RBAC: ..." reason).
func (p *Policy) Allows(user *request.User, info *request.Info) (bool, string) {
	if user == nil || info == nil {
		return false, ""
	}
	ns := ""
	if info.IsResourceRequest {
		ns = info.Namespace
	}
	var granted ruleSource
	found := false
	errs := p.visit(user, ns, func(src ruleSource, rules []rbacv1.PolicyRule) bool {
		if RulesAllow(info, rules...) {
			granted, found = src, true
			return false
		}
		return true
	})
	if found {
		if r, ok := p.reasons.Load(granted); ok {
			return true, r.(string)
		}
		r := describe(&granted)
		p.reasons.Store(granted, r)
		return true, r
	}
	if len(errs) == 0 {
		return false, ""
	}
	msg := "RBAC: "
	if len(errs) > 1 {
		msg += "["
	}
	for i, e := range errs {
		if i > 0 {
			msg += ", "
		}
		msg += e.Error()
	}
	if len(errs) > 1 {
		msg += "]"
	}
	return false, msg
}

func describe(s *ruleSource) string {
	subj := fmt.Sprintf("%s %q", s.subject.Kind, s.subject.Name)
	if s.subject.Kind == rbacv1.ServiceAccountKind {
		ns := s.subject.Namespace
		if ns == "" {
			ns = s.bindingNamespace
		}
		subj = fmt.Sprintf("%s %q", s.subject.Kind, ns+"/"+s.subject.Name)
	}
	if s.bindingKind == "RoleBinding" {
		return fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s",
			s.bindingName+"/"+s.bindingNamespace, s.roleKind, s.roleName, subj)
	}
	return fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of %s %q to %s",
		s.bindingName, s.roleKind, s.roleName, subj)
}

// ResolveRules is RulesFor with the errors met kept apart, in the order
// met (each a *MissingRoleError for a binding whose role is missing), for
// the RBAC storage's escalation check, which words them itself.
func (p *Policy) ResolveRules(user *request.User, namespace string) ([]rbacv1.PolicyRule, []error) {
	var out []rbacv1.PolicyRule
	errs := p.visit(user, namespace, func(_ ruleSource, rules []rbacv1.PolicyRule) bool {
		out = append(out, rules...)
		return true
	})
	return out, errs
}

// RulesFor returns every rule that applies to user in namespace (the
// ClusterRoleBindings' and, when namespace is set, that namespace's
// RoleBindings'), for SelfSubjectRulesReview. err joins the bindings
// whose role is missing; the rules found are still returned.
func (p *Policy) RulesFor(user *request.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var out []rbacv1.PolicyRule
	errs := p.visit(user, namespace, func(_ ruleSource, rules []rbacv1.PolicyRule) bool {
		out = append(out, rules...)
		return true
	})
	if len(errs) > 0 {
		return out, fmt.Errorf("RBAC: %v", errs)
	}
	return out, nil
}
