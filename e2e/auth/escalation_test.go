package auth

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// aliceHead is the first line of every refusal of alice's.
const aliceHead = `user "alice" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"

// TestRBACEscalationPrevention: as kube-apiserver's RBAC storage, a user
// may write a role, or bind one, only with rules they hold, unless the
// authorizer lets them escalate or bind; system:masters always may.
func TestRBACEscalationPrevention(t *testing.T) {
	e := start(t, 0)
	ctx := context.Background()
	ns := "default"

	// alice may write roles and rolebindings in default, and read
	// configmaps; nothing else.
	must(t)(e.kubectl(t, "create", "role", "rbac-writer", "--verb=get,list,create,update,patch",
		"--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,configmaps", "-n", ns))
	must(t)(e.kubectl(t, "create", "rolebinding", "alice-rbac-writer", "--role=rbac-writer", "--user=alice", "-n", ns))
	// system:masters: the admin grants what nobody holds.
	must(t)(e.kubectl(t, "create", "role", "pod-getter", "--verb=get", "--resource=pods", "-n", ns))
	waitFor(t, "alice can create roles", func() bool {
		out, _, err := e.kubectlToken(t, aliceToken, "auth", "can-i", "create", "roles", "-n", ns)
		return err == nil && strings.TrimSpace(out) == "yes"
	})

	// A Role granting pods: refused, with upstream's message.
	_, errOut, err := e.kubectlToken(t, aliceToken, "create", "role", "pods-reader", "--verb=get,list", "--resource=pods", "-n", ns)
	want := `Error from server (Forbidden): roles.rbac.authorization.k8s.io "pods-reader" is forbidden: ` + aliceHead +
		`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`
	if err == nil || strings.TrimSpace(errOut) != want {
		t.Errorf("alice create role granting pods: %v\n got %q\nwant %q", err, errOut, want)
	}
	// A Role within what she holds: created.
	must(t)(e.kubectlToken(t, aliceToken, "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps", "-n", ns))

	alice := aliceClient(t, e)
	// Binding a role she does not hold: refused (the 403 through
	// client-go, exactly).
	_, err = alice.RbacV1().RoleBindings(ns).Create(ctx, roleBinding("bob-pods", "Role", "pod-getter"), metav1.CreateOptions{})
	wantMsg := `rolebindings.rbac.authorization.k8s.io "bob-pods" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("alice binds pod-getter: %v\nwant 403 %q", err, wantMsg)
	}
	_, errOut, err = e.kubectlToken(t, aliceToken, "create", "rolebinding", "bob-pods", "--role=pod-getter", "--user=bob", "-n", ns)
	// (kubectl create rolebinding words a failed create itself.)
	if want := "error: failed to create rolebinding: " + wantMsg; err == nil || strings.TrimSpace(errOut) != want {
		t.Errorf("alice kubectl create rolebinding: %v\n got %q\nwant %q", err, errOut, want)
	}
	// A role that does not exist: its 404.
	_, err = alice.RbacV1().RoleBindings(ns).Create(ctx, roleBinding("bob-nothing", "Role", "nothing"), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `roles.rbac.authorization.k8s.io "nothing" not found` {
		t.Errorf("alice binds a missing role: %v", err)
	}
	// Binding a role she holds: created.
	if _, err := alice.RbacV1().RoleBindings(ns).Create(ctx, roleBinding("bob-cm", "Role", "cm-reader"), metav1.CreateOptions{}); err != nil {
		t.Errorf("alice binds cm-reader: %v", err)
	}
	// A ClusterRoleBinding: cluster-wide she holds nothing.
	must(t)(e.kubectl(t, "create", "clusterrole", "crb-writer", "--verb=create", "--resource=clusterrolebindings.rbac.authorization.k8s.io"))
	must(t)(e.kubectl(t, "create", "clusterrolebinding", "alice-crb-writer", "--clusterrole=crb-writer", "--user=alice"))
	waitFor(t, "alice can create clusterrolebindings", func() bool {
		out, _, err := e.kubectlToken(t, aliceToken, "auth", "can-i", "create", "clusterrolebindings")
		return err == nil && strings.TrimSpace(out) == "yes"
	})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "crb-writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
	if _, err := alice.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Errorf("alice binds crb-writer, which she holds cluster-wide: %v", err)
	}
	crb.Name, crb.RoleRef.Name = "bob-admin", "cluster-admin"
	_, err = alice.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	wantMsg = `clusterrolebindings.rbac.authorization.k8s.io "bob-admin" is forbidden: ` + aliceHead +
		`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("alice binds cluster-admin: %v\nwant 403 %q", err, wantMsg)
	}

	// Updates: one that keeps rules she holds goes; one of a role she
	// does not hold is checked whole, even when it adds no rule.
	must(t)(e.kubectlToken(t, aliceToken, "label", "role", "cm-reader", "tier=a", "-n", ns))
	_, err = alice.RbacV1().Roles(ns).Patch(ctx, "pod-getter", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"a"}}}`), metav1.PatchOptions{})
	wantMsg = `roles.rbac.authorization.k8s.io "pod-getter" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("alice labels pod-getter: %v\nwant 403 %q", err, wantMsg)
	}
	// Adding a rule she does not hold by update: refused.
	r, err := alice.RbacV1().Roles(ns).Get(ctx, "cm-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"configmaps"}})
	_, err = alice.RbacV1().Roles(ns).Update(ctx, r, metav1.UpdateOptions{})
	wantMsg = `roles.rbac.authorization.k8s.io "cm-reader" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("alice adds delete configmaps: %v\nwant 403 %q", err, wantMsg)
	}

	// Server-side apply (creating) and a dry run go through the same check.
	applied := rbacv1ac.Role("applied", ns).WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods").WithVerbs("get"))
	_, err = alice.RbacV1().Roles(ns).Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "alice"})
	wantMsg = `roles.rbac.authorization.k8s.io "applied" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("alice applies a role granting pods: %v\nwant 403 %q", err, wantMsg)
	}
	dry := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "dry"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	_, err = alice.RbacV1().Roles(ns).Create(ctx, dry, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	wantMsg = `roles.rbac.authorization.k8s.io "dry" is forbidden: ` + aliceHead + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("alice dry-run creates a role granting pods: %v\nwant 403 %q", err, wantMsg)
	}

	// With bind on pod-getter by name, she may bind it (and only it).
	must(t)(e.kubectl(t, "create", "role", "pod-getter-binder", "--verb=bind", "--resource=roles.rbac.authorization.k8s.io",
		"--resource-name=pod-getter", "-n", ns))
	must(t)(e.kubectl(t, "create", "rolebinding", "alice-binder", "--role=pod-getter-binder", "--user=alice", "-n", ns))
	waitFor(t, "alice can bind pod-getter", func() bool {
		out, _, err := e.kubectlToken(t, aliceToken, "auth", "can-i", "bind", "roles.rbac.authorization.k8s.io/pod-getter", "-n", ns)
		return err == nil && strings.TrimSpace(out) == "yes"
	})
	must(t)(e.kubectlToken(t, aliceToken, "create", "rolebinding", "bob-pods", "--role=pod-getter", "--user=bob", "-n", ns))

	// With escalate on roles, she may write any role.
	must(t)(e.kubectl(t, "create", "role", "role-escalator", "--verb=escalate", "--resource=roles.rbac.authorization.k8s.io", "-n", ns))
	must(t)(e.kubectl(t, "create", "rolebinding", "alice-escalator", "--role=role-escalator", "--user=alice", "-n", ns))
	waitFor(t, "alice can escalate roles", func() bool {
		out, _, err := e.kubectlToken(t, aliceToken, "auth", "can-i", "escalate", "roles.rbac.authorization.k8s.io", "-n", ns)
		return err == nil && strings.TrimSpace(out) == "yes"
	})
	must(t)(e.kubectlToken(t, aliceToken, "create", "role", "pods-reader", "--verb=get,list", "--resource=pods", "-n", ns))
}

// aliceClient is a client-go clientset authenticating with alice's token.
func aliceClient(t *testing.T, e *env) kubernetes.Interface {
	t.Helper()
	cfg := &rest.Config{Host: e.c.URL, BearerToken: aliceToken, TLSClientConfig: rest.TLSClientConfig{CAData: e.c.CA.CertPEM}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func roleBinding(name, kind, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
}
