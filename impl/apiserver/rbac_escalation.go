package apiserver

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/escalation"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// escalationChecker is the RBAC kinds' privilege-escalation check
// (package escalation) as the server runs it on every create and update:
// the escalate and bind questions go to authorizer (the one the filter
// chain asks), the writer's rules come from the plugins' RBAC rule
// resolver (none without RBAC authorization), and a binding's role is
// read from storage, as kube-apiserver's storage reads it.
func (s *Server) escalationChecker(authorizer auth.Authorizer) *escalation.Checker {
	c := &escalation.Checker{Authorizer: authorizer, Roles: storeRoles{s}, Log: s.log}
	if s.plugins.RBACRules != nil {
		c.Rules = s.plugins.RBACRules
	}
	return c
}

// storeRoles reads roles from the server's stores.
type storeRoles struct{ s *Server }

// RoleRules implements escalation.RoleGetter: the rules of the ClusterRole
// or (in namespace) Role ref names; a missing one is the storage's 404.
func (r storeRoles) RoleRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	var obj runtime.Object
	var rules func() []rbacv1.PolicyRule
	resource := "roles"
	switch ref.Kind {
	case "ClusterRole":
		cr := &rbacv1.ClusterRole{}
		obj, rules, resource, namespace = cr, func() []rbacv1.PolicyRule { return cr.Rules }, "clusterroles", ""
	case "Role":
		role := &rbacv1.Role{}
		obj, rules = role, func() []rbacv1.PolicyRule { return role.Rules }
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unsupported role reference kind: %q", ref.Kind))
	}
	gr := rbacv1.Resource(resource)
	st, ok := r.s.Store(gr)
	if !ok {
		return nil, apierrors.NewNotFound(gr, ref.Name)
	}
	if err := st.Get(ctx, r.s.ObjectKey(gr, namespace, ref.Name), storage.GetOptions{}, obj); err != nil {
		if storage.IsNotFound(err) {
			return nil, apierrors.NewNotFound(gr, ref.Name)
		}
		return nil, fmt.Errorf("reading %s %q: %w", gr, ref.Name, err)
	}
	return rules(), nil
}
