// Package rbac is the RBAC authorizer (--authorization-mode=RBAC): Roles,
// ClusterRoles, RoleBindings and ClusterRoleBindings of
// rbac.authorization.k8s.io/v1, read from the API server's own storage
// through watch-fed caches (package objcache). Each role grants the rules
// it stores; an aggregationRule's selectors are not evaluated here.
//
// Matching follows Kubernetes: verbs, apiGroups, resources ("pods/log"
// subresources and "*/scale" wildcards), resourceNames, nonResourceURLs
// with a trailing "*"; subjects User, Group and ServiceAccount
// (system:serviceaccount:<ns>:<name>). A denied request gets NoOpinion,
// with a "RBAC: ..." reason only when a binding referred to a missing role.
//
// Constructor (the API server's plugin hook calls it with its stores):
//
//	a, err := rbac.New(stores)        // stores: apiserver.StoreGetter
//	go a.Run(ctx)                     // keeps the caches current until ctx ends
//	err = a.WaitSynced(ctx)           // before serving requests
//	d, reason, err := a.Authorize(ctx, auth.Attributes{...})
//	res, nonRes, incomplete, err := a.RulesFor(ctx, user, namespace) // auth.RuleResolver
//
// As in kube-apiserver, an aggregated ClusterRole (admin, edit, view)
// grants only what the controller manager's clusterrole-aggregation
// controller (impl/controller/clusterroleaggregation) has written into
// its rules: a server without that controller grants nothing through the
// bootstrap admin/edit/view roles, which are created with no rules.
//
// RuleAllows and RulesAllow are the pure rule matchers (the Node
// authorizer uses them for its static rules); NewPolicy builds a decision
// snapshot from plain objects.
package rbac

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Authorizer is the RBAC authorizer. It implements auth.Authorizer.
type Authorizer struct {
	clusterRoles, roles, clusterBindings, bindings *objcache.Cache

	dirty   atomic.Bool
	mu      sync.Mutex // serialises rebuilds
	current atomic.Pointer[Policy]
}

var _ auth.Authorizer = (*Authorizer)(nil)

// New builds the authorizer over the API server's RBAC stores.
func New(stores objcache.Stores) (*Authorizer, error) {
	a := &Authorizer{}
	changed := func(_, _ runtime.Object) { a.dirty.Store(true) }
	mk := func(resource string, newList func() runtime.Object) (*objcache.Cache, error) {
		src, err := objcache.SourceFor(stores, rbacv1.Resource(resource), newList)
		if err != nil {
			return nil, fmt.Errorf("rbac authorizer: %w", err)
		}
		return objcache.New(src, changed), nil
	}
	var err error
	if a.clusterRoles, err = mk("clusterroles", func() runtime.Object { return &rbacv1.ClusterRoleList{} }); err != nil {
		return nil, err
	}
	if a.roles, err = mk("roles", func() runtime.Object { return &rbacv1.RoleList{} }); err != nil {
		return nil, err
	}
	if a.clusterBindings, err = mk("clusterrolebindings", func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }); err != nil {
		return nil, err
	}
	if a.bindings, err = mk("rolebindings", func() runtime.Object { return &rbacv1.RoleBindingList{} }); err != nil {
		return nil, err
	}
	a.current.Store(NewPolicy(nil, nil, nil, nil))
	return a, nil
}

func (a *Authorizer) caches() []*objcache.Cache {
	return []*objcache.Cache{a.clusterRoles, a.roles, a.clusterBindings, a.bindings}
}

// Run keeps the caches current until ctx ends; it returns when all of
// them have stopped.
func (a *Authorizer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range a.caches() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Run(ctx)
		}()
	}
	wg.Wait()
}

// WaitSynced returns once every cache has loaded its first list.
func (a *Authorizer) WaitSynced(ctx context.Context) error {
	for _, c := range a.caches() {
		if err := c.WaitSynced(ctx); err != nil {
			return fmt.Errorf("rbac authorizer: %w", err)
		}
	}
	return nil
}

// Policy returns the current decision snapshot, rebuilding it when the
// caches changed since the last one.
func (a *Authorizer) Policy() *Policy {
	if !a.dirty.Load() {
		return a.current.Load()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.dirty.Swap(false) {
		return a.current.Load()
	}
	p := NewPolicy(
		typed[*rbacv1.ClusterRole](a.clusterRoles.List()),
		typed[*rbacv1.Role](a.roles.List()),
		typed[*rbacv1.ClusterRoleBinding](a.clusterBindings.List()),
		typed[*rbacv1.RoleBinding](a.bindings.List()),
	)
	a.current.Store(p)
	return p
}

func typed[T runtime.Object](objs []runtime.Object) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// Authorize implements auth.Authorizer: Allow when a rule bound to the
// user grants the request, otherwise NoOpinion.
func (a *Authorizer) Authorize(_ context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	ok, reason := a.Policy().Allows(attrs.User, attrs.Info)
	if ok {
		return auth.DecisionAllow, reason, nil
	}
	return auth.DecisionNoOpinion, reason, nil
}

// PolicyRules returns the rules that apply to user in namespace (see
// Policy.RulesFor).
func (a *Authorizer) PolicyRules(user *request.User, namespace string) ([]rbacv1.PolicyRule, error) {
	return a.Policy().RulesFor(user, namespace)
}

// ResolveRules returns the rules that apply to user in namespace and the
// errors met (see Policy.ResolveRules), for the RBAC storage's escalation
// check.
func (a *Authorizer) ResolveRules(user *request.User, namespace string) ([]rbacv1.PolicyRule, []error) {
	return a.Policy().ResolveRules(user, namespace)
}

var _ auth.RuleResolver = (*Authorizer)(nil)

// RulesFor implements auth.RuleResolver for SelfSubjectRulesReview: the
// rules split into resource and non-resource rules, incomplete when a
// binding refers to a missing role (err says which).
func (a *Authorizer) RulesFor(_ context.Context, user *request.User, namespace string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	rules, err := a.Policy().RulesFor(user, namespace)
	res, nonRes := SplitRules(rules)
	return res, nonRes, err != nil, err
}

// SplitRules converts policy rules to the SelfSubjectRulesReview form.
func SplitRules(rules []rbacv1.PolicyRule) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule) {
	var res []authorizationv1.ResourceRule
	var nonRes []authorizationv1.NonResourceRule
	for _, r := range rules {
		if len(r.Resources) > 0 {
			res = append(res, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups,
				Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			nonRes = append(nonRes, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return res, nonRes
}
