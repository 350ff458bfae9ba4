package escalation

import (
	"context"
	"errors"
	"net/http"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func l(s ...string) []string { return s }

const head = `user "alice" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"

func TestRefusal(t *testing.T) {
	alice := &request.User{Name: "alice", Groups: l("devs", "system:authenticated")}
	podsAll := rule(l("*"), l(""), l("pods"))
	for _, tc := range []struct {
		name      string
		user      *request.User
		owned     []rbacv1.PolicyRule
		errs      []error
		requested []rbacv1.PolicyRule
		want      string // "" = allowed
	}{
		{name: "nothing requested", user: alice},
		{name: "covered by a wildcard", user: alice, owned: []rbacv1.PolicyRule{podsAll},
			requested: []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))}},
		{name: "covered by */scale", user: alice, owned: []rbacv1.PolicyRule{rule(l("get"), l("apps"), l("*/scale"))},
			requested: []rbacv1.PolicyRule{rule(l("get"), l("apps"), l("deployments/scale"))}},
		{name: "nothing held", user: alice,
			requested: []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))},
			want:      head + `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{name: "part held: only the rest is named", user: alice, owned: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			requested: []rbacv1.PolicyRule{rule(l("get", "list", "watch"), l(""), l("pods"))},
			want:      head + `{APIGroups:[""], Resources:["pods"], Verbs:["list" "watch"]}`},
		{name: "several missing rules, sorted", user: alice,
			requested: []rbacv1.PolicyRule{
				rule(l("get"), l("apps"), l("deployments", "daemonsets")),
				{Verbs: l("get"), NonResourceURLs: l("/metrics")},
				{Verbs: l("update"), APIGroups: l(""), Resources: l("configmaps"), ResourceNames: l("a", "b")},
			},
			want: head + `{APIGroups:[""], Resources:["configmaps"], ResourceNames:["a"], Verbs:["update"]}` + "\n" +
				`{APIGroups:[""], Resources:["configmaps"], ResourceNames:["b"], Verbs:["update"]}` + "\n" +
				`{APIGroups:["apps"], Resources:["daemonsets"], Verbs:["get"]}` + "\n" +
				`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}` + "\n" +
				`{NonResourceURLs:["/metrics"], Verbs:["get"]}`},
		{name: "a name-restricted grant does not cover the resource", user: alice,
			owned:     []rbacv1.PolicyRule{{Verbs: l("get"), APIGroups: l(""), Resources: l("secrets"), ResourceNames: l("x")}},
			requested: []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))},
			want:      head + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "one resolution error", user: alice,
			errs:      []error{apierrors.NewNotFound(rbacv1.Resource("clusterroles"), "gone")},
			requested: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			want:      head + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}; resolution errors: [clusterroles.rbac.authorization.k8s.io "gone" not found]`},
		{name: "two resolution errors", user: alice,
			errs: []error{apierrors.NewNotFound(rbacv1.Resource("clusterroles"), "a"),
				apierrors.NewNotFound(rbacv1.Resource("roles"), "b")},
			requested: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			want: head + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}; resolution errors: ` +
				`[[clusterroles.rbac.authorization.k8s.io "a" not found, roles.rbac.authorization.k8s.io "b" not found]]`},
		{name: "resolution errors do not matter when covered", user: alice, owned: []rbacv1.PolicyRule{podsAll},
			errs: []error{errors.New("x")}, requested: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}},
		{name: "no groups", user: &request.User{Name: "bob"},
			requested: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			want:      `user "bob" (groups=[]) is attempting to grant RBAC permissions not currently held:` + "\n" + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Refusal(tc.user, tc.owned, tc.errs, tc.requested)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestOnlyGCFieldsChange(t *testing.T) {
	old := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "5"},
		Rules: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}}
	with := func(f func(r *rbacv1.Role)) *rbacv1.Role { r := old.DeepCopy(); f(r); return r }
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		old  runtime.Object
		want bool
	}{
		{"create", old, nil, false},
		{"unchanged", old.DeepCopy(), old, true},
		{"finalizer added", with(func(r *rbacv1.Role) { r.Finalizers = l("x") }), old, true},
		{"owner reference added", with(func(r *rbacv1.Role) {
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u"}}
		}), old, true},
		{"label added", with(func(r *rbacv1.Role) { r.Labels = map[string]string{"a": "b"} }), old, false},
		{"rules changed", with(func(r *rbacv1.Role) { r.Rules = nil }), old, false},
	} {
		if got := OnlyGCFieldsChange(tc.obj, tc.old); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakeAuthorizer allows the listed verb/resource/name/namespace tuples.
type fakeAuthorizer map[[4]string]bool

func (f fakeAuthorizer) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	i := a.Info
	if f[[4]string{i.Verb, i.Resource, i.Name, i.Namespace}] && i.APIGroup == rbacv1.GroupName && i.APIVersion == "*" {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "", nil
}

// policyRoles reads roles from a Policy-like set of objects.
type staticRoles struct {
	clusterRoles map[string][]rbacv1.PolicyRule
	roles        map[string][]rbacv1.PolicyRule // ns/name
}

func (s staticRoles) RoleRules(_ context.Context, ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
	if ref.Kind == "ClusterRole" {
		if r, ok := s.clusterRoles[ref.Name]; ok {
			return r, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), ref.Name)
	}
	if r, ok := s.roles[ns+"/"+ref.Name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), ref.Name)
}

func TestChecker(t *testing.T) {
	pods := []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))}
	secrets := []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))}
	crs := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: pods},
		{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"}, Rules: secrets},
		{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Rules: FullAuthority},
	}
	subj := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}
	rb := []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "dev"}, Subjects: subj,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "dangling", Namespace: "broken"}, Subjects: subj,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gone"}},
	}
	crb := []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "root"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "root"}}},
	}
	policy := rbac.NewPolicy(crs, nil, crb, rb)
	roles := staticRoles{clusterRoles: map[string][]rbacv1.PolicyRule{}, roles: map[string][]rbacv1.PolicyRule{"dev/secrets": secrets}}
	for _, r := range crs {
		roles.clusterRoles[r.Name] = r.Rules
	}
	authz := fakeAuthorizer{
		{"escalate", "roles", "", "esc"}:                 true,
		{"bind", "clusterroles", "secret-reader", "dev"}: true,
		{"bind", "roles", "secrets", "dev"}:              true,
		{"bind", "roles", "nope", "dev"}:                 true,
	}
	c := &Checker{Authorizer: authz, Rules: policy, Roles: roles}

	alice := &request.User{Name: "alice", Groups: l("system:authenticated")}
	aliceHead := `user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"
	master := &request.User{Name: "admin", Groups: l("system:masters", "system:authenticated")}
	root := &request.User{Name: "root"}
	role := func(ns string, rules []rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}, Rules: rules}
	}
	binding := func(ns, kind, name string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: ns}, Subjects: subj,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}}
	}
	crBinding := func(name string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, Subjects: subj,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	}
	aggregated := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}
	info := func(verb, resource, ns, name string) *request.Info {
		return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: rbacv1.GroupName, APIVersion: "v1",
			Resource: resource, Namespace: ns, Name: name}
	}
	withLabel := func(r *rbacv1.Role) *rbacv1.Role { r = r.DeepCopy(); r.Labels = map[string]string{"x": "y"}; return r }
	withFinalizer := func(r *rbacv1.Role) *rbacv1.Role { r = r.DeepCopy(); r.Finalizers = l("f"); return r }

	for _, tc := range []struct {
		name     string
		user     *request.User
		info     *request.Info
		obj, old runtime.Object
		code     int32  // 0: allowed
		msg      string // the Status message, when code is set
	}{
		{name: "role with held rules", user: alice, info: info("create", "roles", "dev", ""), obj: role("dev", pods)},
		{name: "role granting what is held elsewhere only", user: alice, info: info("create", "roles", "other", ""), obj: role("other", pods),
			code: http.StatusForbidden, msg: `roles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{name: "role with rules not held", user: alice, info: info("create", "roles", "dev", ""), obj: role("dev", secrets),
			code: http.StatusForbidden, msg: `roles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "role with the escalate verb", user: alice, info: info("create", "roles", "esc", ""), obj: role("esc", secrets)},
		{name: "system:masters", user: master, info: info("create", "roles", "dev", ""), obj: role("dev", secrets)},
		{name: "no user", info: info("create", "roles", "dev", ""), obj: role("dev", nil),
			code: http.StatusForbidden, msg: `roles.rbac.authorization.k8s.io "r" is forbidden: no user on context`},
		{name: "update keeping held rules", user: alice, info: info("update", "roles", "dev", "r"), obj: withLabel(role("dev", pods)), old: role("dev", pods)},
		{name: "update of a role not held: labels", user: alice, info: info("update", "roles", "dev", "r"), obj: withLabel(role("dev", secrets)), old: role("dev", secrets),
			code: http.StatusForbidden, msg: `roles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "update of a role not held: finalizers only", user: alice, info: info("update", "roles", "dev", "r"), obj: withFinalizer(role("dev", secrets)), old: role("dev", secrets)},
		{name: "resolution errors named", user: alice, info: info("create", "roles", "broken", ""), obj: role("broken", pods),
			code: http.StatusForbidden, msg: `roles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceHead +
				`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}; resolution errors: [roles.rbac.authorization.k8s.io "gone" not found]`},
		{name: "clusterrole with held rules", user: root, info: info("create", "clusterroles", "", ""), obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: secrets}},
		{name: "clusterrole: namespaced grants do not count", user: alice, info: info("create", "clusterroles", "", ""), obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: pods},
			code: http.StatusForbidden, msg: `clusterroles.rbac.authorization.k8s.io "c" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{name: "aggregationRule by a user with everything", user: root, info: info("create", "clusterroles", "", ""), obj: aggregated},
		{name: "aggregationRule by a user without everything", user: alice, info: info("create", "clusterroles", "", ""), obj: aggregated,
			code: http.StatusForbidden, msg: `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: ` + AggregationRuleMessage},
		{name: "aggregationRule removed", user: alice, info: info("update", "clusterroles", "", "agg"),
			obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}}, old: aggregated,
			code: http.StatusForbidden, msg: `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: ` + AggregationRuleMessage},
		{name: "binding a held role", user: alice, info: info("create", "rolebindings", "dev", ""), obj: binding("dev", "ClusterRole", "pod-reader")},
		{name: "binding a clusterrole not held", user: alice, info: info("create", "rolebindings", "other", ""), obj: binding("other", "ClusterRole", "pod-reader"),
			code: http.StatusForbidden, msg: `rolebindings.rbac.authorization.k8s.io "rb" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{name: "binding with bind on the clusterrole", user: alice, info: info("create", "rolebindings", "dev", ""), obj: binding("dev", "ClusterRole", "secret-reader")},
		{name: "bind is per namespace", user: alice, info: info("create", "rolebindings", "other", ""), obj: binding("other", "ClusterRole", "secret-reader"),
			code: http.StatusForbidden, msg: `rolebindings.rbac.authorization.k8s.io "rb" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "binding with bind on the role", user: alice, info: info("create", "rolebindings", "dev", ""), obj: binding("dev", "Role", "secrets")},
		{name: "binding a missing role", user: alice, info: info("create", "rolebindings", "other", ""), obj: binding("other", "Role", "nope"),
			code: http.StatusNotFound, msg: `roles.rbac.authorization.k8s.io "nope" not found`},
		{name: "binding a missing role with bind", user: alice, info: info("create", "rolebindings", "dev", ""), obj: binding("dev", "Role", "nope")},
		{name: "clusterrolebinding of a held role", user: root, info: info("create", "clusterrolebindings", "", ""), obj: crBinding("secret-reader")},
		{name: "clusterrolebinding: a namespace's grant does not count", user: alice, info: info("create", "clusterrolebindings", "", ""), obj: crBinding("pod-reader"),
			code: http.StatusForbidden, msg: `clusterrolebindings.rbac.authorization.k8s.io "crb" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{name: "clusterrolebinding: bind in a namespace does not count", user: alice, info: info("create", "clusterrolebindings", "", ""), obj: crBinding("secret-reader"),
			code: http.StatusForbidden, msg: `clusterrolebindings.rbac.authorization.k8s.io "crb" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "other resources are not checked", user: alice, info: &request.Info{IsResourceRequest: true, Verb: "create", Resource: "pods", Namespace: "dev"}, obj: role("dev", secrets)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.user != nil {
				ctx = request.WithUser(ctx, tc.user)
			}
			gr := rbacv1.Resource(tc.info.Resource)
			if tc.info.APIGroup == "" {
				gr.Group = ""
			}
			err := c.Check(ctx, tc.info, gr, tc.obj, tc.old)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a Status error %d", err, tc.code)
			}
			if se.ErrStatus.Code != tc.code || se.ErrStatus.Message != tc.msg {
				t.Errorf("got %d %q\nwant %d %q", se.ErrStatus.Code, se.ErrStatus.Message, tc.code, tc.msg)
			}
		})
	}
}
