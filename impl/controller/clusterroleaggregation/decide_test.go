package clusterroleaggregation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func clusterRole(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func aggregating(r *rbacv1.ClusterRole, sels ...metav1.LabelSelector) *rbacv1.ClusterRole {
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: sels}
	return r
}

func matchLabels(k, v string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func named(roles []*rbacv1.ClusterRole, name string) *rbacv1.ClusterRole {
	for _, r := range roles {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// TestAggregatedRulesAsUpstream holds AggregatedRules to the sync rule of
// kube-controller-manager's clusterrole-aggregation controller: per
// selector in order, the matching roles sorted by name, the aggregated
// role itself skipped, each stored rule appended unless a semantically
// equal one (a nil list equal to an empty one) is already there; a
// selected aggregated role gives the rules it stores, whatever its own
// selectors select — so one that still holds the rules it was created
// with (its own aggregate empty) passes those on; a role no longer
// selected (or gone) takes its rules with it.
func TestAggregatedRulesAsUpstream(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getEmptyNames := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	del := rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getVerbsSwapped := rbacv1.PolicyRule{Verbs: []string{"list", "get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	getList := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	l := func(k, v string) map[string]string { return map[string]string{k: v} }
	cases := []struct {
		name  string
		roles []*rbacv1.ClusterRole
		want  []rbacv1.PolicyRule // the rules of "agg"
	}{
		{"matching roles in name order, not creation order", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), matchLabels("x", "1")),
			clusterRole("zeta", l("x", "1"), del),
			clusterRole("alpha", l("x", "1"), list),
			clusterRole("mid", l("x", "1"), get),
		}, []rbacv1.PolicyRule{list, get, del}},
		{"a later selector's roles after an earlier selector's, whatever their names", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), matchLabels("x", "2"), matchLabels("x", "1")),
			clusterRole("a", l("x", "1"), get),
			clusterRole("b", l("x", "2"), list),
		}, []rbacv1.PolicyRule{list, get}},
		{"a role two selectors match gives its rules once, at the first", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), matchLabels("x", "1"), metav1.LabelSelector{}),
			clusterRole("a", nil, list),
			clusterRole("b", l("x", "1"), get),
		}, []rbacv1.PolicyRule{get, list}},
		{"semantically equal rules once, the first kept; different verb order is another rule", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), matchLabels("x", "1")),
			clusterRole("a", l("x", "1"), getEmptyNames, getList),
			clusterRole("b", l("x", "1"), get, getVerbsSwapped, getList),
		}, []rbacv1.PolicyRule{getEmptyNames, getList, getVerbsSwapped}},
		{"a role selecting itself takes nothing from itself, its own rules dropped", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", l("x", "1"), del), matchLabels("x", "1")),
			clusterRole("a", l("x", "1"), get),
		}, []rbacv1.PolicyRule{get}},
		{"a selected aggregated role gives its stored rules, not its aggregate", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), matchLabels("x", "1")),
			aggregating(clusterRole("inner", l("x", "1"), del), matchLabels("y", "1")),
			clusterRole("leaf", l("y", "1"), get),
		}, []rbacv1.PolicyRule{del}},
		{"a selected aggregated role with an empty aggregate passes on the rules it was created with", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), matchLabels("x", "1")),
			aggregating(clusterRole("inner", l("x", "1"), del, get), matchLabels("y", "nothing")),
		}, []rbacv1.PolicyRule{del, get}},
		{"nothing selected any more: an empty list", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil, get), matchLabels("x", "1")),
			clusterRole("was-selected", l("x", "2"), get),
		}, []rbacv1.PolicyRule{}},
		{"the empty selector selects every other role", []*rbacv1.ClusterRole{
			aggregating(clusterRole("agg", nil), metav1.LabelSelector{}),
			clusterRole("b", nil, list),
			clusterRole("a", l("x", "1"), get),
		}, []rbacv1.PolicyRule{get, list}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := AggregatedRules(named(c.roles, "agg"), c.roles)
			if err != nil {
				t.Fatal(err)
			}
			// reflect-exact: the first of equal rules kept as it was (nil
			// or empty resourceNames), and never nil.
			if got == nil || len(got) != len(c.want) {
				t.Fatalf("agg = %#v, want %#v", got, c.want)
			}
			for i := range got {
				if !equality.Semantic.DeepEqual(got[i], c.want[i]) || (got[i].ResourceNames == nil) != (c.want[i].ResourceNames == nil) {
					t.Fatalf("agg = %+v, want %+v", got, c.want)
				}
			}
		})
	}
}

// TestAggregatedRulesBadSelector: a selector that does not parse is an
// error, as upstream's sync fails (and is retried) rather than writing.
func TestAggregatedRulesBadSelector(t *testing.T) {
	bad := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}}
	roles := []*rbacv1.ClusterRole{aggregating(clusterRole("agg", nil), bad), clusterRole("a", nil, rbacv1.PolicyRule{Verbs: []string{"get"}})}
	if got, err := AggregatedRules(roles[0], roles); err == nil {
		t.Fatalf("agg = %+v, want an error", got)
	}
}

// TestNestedAggregationOverSyncs: admin over edit over view reaches
// admin one level per round of syncs, as upstream's controller does: each
// sync writes what the selected roles store at that moment; a cycle of
// aggregated roles created without rules stays empty.
func TestNestedAggregationOverSyncs(t *testing.T) {
	getPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	listPods := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	createPods := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	roles := []*rbacv1.ClusterRole{
		aggregating(clusterRole("admin", nil), matchLabels("to-admin", "true")),
		aggregating(clusterRole("edit", map[string]string{"to-admin": "true"}), matchLabels("to-edit", "true")),
		aggregating(clusterRole("view", map[string]string{"to-edit": "true"}), matchLabels("to-view", "true")),
		clusterRole("view-part", map[string]string{"to-view": "true"}, getPods, listPods),
		clusterRole("edit-part", map[string]string{"to-edit": "true"}, createPods, getPods),
		aggregating(clusterRole("loop-a", map[string]string{"to-b": "true"}), matchLabels("to-a", "true")),
		aggregating(clusterRole("loop-b", map[string]string{"to-a": "true"}), matchLabels("to-b", "true")),
	}
	// One round syncs every aggregated role in the slice's order (admin,
	// edit, view, loop-a, loop-b), each written before the next.
	round := func() {
		for _, r := range roles {
			if r.AggregationRule == nil {
				continue
			}
			rules, err := AggregatedRules(r, roles)
			if err != nil {
				t.Fatal(err)
			}
			r.Rules = rules
		}
	}
	want := func(name string, rules ...rbacv1.PolicyRule) {
		t.Helper()
		if got := named(roles, name).Rules; !equality.Semantic.DeepEqual(got, rules) {
			t.Errorf("%s = %+v, want %+v", name, got, rules)
		}
	}
	round()
	want("view", getPods, listPods)
	want("edit", createPods, getPods) // view was still empty when edit synced
	want("admin")                     // and so was edit when admin synced
	round()
	want("edit", createPods, getPods, listPods)
	want("admin", createPods, getPods)
	round()
	want("admin", createPods, getPods, listPods)
	round()
	want("admin", createPods, getPods, listPods)
	want("loop-a")
	want("loop-b")
}
