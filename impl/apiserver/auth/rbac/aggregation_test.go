package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestPolicyGrantsStoredRulesOnly: the policy decides on the rules each
// ClusterRole stores, aggregated or not, as kube-apiserver's RBAC
// authorizer does; only the clusterrole-aggregation controller turns an
// aggregationRule into rules, by writing them. So an aggregated role
// whose selectors match nothing still grants the rules it was stored
// with, and a labelled role's rules are granted through an aggregating
// role only once the aggregating role's stored rules hold them. Allows and
// RulesFor (SelfSubjectRulesReview) agree.
func TestPolicyGrantsStoredRulesOnly(t *testing.T) {
	getPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	listPods := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	agg := func(r *rbacv1.ClusterRole, label string) *rbacv1.ClusterRole {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
		return r
	}
	bind := func(role string) []*rbacv1.ClusterRoleBinding {
		return []*rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "alice-" + role},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}}
	}
	alice := &request.User{Name: "alice"}
	decide := func(p *Policy, info *request.Info) (bool, int) {
		ok, _ := p.Allows(alice, info)
		rules, err := p.RulesFor(alice, "ns1")
		if err != nil {
			t.Fatalf("RulesFor: %v", err)
		}
		return ok, len(rules)
	}

	lonely := agg(clusterRole("lonely", nil, getPods), "matches-nothing")
	p := NewPolicy([]*rbacv1.ClusterRole{lonely}, nil, bind("lonely"), nil)
	if ok, n := decide(p, res("get", "", "pods", "", "ns1", "p")); !ok || n != 1 {
		t.Errorf("aggregated role matching nothing: allowed %v with %d rules, want its own stored rule granted", ok, n)
	}

	part := clusterRole("part", map[string]string{"to-agg": "true"}, listPods)
	unsynced := agg(clusterRole("agg", nil), "to-agg")
	p = NewPolicy([]*rbacv1.ClusterRole{unsynced, part}, nil, bind("agg"), nil)
	if ok, n := decide(p, res("list", "", "pods", "", "ns1", "")); ok || n != 0 {
		t.Errorf("before the controller wrote agg's rules: allowed %v with %d rules, want nothing granted", ok, n)
	}

	// The controller writes part's rules into agg.
	synced := unsynced.DeepCopy()
	synced.Rules = []rbacv1.PolicyRule{listPods}
	p = NewPolicy([]*rbacv1.ClusterRole{synced, part}, nil, bind("agg"), nil)
	if ok, n := decide(p, res("list", "", "pods", "", "ns1", "")); !ok || n != 1 {
		t.Errorf("after the controller wrote agg's rules: allowed %v with %d rules, want part's rule granted", ok, n)
	}
}
