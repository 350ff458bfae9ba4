package bootstrappolicy_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/storage"
)

func getClusterRole(t *testing.T, s *objcachetest.Stores, name string) *rbacv1.ClusterRole {
	t.Helper()
	gr := rbacv1.Resource("clusterroles")
	st, _ := s.Store(gr)
	out := &rbacv1.ClusterRole{}
	if err := st.Get(context.Background(), s.ObjectKey(gr, "", name), storage.GetOptions{}, out); err != nil {
		t.Fatalf("reading clusterrole %s: %v", name, err)
	}
	return out
}

func updateClusterRole(t *testing.T, s *objcachetest.Stores, name string, fn func(*rbacv1.ClusterRole)) {
	t.Helper()
	gr := rbacv1.Resource("clusterroles")
	st, _ := s.Store(gr)
	err := st.GuaranteedUpdate(context.Background(), s.ObjectKey(gr, "", name), &rbacv1.ClusterRole{}, false, nil,
		func(in runtime.Object) (runtime.Object, error) {
			r := in.DeepCopyObject().(*rbacv1.ClusterRole)
			fn(r)
			return r, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEnsureCreatesEverythingOnce(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range bootstrappolicy.ClusterRoles() {
		got := getClusterRole(t, s, want.Name)
		if got.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" || got.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("%s: labels %v annotations %v", want.Name, got.Labels, got.Annotations)
		}
		if got.UID == "" || got.CreationTimestamp.IsZero() {
			t.Errorf("%s: no uid or creationTimestamp", want.Name)
		}
	}
	for _, b := range bootstrappolicy.NamespaceRoleBindings() {
		gr := rbacv1.Resource("rolebindings")
		st, _ := s.Store(gr)
		if err := st.Get(ctx, s.ObjectKey(gr, b.Namespace, b.Name), storage.GetOptions{}, &rbacv1.RoleBinding{}); err != nil {
			t.Errorf("rolebinding %s/%s: %v", b.Namespace, b.Name, err)
		}
	}
	before := getClusterRole(t, s, "system:kube-scheduler").ResourceVersion
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	if after := getClusterRole(t, s, "system:kube-scheduler").ResourceVersion; after != before {
		t.Errorf("a second Ensure rewrote an unchanged role: resourceVersion %s -> %s", before, after)
	}
}

func TestEnsureReconcilesOnlyAutoupdateObjects(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	// An administrator trims system:kube-scheduler (autoupdate on) and
	// system:kube-controller-manager (autoupdate turned off), and adds a
	// rule of their own to the scheduler role.
	updateClusterRole(t, s, "system:kube-scheduler", func(r *rbacv1.ClusterRole) {
		r.Rules = append(r.Rules[1:], extra)
	})
	updateClusterRole(t, s, "system:kube-controller-manager", func(r *rbacv1.ClusterRole) {
		r.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
		r.Rules = r.Rules[1:]
	})
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	sched := getClusterRole(t, s, "system:kube-scheduler")
	var want rbacv1.ClusterRole
	for _, r := range bootstrappolicy.ClusterRoles() {
		if r.Name == "system:kube-scheduler" {
			want = r
		}
	}
	if len(sched.Rules) != len(want.Rules)+1 {
		t.Errorf("scheduler role has %d rules after reconcile, want the %d defaults plus the administrator's", len(sched.Rules), len(want.Rules))
	}
	kcm := getClusterRole(t, s, "system:kube-controller-manager")
	for _, r := range bootstrappolicy.ClusterRoles() {
		if r.Name == "system:kube-controller-manager" && len(kcm.Rules) != len(r.Rules)-1 {
			t.Errorf("controller-manager role (autoupdate=false) has %d rules, want it left at %d", len(kcm.Rules), len(r.Rules)-1)
		}
	}
}
