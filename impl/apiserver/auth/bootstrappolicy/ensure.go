package bootstrappolicy

import (
	"context"
	"errors"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Ensure writes the default policy to the API server's stores: every
// missing object is created; an existing one whose autoupdate annotation
// is "true" gets the rules, subjects and aggregation selectors it lacks
// (nothing is removed, and an object with autoupdate "false" is left as
// the administrator made it). Transient storage errors are retried until
// ctx ends.
func Ensure(ctx context.Context, stores objcache.Stores) error {
	for {
		err := ensureOnce(ctx, stores)
		if err == nil {
			return nil
		}
		if code := storage.CodeOf(err); code != storage.ErrCodeUnreachable && code != storage.ErrCodeResourceVersionConflicts &&
			code != storage.ErrCodeKeyExists {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bootstrap policy: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// item is one default object and how to merge it into a stored one.
type item struct {
	gr        schema.GroupResource
	namespace string
	name      string
	want      runtime.Object
	// merge adds what want has and cur lacks to cur; it reports whether
	// cur changed.
	merge func(cur runtime.Object) bool
}

func items() []item {
	var out []item
	for _, r := range ClusterRoles() {
		want := r
		out = append(out, item{gr: rbacv1.Resource("clusterroles"), name: r.Name, want: &want,
			merge: func(cur runtime.Object) bool {
				c := cur.(*rbacv1.ClusterRole)
				changed := false
				c.Rules, changed = addRules(c.Rules, want.Rules)
				if want.AggregationRule != nil {
					if c.AggregationRule == nil {
						c.AggregationRule = &rbacv1.AggregationRule{}
					}
					for _, s := range want.AggregationRule.ClusterRoleSelectors {
						if !hasSelector(c.AggregationRule.ClusterRoleSelectors, s) {
							c.AggregationRule.ClusterRoleSelectors = append(c.AggregationRule.ClusterRoleSelectors, s)
							changed = true
						}
					}
				}
				return changed
			}})
	}
	for _, b := range ClusterRoleBindings() {
		want := b
		out = append(out, item{gr: rbacv1.Resource("clusterrolebindings"), name: b.Name, want: &want,
			merge: func(cur runtime.Object) bool {
				c := cur.(*rbacv1.ClusterRoleBinding)
				var changed bool
				c.Subjects, changed = addSubjects(c.Subjects, want.Subjects)
				return changed
			}})
	}
	for _, r := range NamespaceRoles() {
		want := r
		out = append(out, item{gr: rbacv1.Resource("roles"), namespace: r.Namespace, name: r.Name, want: &want,
			merge: func(cur runtime.Object) bool {
				c := cur.(*rbacv1.Role)
				var changed bool
				c.Rules, changed = addRules(c.Rules, want.Rules)
				return changed
			}})
	}
	for _, b := range NamespaceRoleBindings() {
		want := b
		out = append(out, item{gr: rbacv1.Resource("rolebindings"), namespace: b.Namespace, name: b.Name, want: &want,
			merge: func(cur runtime.Object) bool {
				c := cur.(*rbacv1.RoleBinding)
				var changed bool
				c.Subjects, changed = addSubjects(c.Subjects, want.Subjects)
				return changed
			}})
	}
	return out
}

func ensureOnce(ctx context.Context, stores objcache.Stores) error {
	var errs []error
	for _, it := range items() {
		if err := ensureItem(ctx, stores, it); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func ensureItem(ctx context.Context, stores objcache.Stores, it item) error {
	s, ok := stores.Store(it.gr)
	if !ok {
		return fmt.Errorf("bootstrap policy: resource %s is not served", it.gr)
	}
	key := stores.ObjectKey(it.gr, it.namespace, it.name)
	obj := it.want.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	err = s.Create(ctx, key, obj, nil)
	if err == nil {
		return nil
	}
	if !storage.IsExists(err) {
		return fmt.Errorf("bootstrap policy: creating %s %s: %w", it.gr.Resource, it.name, err)
	}
	cur := obj.DeepCopyObject()
	err = s.GuaranteedUpdate(ctx, key, cur, false, nil, func(input runtime.Object) (runtime.Object, error) {
		next := input.DeepCopyObject()
		nm, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		if nm.GetAnnotations()[AutoUpdateKey] != "true" {
			return input, nil
		}
		if !it.merge(next) {
			return input, nil
		}
		return next, nil
	})
	if err != nil && !storage.IsNotFound(err) {
		return fmt.Errorf("bootstrap policy: reconciling %s %s: %w", it.gr.Resource, it.name, err)
	}
	return err
}

// addRules appends the rules of want that have no equal in cur.
func addRules(cur, want []rbacv1.PolicyRule) ([]rbacv1.PolicyRule, bool) {
	changed := false
	for _, w := range want {
		found := false
		for i := range cur {
			if equalStrings(cur[i].Verbs, w.Verbs) && equalStrings(cur[i].APIGroups, w.APIGroups) &&
				equalStrings(cur[i].Resources, w.Resources) && equalStrings(cur[i].ResourceNames, w.ResourceNames) &&
				equalStrings(cur[i].NonResourceURLs, w.NonResourceURLs) {
				found = true
				break
			}
		}
		if !found {
			cur = append(cur, w)
			changed = true
		}
	}
	return cur, changed
}

func addSubjects(cur, want []rbacv1.Subject) ([]rbacv1.Subject, bool) {
	changed := false
	for _, w := range want {
		found := false
		for _, c := range cur {
			if c.Kind == w.Kind && c.Name == w.Name && c.Namespace == w.Namespace {
				found = true
				break
			}
		}
		if !found {
			cur = append(cur, w)
			changed = true
		}
	}
	return cur, changed
}

func hasSelector(sels []metav1.LabelSelector, s metav1.LabelSelector) bool {
	for _, x := range sels {
		if len(x.MatchExpressions) == 0 && len(s.MatchExpressions) == 0 && len(x.MatchLabels) == len(s.MatchLabels) {
			same := true
			for k, v := range s.MatchLabels {
				if x.MatchLabels[k] != v {
					same = false
					break
				}
			}
			if same {
				return true
			}
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
