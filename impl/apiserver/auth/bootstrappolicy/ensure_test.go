package bootstrappolicy_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/auth/rbac/validation"

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
	// The removed rule comes back one verb and resource per rule, as
	// kube-apiserver adds what the stored rules do not cover.
	if n := len(want.Rules) - 1 + 1 + len(validation.BreakdownRule(want.Rules[0])); len(sched.Rules) != n {
		t.Errorf("scheduler role has %d rules after reconcile, want %d: the %d defaults kept, the administrator's, and the removed one broken down",
			len(sched.Rules), n, len(want.Rules)-1)
	}
	if ok, missing := validation.Covers(sched.Rules, append(want.Rules, extra)); !ok {
		t.Errorf("scheduler role after reconcile lacks %+v", missing)
	}
	kcm := getClusterRole(t, s, "system:kube-controller-manager")
	for _, r := range bootstrappolicy.ClusterRoles() {
		if r.Name == "system:kube-controller-manager" && len(kcm.Rules) != len(r.Rules)-1 {
			t.Errorf("controller-manager role (autoupdate=false) has %d rules, want it left at %d", len(kcm.Rules), len(r.Rules)-1)
		}
	}
}

// TestEnsureReconcilesObjectsWithoutAutoupdate: as kube-apiserver's
// reconciliation, only autoupdate "false" protects an object; one whose
// annotations and labels an administrator removed gets its lacking rules
// back, and the default annotation and label with them (the stored ones
// win where both have a key).
func TestEnsureReconcilesObjectsWithoutAutoupdate(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	updateClusterRole(t, s, "system:kube-scheduler", func(r *rbacv1.ClusterRole) {
		r.Annotations = map[string]string{"owner": "admin"}
		r.Labels = nil
		r.Rules = r.Rules[1:]
	})
	updateClusterRole(t, s, "system:volume-scheduler", func(r *rbacv1.ClusterRole) {
		r.Labels[bootstrappolicy.BootstrapLabelKey] = "mine"
	})
	before := getClusterRole(t, s, "system:volume-scheduler").ResourceVersion
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	sched := getClusterRole(t, s, "system:kube-scheduler")
	for _, want := range bootstrappolicy.ClusterRoles() {
		if want.Name != sched.Name {
			continue
		}
		if n := len(want.Rules) - 1 + len(validation.BreakdownRule(want.Rules[0])); len(sched.Rules) != n {
			t.Errorf("scheduler role without autoupdate has %d rules after reconcile, want %d: the removed default back, broken down", len(sched.Rules), n)
		}
		if ok, missing := validation.Covers(sched.Rules, want.Rules); !ok {
			t.Errorf("scheduler role without autoupdate lacks %+v after reconcile", missing)
		}
	}
	if got := sched.Annotations; got[bootstrappolicy.AutoUpdateKey] != "true" || got["owner"] != "admin" {
		t.Errorf("scheduler role annotations %v, want autoupdate true added to the administrator's", got)
	}
	if got := sched.Labels[bootstrappolicy.BootstrapLabelKey]; got != bootstrappolicy.BootstrapLabelValue {
		t.Errorf("scheduler role label %s=%q, want %q", bootstrappolicy.BootstrapLabelKey, got, bootstrappolicy.BootstrapLabelValue)
	}
	vol := getClusterRole(t, s, "system:volume-scheduler")
	if vol.Labels[bootstrappolicy.BootstrapLabelKey] != "mine" || vol.ResourceVersion != before {
		t.Errorf("volume-scheduler role: label %q, resourceVersion %s (was %s); want the stored label kept and nothing written",
			vol.Labels[bootstrappolicy.BootstrapLabelKey], vol.ResourceVersion, before)
	}
}
