package controllermanager_test

import (
	"context"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestClusterRoleAggregationUnderRBAC runs the default controller list
// narrowed to clusterrole-aggregation, as kube-controller-manager does
// with its clusterrole-aggregation-controller service account under RBAC:
// a ClusterRole with an aggregationRule gets the rules of the labelled
// ClusterRole it selects, a second labelled role's rules are appended
// after them, the bootstrap "view" role (aggregated from
// system:aggregate-to-view) gets its rules written, and rules leave the
// aggregate with the label or the role that brought them; an aggregated
// role selecting nothing keeps the rules it was created with and passes
// them on to a role selecting it. The API server's RBAC authorizer reads
// only the stored rules: a user bound to the aggregated role is refused
// what the labelled role grants until the controller has written it, then
// allowed.
func TestClusterRoleAggregationUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	if !controllermanager.DefaultConfig().Enabled(controllermanager.ClusterRoleAggregation) {
		t.Fatal("clusterrole-aggregation is not on by default")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	roles := admin.RbacV1().ClusterRoles()
	selector := metav1.LabelSelector{MatchLabels: map[string]string{"example.com/aggregate-to-monitor": "true"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitor"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{selector}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podsRule := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitor-pods", Labels: selector.MatchLabels},
		Rules: []rbacv1.PolicyRule{podsRule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// User "mon" is bound to monitor and, later, to a marker role created
	// after monitor-pods: once the marker's rule is granted, the
	// authorizer has seen monitor-pods and mon's binding to monitor.
	markerRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "marker"},
		Rules: []rbacv1.PolicyRule{markerRule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"monitor", "marker"} {
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mon-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mon"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	monMay := func(verb, resource string) (bool, error) {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "mon", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: "default"}}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed, nil
	}
	eventually(t, "the authorizer sees the marker binding", func() (bool, error) { return monMay("get", "configmaps") })
	if allowed, err := monMay("list", "pods"); err != nil || allowed {
		t.Fatalf("before the controller ran, mon may list pods through monitor: %v %v; want refused", allowed, err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{"*"}
	for _, name := range controllermanager.AllControllers {
		if name != controllermanager.ClusterRoleAggregation {
			cfg.Controllers = append(cfg.Controllers, "-"+name)
		}
	}
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, root, cmCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()
	rulesOf := func(name string, want []rbacv1.PolicyRule) func() (bool, error) {
		return func() (bool, error) {
			r, err := roles.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return equality.Semantic.DeepEqual(r.Rules, want), nil
		}
	}
	eventually(t, "monitor gets monitor-pods' rule", rulesOf("monitor", []rbacv1.PolicyRule{podsRule}))
	eventually(t, "mon may list pods once monitor's rules are written", func() (bool, error) { return monMay("list", "pods") })

	nodesRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitor-z-nodes", Labels: selector.MatchLabels},
		Rules: []rbacv1.PolicyRule{nodesRule, podsRule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "monitor gets monitor-z-nodes' new rule after monitor-pods'", rulesOf("monitor", []rbacv1.PolicyRule{podsRule, nodesRule}))

	eventually(t, "view has rules", func() (bool, error) {
		r, err := roles.Get(ctx, "view", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				if res == "pods" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	m, err := roles.Get(ctx, "monitor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, f := range m.ManagedFields {
		managers = append(managers, f.Manager+"/"+string(f.Operation))
	}
	found := false
	for _, mgr := range managers {
		found = found || mgr == "clusterrole-aggregation-controller/Apply"
	}
	if !found {
		t.Errorf("monitor's managers %v, want clusterrole-aggregation-controller/Apply among them", managers)
	}

	// As upstream's sync recomputes the union from the roles selected now,
	// a role that loses its label, then one deleted, takes its rules out;
	// with none selected the forced apply carries no rules and so drops
	// those the controller's field manager owned.
	zNodes, err := roles.Get(ctx, "monitor-z-nodes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zNodes.Labels = nil
	if _, err := roles.Update(ctx, zNodes, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an unlabelled role's rule leaves monitor", rulesOf("monitor", []rbacv1.PolicyRule{podsRule}))
	if err := roles.Delete(ctx, "monitor-pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted role's rule leaves monitor", rulesOf("monitor", nil))
	eventually(t, "mon may no longer list pods", func() (bool, error) { allowed, err := monMay("list", "pods"); return !allowed, err })

	// An aggregated role whose own selectors select nothing keeps the
	// rules it was created with (the controller's empty apply removes only
	// rules its field manager owns), and as upstream's sync unions the
	// rules the selected roles store, a role selecting it gets them.
	secretsRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitor-inner", Labels: selector.MatchLabels},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"example.com/aggregate-to-nothing": "true"}}}},
		Rules:           []rbacv1.PolicyRule{secretsRule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "monitor gets the rule monitor-inner was created with", rulesOf("monitor", []rbacv1.PolicyRule{secretsRule}))
	eventually(t, "mon may get secrets through monitor", func() (bool, error) { return monMay("get", "secrets") })
	if ok, err := rulesOf("monitor-inner", []rbacv1.PolicyRule{secretsRule})(); err != nil || !ok {
		t.Errorf("monitor-inner lost the rules it was created with (%v)", err)
	}
}
