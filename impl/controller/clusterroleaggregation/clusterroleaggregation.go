// Package clusterroleaggregation is kube-controller-manager's
// clusterrole-aggregation controller over client-go: it writes into every
// ClusterRole with an aggregationRule the union of the rules of the
// ClusterRoles its selectors match, so that reading "admin", "edit" or
// "view" (kubectl get clusterrole view -o yaml) shows what they grant.
//
// The API server's RBAC authorizer grants an aggregated role only the
// rules stored in it, so until this controller has written them admin,
// edit and view grant nothing, as in Kubernetes. The decision — which
// rules one aggregated role gets — is AggregatedRules, upstream's sync
// rule: the union of the rules the selected roles store at that moment.
// Nested aggregation (admin over edit over view) is therefore reached
// over several syncs, each written role's update queueing the others
// again, and every intermediate state is upstream's. This package only
// adds the informer, the queue and the write, as upstream's: any
// ClusterRole change queues every aggregated ClusterRole, and a role whose
// stored rules differ from its aggregate gets them by a server-side apply
// of .rules as field manager "clusterrole-aggregation-controller" (forced),
// falling back to an update where the server does not take apply patches.
// An empty aggregate's apply carries no rules, so it removes only rules
// the controller's field manager owns: a role created with rules whose
// selectors select nothing keeps them (and passes them on to a role
// selecting it).
package clusterroleaggregation

import (
	"context"
	"fmt"
	"math"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacapply "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// FieldManager is the field manager of the controller's apply requests
// (upstream's).
const FieldManager = "clusterrole-aggregation-controller"

// DefaultWorkers is how many roles kube-controller-manager syncs at once.
const DefaultWorkers = 5

// Controller keeps aggregated ClusterRoles' rules written.
type Controller struct {
	client kubernetes.Interface
	lister rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on the shared ClusterRole informer; client
// writes the rules (it needs escalate, get, update and patch on
// clusterroles).
func New(client kubernetes.Interface, roles rbacinformers.ClusterRoleInformer) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: roles.Lister(),
		synced: roles.Informer().HasSynced,
		queue:  workloop.NewQueue("ClusterRoleAggregator"),
	}
	// Any change can change any aggregate (a label added, a rule removed,
	// a role deleted), so every event queues every aggregated role.
	_, err := roles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(any, any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	})
	if err != nil {
		return nil, fmt.Errorf("clusterrole aggregation: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueueAggregated() {
	roles, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run syncs with workers workers until ctx ends. As upstream, a failing
// role is retried with back-off without a retry limit.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "clusterrole-aggregation", c.queue, c.synced); err != nil {
		return err
	}
	workloop.RunWithMaxRetries(ctx, "clusterrole-aggregation", c.queue, workers, math.MaxInt, c.sync)
	return nil
}

// sync writes the aggregate of the named role (AggregatedRules over the
// cached roles) when its cached rules differ from it; a selector that
// does not parse fails the sync, retried with back-off, as upstream's.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clusterrole aggregation: %w", err)
	}
	if role.AggregationRule == nil {
		return nil
	}
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("clusterrole aggregation: %w", err)
	}
	want, err := AggregatedRules(role, all)
	if err != nil {
		return fmt.Errorf("clusterrole aggregation: %w", err)
	}
	if equality.Semantic.DeepEqual(role.Rules, want) {
		return nil
	}
	err = c.apply(ctx, name, want)
	if apierrors.IsUnsupportedMediaType(err) {
		err = c.update(ctx, role, want)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing aggregated rules of clusterrole %s: %w", name, err)
	}
	return nil
}

// apply sets the role's rules by a forced server-side apply.
func (c *Controller) apply(ctx context.Context, name string, rules []rbacv1.PolicyRule) error {
	cfg := rbacapply.ClusterRole(name)
	for i := range rules {
		r := &rules[i]
		cfg.WithRules(rbacapply.PolicyRule().WithVerbs(r.Verbs...).WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).
			WithResourceNames(r.ResourceNames...).WithNonResourceURLs(r.NonResourceURLs...))
	}
	_, err := c.client.RbacV1().ClusterRoles().Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// update sets the role's rules by an update of the cached object (a
// conflict is retried through the queue).
func (c *Controller) update(ctx context.Context, role *rbacv1.ClusterRole, rules []rbacv1.PolicyRule) error {
	next := role.DeepCopy()
	next.Rules = append([]rbacv1.PolicyRule(nil), rules...)
	_, err := c.client.RbacV1().ClusterRoles().Update(ctx, next, metav1.UpdateOptions{})
	return err
}
