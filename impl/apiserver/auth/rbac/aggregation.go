package rbac

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Aggregator writes into every ClusterRole with an aggregationRule the
// rules of the ClusterRoles its selectors match, as kube-controller-
// manager's clusterrole-aggregation controller does, so that reading
// "admin", "edit" or "view" shows what they grant. (The authorizer does
// not depend on it: it expands aggregation itself.)
//
//	ag, err := rbac.NewAggregator(stores)
//	go ag.Run(ctx)
type Aggregator struct {
	store  storage.Interface
	stores objcache.Stores
	cache  *objcache.Cache
	wake   chan struct{}
	log    *slog.Logger
}

// NewAggregator builds the aggregator over the clusterroles store.
func NewAggregator(stores objcache.Stores) (*Aggregator, error) {
	gr := rbacv1.Resource("clusterroles")
	src, err := objcache.SourceFor(stores, gr, func() runtime.Object { return &rbacv1.ClusterRoleList{} })
	if err != nil {
		return nil, fmt.Errorf("clusterrole aggregation: %w", err)
	}
	a := &Aggregator{store: src.Store, stores: stores, wake: make(chan struct{}, 1), log: slog.Default()}
	a.cache = objcache.New(src, func(_, _ runtime.Object) {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	})
	return a, nil
}

// Run aggregates after every ClusterRole change until ctx ends.
func (a *Aggregator) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.cache.Run(ctx)
	}()
	defer func() { <-done }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		if err := a.Sync(ctx); err != nil && ctx.Err() == nil {
			a.log.Debug("clusterrole aggregation", "err", err)
			// The next change (or our own write) wakes us again; a failed
			// write is retried by waking ourselves.
			select {
			case a.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Sync writes the aggregated rules of every aggregated ClusterRole whose
// stored rules differ.
func (a *Aggregator) Sync(ctx context.Context) error {
	roles := typed[*rbacv1.ClusterRole](a.cache.List())
	want := AggregateClusterRoles(roles)
	sort.Slice(roles, func(i, j int) bool { return roles[i].Name < roles[j].Name })
	gr := rbacv1.Resource("clusterroles")
	for _, r := range roles {
		if r.AggregationRule == nil || sameRules(r.Rules, want[r.Name]) {
			continue
		}
		rules := want[r.Name]
		err := a.store.GuaranteedUpdate(ctx, a.stores.ObjectKey(gr, "", r.Name), &rbacv1.ClusterRole{}, false, nil,
			func(in runtime.Object) (runtime.Object, error) {
				cur := in.(*rbacv1.ClusterRole)
				if cur.AggregationRule == nil || sameRules(cur.Rules, rules) {
					return in, nil
				}
				next := cur.DeepCopy()
				next.Rules = slices.Clone(rules)
				return next, nil
			})
		if err != nil && !storage.IsNotFound(err) {
			return fmt.Errorf("writing aggregated rules of clusterrole %s: %w", r.Name, err)
		}
	}
	return nil
}

func sameRules(a, b []rbacv1.PolicyRule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalRule(&a[i], &b[i]) {
			return false
		}
	}
	return true
}
