package bootstrappolicy

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Client reads and writes the policy's objects, answering the API's
// errors (NotFound, AlreadyExists, Conflict; k8s.io/apimachinery's
// api/errors). In the API server it is the loopback client (NewClient),
// as kube-apiserver's rbac/bootstrap-roles hook writes the policy through
// its loopback clientset.
type Client interface {
	Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (runtime.Object, error)
	Create(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error
	// Update writes obj on the condition that its resourceVersion is
	// still the stored one.
	Update(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error
	// Delete removes the object on the condition that its UID is still
	// uid (a Conflict otherwise).
	Delete(ctx context.Context, gr schema.GroupResource, namespace, name string, uid types.UID) error
}

// Ensure writes the default policy through c: every missing object is
// created; an existing one gets the default rules its own do not cover
// (addRules) and the subjects, aggregation selectors, labels and
// annotations it lacks (nothing is removed but an aggregation rule the
// default role does not have, and an object with autoupdate "false" is
// left as the administrator made it); a binding
// whose roleRef is not the default's (the API does not let a roleRef
// change) is deleted and created anew as the default, as kube-apiserver's
// reconciliation recreates it. An object another writer creates, changes
// or deletes meanwhile is decided again on what they wrote.
//
// As kube-apiserver's rbac/bootstrap-roles hook: Ensure first waits for
// the server to answer a read, asking every answerRetry for up to
// answerTimeout, and fails when it never does; then each object is
// written, a write lost to another's or answered 503 tried again a few
// times (client-go's retry.DefaultBackoff); an object whose write still
// fails (an admission webhook refusing it, say) is logged and left, and
// the rest of the policy is written: one refused object does not keep
// the server from starting.
func Ensure(ctx context.Context, c Client) error {
	all := items()
	if err := waitAnswering(ctx, c, all[0]); err != nil {
		return err
	}
	for _, it := range all {
		err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
			return ctx.Err() == nil && (apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err))
		}, func() error { return ensureItem(ctx, c, it) })
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("bootstrap policy: %w (last error: %v)", ctx.Err(), err)
		}
		slog.ErrorContext(ctx, "Unable to reconcile an object of the default RBAC policy; the others are written",
			"resource", it.gr.String(), "namespace", it.namespace, "name", it.name, "err", err)
	}
	return nil
}

// How long and how often Ensure asks the server for a first answer, as
// kube-apiserver's hook polls its lists (every second, 30 seconds).
const (
	answerTimeout = 30 * time.Second
	answerRetry   = time.Second
)

// waitAnswering reads it until the server answers (the object or
// NotFound), failing after answerTimeout.
func waitAnswering(ctx context.Context, c Client, it item) error {
	deadline := time.Now().Add(answerTimeout)
	for {
		_, err := c.Get(ctx, it.gr, it.namespace, it.name)
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("bootstrap policy: unable to initialize roles: reading %s %s: %w", it.gr.Resource, it.name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bootstrap policy: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(answerRetry):
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
	// sameRef reports whether a stored binding's roleRef is want's; nil
	// for roles.
	sameRef func(cur runtime.Object) bool
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
				if want.AggregationRule == nil && c.AggregationRule != nil {
					// Not an aggregated role by default: its rules are
					// its own, not an aggregation controller's.
					c.AggregationRule = nil
					changed = true
				}
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
			},
			sameRef: func(cur runtime.Object) bool { return cur.(*rbacv1.ClusterRoleBinding).RoleRef == want.RoleRef }})
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
			},
			sameRef: func(cur runtime.Object) bool { return cur.(*rbacv1.RoleBinding).RoleRef == want.RoleRef }})
	}
	return out
}

// maxAttempts is how many times ensureItem decides an object that is
// created or deleted by another writer meanwhile, as kube-apiserver's
// reconciliation gives up after three.
const maxAttempts = 3

// ensureItem reads the object, creates it when missing, and otherwise
// reconciles it (reconcile). A create that finds the object created
// meanwhile, or an update that finds it deleted, is decided again on
// what is stored, up to maxAttempts times in all; a Conflict (a write
// lost to another's, or a binding's UID-conditioned delete) is returned
// for Ensure to try the object again, as kube-apiserver's hook does.
func ensureItem(ctx context.Context, c Client, it item) error {
	var last error
	for attempt := 0; ; attempt++ {
		if attempt == maxAttempts {
			return fmt.Errorf("bootstrap policy: %s %s: exceeded maximum attempts: %w", it.gr.Resource, it.name, last)
		}
		cur, err := c.Get(ctx, it.gr, it.namespace, it.name)
		if apierrors.IsNotFound(err) {
			err = c.Create(ctx, it.gr, it.want.DeepCopyObject())
			if err == nil {
				return nil
			}
			if apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				last = err
				continue
			}
			return fmt.Errorf("bootstrap policy: creating %s %s: %w", it.gr.Resource, it.name, err)
		}
		if err != nil {
			return fmt.Errorf("bootstrap policy: reading %s %s: %w", it.gr.Resource, it.name, err)
		}
		if uid, ok := recreate(it, cur); ok {
			err = c.Delete(ctx, it.gr, it.namespace, it.name, uid)
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("bootstrap policy: deleting %s %s to recreate it with the default roleRef: %w", it.gr.Resource, it.name, err)
			}
			err = c.Create(ctx, it.gr, it.want.DeepCopyObject())
			if err == nil {
				return nil
			}
			if apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				last = err
				continue
			}
			return fmt.Errorf("bootstrap policy: creating %s %s: %w", it.gr.Resource, it.name, err)
		}
		next, ok := reconcile(it, cur)
		if !ok {
			return nil
		}
		err = c.Update(ctx, it.gr, next)
		if err == nil {
			return nil
		}
		if apierrors.IsNotFound(err) && ctx.Err() == nil {
			last = err
			continue
		}
		return fmt.Errorf("bootstrap policy: reconciling %s %s: %w", it.gr.Resource, it.name, err)
	}
}

// recreate is the pure decision to replace a stored binding whose roleRef
// is not the default's (and whose autoupdate annotation is not "false")
// by the default; it returns the stored binding's UID, the condition of
// its delete.
func recreate(it item, cur runtime.Object) (types.UID, bool) {
	m, err := meta.Accessor(cur)
	if err != nil || it.sameRef == nil || m.GetAnnotations()[AutoUpdateKey] == "false" || it.sameRef(cur) {
		return "", false
	}
	return m.GetUID(), true
}

// reconcile is the pure decision on a stored object: the object to write
// back (cur with what it lacks of the default: rules, subjects,
// aggregation selectors, and the default's labels and annotations, the
// stored values kept where both have a key), or false when it is to be
// left as it is: nothing lacking, or autoupdate "false", the only value
// that protects an object in kube-apiserver's reconciliation (a missing
// annotation does not).
func reconcile(it item, cur runtime.Object) (runtime.Object, bool) {
	next := cur.DeepCopyObject()
	m, err := meta.Accessor(next)
	if err != nil || m.GetAnnotations()[AutoUpdateKey] == "false" {
		return nil, false
	}
	want, err := meta.Accessor(it.want)
	if err != nil {
		return nil, false
	}
	changed := false
	if a, added := withDefaults(m.GetAnnotations(), want.GetAnnotations()); added {
		m.SetAnnotations(a)
		changed = true
	}
	if l, added := withDefaults(m.GetLabels(), want.GetLabels()); added {
		m.SetLabels(l)
		changed = true
	}
	if it.merge(next) {
		changed = true
	}
	if !changed {
		return nil, false
	}
	return next, true
}

// withDefaults is cur with the keys of defaults it lacks added, and
// whether any was.
func withDefaults(cur, defaults map[string]string) (map[string]string, bool) {
	var out map[string]string
	for k, v := range defaults {
		if _, ok := cur[k]; ok {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(cur)+len(defaults))
			for ck, cv := range cur {
				out[ck] = cv
			}
		}
		out[k] = v
	}
	if out == nil {
		return cur, false
	}
	return out, true
}

// EnsureThrough is Ensure through a client of the API server configured
// by cfg: a post-start hook's LoopbackClientConfig, as kube-apiserver's
// rbac/bootstrap-roles hook builds its clientset from it.
func EnsureThrough(ctx context.Context, cfg *rest.Config) error {
	client, err := rbacv1client.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("bootstrap policy: building the RBAC client: %w", err)
	}
	return Ensure(ctx, NewClient(client))
}

// NewClient is a Client over the API: rbac is the API server's loopback
// client, whose creates and updates (no field manager given) are recorded
// in managedFields under its user agent's product, kube-apiserver.
func NewClient(rbac rbacv1client.RbacV1Interface) Client { return apiClient{rbac} }

type apiClient struct{ rbac rbacv1client.RbacV1Interface }

func (c apiClient) Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (runtime.Object, error) {
	switch gr.Resource {
	case "clusterroles":
		return c.rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	case "clusterrolebindings":
		return c.rbac.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	case "roles":
		return c.rbac.Roles(namespace).Get(ctx, name, metav1.GetOptions{})
	case "rolebindings":
		return c.rbac.RoleBindings(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return nil, fmt.Errorf("bootstrap policy: no client for %s", gr)
}

func (c apiClient) Create(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		_, err = c.rbac.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = c.rbac.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.Role:
		_, err = c.rbac.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *rbacv1.RoleBinding:
		_, err = c.rbac.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("bootstrap policy: no client for %s %T", gr, obj)
	}
	return err
}

func (c apiClient) Delete(ctx context.Context, gr schema.GroupResource, namespace, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	switch gr.Resource {
	case "clusterroles":
		return c.rbac.ClusterRoles().Delete(ctx, name, opts)
	case "clusterrolebindings":
		return c.rbac.ClusterRoleBindings().Delete(ctx, name, opts)
	case "roles":
		return c.rbac.Roles(namespace).Delete(ctx, name, opts)
	case "rolebindings":
		return c.rbac.RoleBindings(namespace).Delete(ctx, name, opts)
	}
	return fmt.Errorf("bootstrap policy: no client for %s", gr)
}

func (c apiClient) Update(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		_, err = c.rbac.ClusterRoles().Update(ctx, o, metav1.UpdateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = c.rbac.ClusterRoleBindings().Update(ctx, o, metav1.UpdateOptions{})
	case *rbacv1.Role:
		_, err = c.rbac.Roles(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	case *rbacv1.RoleBinding:
		_, err = c.rbac.RoleBindings(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	default:
		err = fmt.Errorf("bootstrap policy: no client for %s %T", gr, obj)
	}
	return err
}

// addRules appends to cur what of want cur does not cover (as
// kube-apiserver's reconciliation, by k8s.io/component-helpers'
// validation.Covers: each rule of want broken down to one verb, group,
// resource and resource name, or one verb and URL, and the pieces no rule
// of cur allows added in that form), and reports whether it added any.
func addRules(cur, want []rbacv1.PolicyRule) ([]rbacv1.PolicyRule, bool) {
	covered, missing := validation.Covers(cur, want)
	if covered {
		return cur, false
	}
	return append(cur, missing...), true
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
