package escalation

import (
	"context"
	"errors"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// RuleResolver gives the rules a user holds in a namespace ("" for the
// cluster scope: ClusterRoleBindings only) and the errors met on the way
// (*rbac.MissingRoleError for a binding whose role is missing).
// *rbac.Authorizer is one.
type RuleResolver interface {
	ResolveRules(user *request.User, namespace string) ([]rbacv1.PolicyRule, []error)
}

// RoleGetter reads the rules of the role a binding refers to; a missing
// role is the storage's NotFound Status error, which the writer gets as
// it is (404).
type RoleGetter interface {
	RoleRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error)
}

// Checker makes the escalation check of the RBAC kinds' writes: the
// API server calls Check for every create and update, after mutating
// admission and before the object is prepared and validated (where
// kube-apiserver's policybased storage wraps its generic store).
type Checker struct {
	// Authorizer answers the escalate and bind questions (the server's
	// own authorizer, system:masters and every mode).
	Authorizer auth.Authorizer
	// Rules resolves what the writer holds; nil: nothing (RBAC
	// authorization is off).
	Rules RuleResolver
	// Roles reads a binding's role.
	Roles RoleGetter
	// Log gets the authorizer's errors (nil: slog.Default()).
	Log *slog.Logger
}

var rbacKinds = map[string]bool{"roles": true, "clusterroles": true, "rolebindings": true, "clusterrolebindings": true}

// Check decides the write of obj (old is the stored object on an update,
// nil on a create) to gr by the request's user; info is the request (nil
// for the server's own writes). It returns nil when the write may go on,
// otherwise the Status error to answer: 403 Forbidden naming the object
// with Refusal's message, or the binding's role's 404. Objects of other
// resources are not checked.
func (c *Checker) Check(ctx context.Context, info *request.Info, gr schema.GroupResource, obj, old runtime.Object) error {
	if gr.Group != rbacv1.GroupName || !rbacKinds[gr.Resource] {
		return nil
	}
	user := request.UserFrom(ctx)
	if EscalationAllowed(user) {
		return nil
	}
	namespace := ""
	if info != nil {
		namespace = info.Namespace
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		if info == nil {
			namespace = o.Namespace
		}
		if attrs, ok := EscalateAttributes(user, info); c.allowed(ctx, attrs, ok) || OnlyGCFieldsChange(obj, old) {
			return nil
		}
		if err := c.refusal(user, namespace, o.Rules); err != nil {
			return apierrors.NewForbidden(gr, o.Name, err)
		}
	case *rbacv1.ClusterRole:
		if attrs, ok := EscalateAttributes(user, info); c.allowed(ctx, attrs, ok) || OnlyGCFieldsChange(obj, old) {
			return nil
		}
		if err := c.refusal(user, "", o.Rules); err != nil {
			return apierrors.NewForbidden(gr, o.Name, err)
		}
		oldRole, _ := old.(*rbacv1.ClusterRole)
		if HasAggregationRule(o) || HasAggregationRule(oldRole) {
			if c.refusal(user, "", FullAuthority) != nil {
				return apierrors.NewForbidden(gr, o.Name, errors.New(AggregationRuleMessage))
			}
		}
	case *rbacv1.RoleBinding:
		if info == nil {
			namespace = o.Namespace
		}
		if namespace == "" {
			return apierrors.NewBadRequest("namespace is required")
		}
		return c.checkBinding(ctx, gr, user, o.Name, o.RoleRef, namespace, obj, old)
	case *rbacv1.ClusterRoleBinding:
		if o.RoleRef.Kind != "ClusterRole" {
			return nil // validation refuses it
		}
		return c.checkBinding(ctx, gr, user, o.Name, o.RoleRef, "", obj, old)
	}
	return nil
}

// checkBinding decides a binding's write: allowed when only the garbage
// collector's fields change, when the user may bind the role, or when
// they hold its rules in the binding's namespace.
func (c *Checker) checkBinding(ctx context.Context, gr schema.GroupResource, user *request.User, name string,
	ref rbacv1.RoleRef, namespace string, obj, old runtime.Object) error {
	if OnlyGCFieldsChange(obj, old) {
		return nil
	}
	attrs, ok := BindAttributes(user, ref, namespace)
	if !ok {
		return nil // a kind validation refuses
	}
	if c.allowed(ctx, attrs, true) {
		return nil
	}
	rules, err := c.Roles.RoleRules(ctx, ref, namespace)
	if err != nil {
		return err
	}
	if err := c.refusal(user, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// allowed asks the authorizer; an error is logged and counts as its
// decision (kube-apiserver goes by the decision whatever the error).
func (c *Checker) allowed(ctx context.Context, attrs auth.Attributes, ok bool) bool {
	if !ok || c.Authorizer == nil {
		return false
	}
	d, _, err := c.Authorizer.Authorize(ctx, attrs)
	if err != nil {
		log := c.Log
		if log == nil {
			log = slog.Default()
		}
		log.Error("authorizing an RBAC escalation check", "verb", attrs.Info.Verb, "user", attrs.User.Name,
			"resource", attrs.Info.Resource, "name", attrs.Info.Name, "namespace", attrs.Info.Namespace, "err", err)
	}
	return d == auth.DecisionAllow
}

// refusal is Refusal with what user holds in namespace; a request
// without a user is refused.
func (c *Checker) refusal(user *request.User, namespace string, requested []rbacv1.PolicyRule) error {
	if user == nil {
		return errors.New("no user on context")
	}
	var owned []rbacv1.PolicyRule
	var errs []error
	if c.Rules != nil {
		owned, errs = c.Rules.ResolveRules(user, namespace)
	}
	return Refusal(user, owned, storageWords(errs), requested)
}

// storageWords rewords the authorizer's missing-role errors as
// kube-apiserver's storage-backed rule resolver meets them: the storage's
// NotFound on the plural resource.
func storageWords(errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		var missing *rbac.MissingRoleError
		if errors.As(err, &missing) {
			resource := "roles"
			if missing.Kind == "ClusterRole" {
				resource = "clusterroles"
			}
			err = apierrors.NewNotFound(rbacv1.Resource(resource), missing.Name)
		}
		out = append(out, err)
	}
	return out
}
