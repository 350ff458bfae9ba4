package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestAggregateClusterRolesAsUpstream holds AggregateClusterRoles (what
// the clusterrole-aggregation controller writes and the authorizer decides
// on) to the rules of
// kube-controller-manager's clusterrole-aggregation controller: per
// selector in order, the matching roles sorted by name, the aggregated
// role itself skipped, each rule appended unless a semantically equal one
// (a nil list equal to an empty one) is already there; a selected
// aggregated role contributes its aggregated rules, never its own; and a
// role that is no longer selected (or gone) takes its rules with it.
func TestAggregateClusterRolesAsUpstream(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getEmptyNames := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	del := rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getVerbsSwapped := rbacv1.PolicyRule{Verbs: []string{"list", "get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getList := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	matchLabels := func(k, v string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	agg := func(r *rbacv1.ClusterRole, sels ...metav1.LabelSelector) *rbacv1.ClusterRole {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: sels}
		return r
	}
	l := func(k, v string) map[string]string { return map[string]string{k: v} }
	cases := []struct {
		name  string
		roles []*rbacv1.ClusterRole
		want  []rbacv1.PolicyRule // the rules of "agg"
	}{
		{"matching roles in name order, not creation order", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", nil), matchLabels("x", "1")),
			clusterRole("zeta", l("x", "1"), del),
			clusterRole("alpha", l("x", "1"), list),
			clusterRole("mid", l("x", "1"), get),
		}, []rbacv1.PolicyRule{list, get, del}},
		{"a later selector's roles after an earlier selector's, whatever their names", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", nil), matchLabels("x", "2"), matchLabels("x", "1")),
			clusterRole("a", l("x", "1"), get),
			clusterRole("b", l("x", "2"), list),
		}, []rbacv1.PolicyRule{list, get}},
		{"semantically equal rules once, the first kept; different verb order is another rule", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", nil), matchLabels("x", "1")),
			clusterRole("a", l("x", "1"), getEmptyNames, getList),
			clusterRole("b", l("x", "1"), get, getVerbsSwapped, getList),
		}, []rbacv1.PolicyRule{getEmptyNames, getList, getVerbsSwapped}},
		{"a role selecting itself takes nothing from itself, its own rules dropped", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", l("x", "1"), del), matchLabels("x", "1")),
			clusterRole("a", l("x", "1"), get),
		}, []rbacv1.PolicyRule{get}},
		{"a selected aggregated role gives its aggregated rules, not its own", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", nil), matchLabels("x", "1")),
			agg(clusterRole("inner", l("x", "1"), del), matchLabels("y", "1")),
			clusterRole("leaf", l("y", "1"), get),
		}, []rbacv1.PolicyRule{get}},
		{"nothing selected any more: no rules", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", nil, get), matchLabels("x", "1")),
			clusterRole("was-selected", l("x", "2"), get),
		}, nil},
		{"the empty selector selects every other role", []*rbacv1.ClusterRole{
			agg(clusterRole("agg", nil), metav1.LabelSelector{}),
			clusterRole("b", nil, list),
			clusterRole("a", l("x", "1"), get),
		}, []rbacv1.PolicyRule{get, list}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := AggregateClusterRoles(c.roles)["agg"]
			if len(got) != len(c.want) {
				t.Fatalf("agg = %+v, want %+v", got, c.want)
			}
			for i := range got {
				// equalRule ignores nil versus empty; the test wants the
				// first of equal rules kept as it was.
				if !equalRule(&got[i], &c.want[i]) || (got[i].ResourceNames == nil) != (c.want[i].ResourceNames == nil) {
					t.Fatalf("agg = %+v, want %+v", got, c.want)
				}
			}
		})
	}
}

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

	// The controller writes what AggregateClusterRoles decides.
	synced := unsynced.DeepCopy()
	synced.Rules = AggregateClusterRoles([]*rbacv1.ClusterRole{unsynced, part})["agg"]
	p = NewPolicy([]*rbacv1.ClusterRole{synced, part}, nil, bind("agg"), nil)
	if ok, n := decide(p, res("list", "", "pods", "", "ns1", "")); !ok || n != 1 {
		t.Errorf("after the controller wrote agg's rules: allowed %v with %d rules, want part's rule granted", ok, n)
	}
}
