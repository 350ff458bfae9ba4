package rbac

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func res(verb, group, resource, sub, ns, name string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource,
		Subresource: sub, Namespace: ns, Name: name}
}

func url(verb, path string) *request.Info { return &request.Info{Verb: verb, Path: path} }

func TestRuleAllows(t *testing.T) {
	rule := func(verbs, groups, resources, names []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	s := func(v ...string) []string { return v }
	cases := []struct {
		name string
		rule rbacv1.PolicyRule
		info *request.Info
		want bool
	}{
		{"exact", rule(s("get"), s(""), s("pods"), nil), res("get", "", "pods", "", "ns", "p"), true},
		{"other verb", rule(s("get"), s(""), s("pods"), nil), res("list", "", "pods", "", "ns", ""), false},
		{"other group", rule(s("get"), s("apps"), s("pods"), nil), res("get", "", "pods", "", "ns", "p"), false},
		{"verb star", rule(s("*"), s(""), s("pods"), nil), res("deletecollection", "", "pods", "", "ns", ""), true},
		{"group star", rule(s("get"), s("*"), s("deployments"), nil), res("get", "apps", "deployments", "", "ns", "d"), true},
		{"resource star covers subresources", rule(s("get"), s(""), s("*"), nil), res("get", "", "pods", "log", "ns", "p"), true},
		{"pods does not cover pods/log", rule(s("get"), s(""), s("pods"), nil), res("get", "", "pods", "log", "ns", "p"), false},
		{"pods/log", rule(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "log", "ns", "p"), true},
		{"pods/log is not pods", rule(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "", "ns", "p"), false},
		{"*/scale", rule(s("update"), s("apps"), s("*/scale"), nil), res("update", "apps", "deployments", "scale", "ns", "d"), true},
		{"*/scale not status", rule(s("update"), s("apps"), s("*/scale"), nil), res("update", "apps", "deployments", "status", "ns", "d"), false},
		{"*/scale not the resource", rule(s("update"), s("apps"), s("*/scale"), nil), res("update", "apps", "deployments", "", "ns", "d"), false},
		{"resourceNames match", rule(s("get"), s(""), s("configmaps"), s("a")), res("get", "", "configmaps", "", "ns", "a"), true},
		{"resourceNames other", rule(s("get"), s(""), s("configmaps"), s("a")), res("get", "", "configmaps", "", "ns", "b"), false},
		{"resourceNames never match list", rule(s("list"), s(""), s("configmaps"), s("a")), res("list", "", "configmaps", "", "ns", ""), false},
		{"resourceNames never match create", rule(s("create"), s(""), s("configmaps"), s("a")), res("create", "", "configmaps", "", "ns", ""), false},
		{"resource rule does not grant URLs", rule(s("get"), s("*"), s("*"), nil), url("get", "/healthz"), false},
		{"url exact", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}, url("get", "/healthz"), true},
		{"url prefix star", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/apis/*")}, url("get", "/apis/apps/v1"), true},
		{"url prefix star not parent", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/apis/*")}, url("get", "/api"), false},
		{"url star", rbacv1.PolicyRule{Verbs: s("*"), NonResourceURLs: s("*")}, url("post", "/anything"), true},
		{"url wrong verb", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}, url("post", "/healthz"), false},
		{"url rule does not grant resources", rbacv1.PolicyRule{Verbs: s("*"), NonResourceURLs: s("*")}, res("get", "", "pods", "", "ns", "p"), false},
	}
	for _, c := range cases {
		if got := RuleAllows(c.info, &c.rule); got != c.want {
			t.Errorf("%s: RuleAllows = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSubjects(t *testing.T) {
	alice := &request.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}
	sa := &request.User{Name: "system:serviceaccount:ns1:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"}}
	cases := []struct {
		user *request.User
		s    rbacv1.Subject
		ns   string
		want bool
	}{
		{alice, rbacv1.Subject{Kind: "User", Name: "alice"}, "", true},
		{alice, rbacv1.Subject{Kind: "User", Name: "bob"}, "", false},
		{alice, rbacv1.Subject{Kind: "Group", Name: "devs"}, "", true},
		{alice, rbacv1.Subject{Kind: "Group", Name: "alice"}, "", false},
		{sa, rbacv1.Subject{Kind: "ServiceAccount", Namespace: "ns1", Name: "robot"}, "", true},
		{sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, "ns1", true},
		{sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, "ns2", false},
		{sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, "", false},
		{sa, rbacv1.Subject{Kind: "Group", Name: "system:serviceaccounts:ns1"}, "", true},
		{sa, rbacv1.Subject{Kind: "User", Name: "robot"}, "ns1", false},
	}
	for i, c := range cases {
		if got := appliesTo(c.user, &c.s, c.ns); got != c.want {
			t.Errorf("case %d (%s %v in %q): got %v, want %v", i, c.user.Name, c.s, c.ns, got, c.want)
		}
	}
}

func clusterRole(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func TestPolicyAllows(t *testing.T) {
	readPods := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	p := NewPolicy(
		[]*rbacv1.ClusterRole{clusterRole("pod-reader", nil, readPods)},
		[]*rbacv1.Role{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "cm-writer"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}},
		[]*rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "ops-read"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: "Group", Name: "ops"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "dangling"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "gone"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}},
		},
		[]*rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "alice-cm"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm-writer"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "alice-pods"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "robot"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot"}}},
		},
	)
	alice := &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
	bob := &request.User{Name: "bob", Groups: []string{"ops"}}
	carol := &request.User{Name: "carol"}
	robot := &request.User{Name: "system:serviceaccount:ns2:robot"}
	cases := []struct {
		user   *request.User
		info   *request.Info
		want   bool
		reason string
	}{
		{alice, res("create", "", "configmaps", "", "ns1", ""), true, `RBAC: allowed by RoleBinding "alice-cm/ns1" of Role "cm-writer" to User "alice"`},
		{alice, res("create", "", "configmaps", "", "ns2", ""), false, ""},
		{alice, res("get", "", "pods", "", "ns1", "p"), true, `RBAC: allowed by RoleBinding "alice-pods/ns1" of ClusterRole "pod-reader" to User "alice"`},
		// A RoleBinding to a ClusterRole grants only in its namespace.
		{alice, res("list", "", "pods", "", "", ""), false, ""},
		{alice, res("list", "", "pods", "", "ns2", ""), false, ""},
		{bob, res("list", "", "pods", "", "", ""), true, `RBAC: allowed by ClusterRoleBinding "ops-read" of ClusterRole "pod-reader" to Group "ops"`},
		{bob, res("delete", "", "pods", "", "ns1", "p"), false, ""},
		{carol, res("get", "", "pods", "", "ns1", "p"), false, `RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
		{robot, res("get", "", "pods", "", "ns2", "p"), true, `RBAC: allowed by RoleBinding "robot/ns2" of ClusterRole "pod-reader" to ServiceAccount "ns2/robot"`},
		{robot, res("get", "", "pods", "", "ns1", "p"), false, ""},
		{nil, res("get", "", "pods", "", "ns1", "p"), false, ""},
	}
	// Twice: the second time the granting binding's reason is the one
	// the policy kept.
	for range 2 {
		for i, c := range cases {
			got, reason := p.Allows(c.user, c.info)
			if got != c.want || reason != c.reason {
				t.Errorf("case %d: Allows = %v %q, want %v %q", i, got, reason, c.want, c.reason)
			}
		}
	}

	rules, err := p.RulesFor(alice, "ns1")
	if err != nil || len(rules) != 2 {
		t.Errorf("RulesFor(alice, ns1) = %v, %v; want the cm-writer and pod-reader rules", rules, err)
	}
	rules, err = p.RulesFor(carol, "")
	if err == nil || !strings.Contains(err.Error(), "not found") || len(rules) != 0 {
		t.Errorf("RulesFor(carol) = %v, %v; want no rules and the missing role error", rules, err)
	}
}
