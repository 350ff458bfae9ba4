package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
