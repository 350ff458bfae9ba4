package bootstrappolicy_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// updateStored rewrites the stored object of gr at namespace/name with fn.
func updateStored[T runtime.Object](t *testing.T, s *objcachetest.Stores, gr string, namespace, name string, into T, fn func(T)) {
	t.Helper()
	r := rbacv1.Resource(gr)
	st, _ := s.Store(r)
	err := st.GuaranteedUpdate(context.Background(), s.ObjectKey(r, namespace, name), into, false, nil,
		func(in runtime.Object) (runtime.Object, error) {
			out := in.DeepCopyObject().(T)
			fn(out)
			return out, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func getStored(t *testing.T, s *objcachetest.Stores, gr string, namespace, name string, into runtime.Object) {
	t.Helper()
	r := rbacv1.Resource(gr)
	st, _ := s.Store(r)
	if err := st.Get(context.Background(), s.ObjectKey(r, namespace, name), storage.GetOptions{}, into); err != nil {
		t.Fatalf("reading %s %s/%s: %v", gr, namespace, name, err)
	}
}

// TestEnsureRecreatesBindingWithOtherRoleRef: a stored binding whose
// roleRef is not the default's (roleRef is immutable through the API) is
// deleted and created anew as the default, unless its autoupdate
// annotation is "false"; a cluster role aggregating where the default
// does not loses its aggregation rule.
func TestEnsureRecreatesBindingWithOtherRoleRef(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	c := objcachetest.PolicyClient{Stores: s}
	if err := bootstrappolicy.Ensure(ctx, c); err != nil {
		t.Fatal(err)
	}
	other := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	var before rbacv1.ClusterRoleBinding
	updateStored(t, s, "clusterrolebindings", "", "system:kube-scheduler", &before, func(b *rbacv1.ClusterRoleBinding) {
		b.RoleRef = other
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", Name: "extra"})
	})
	updateStored(t, s, "clusterrolebindings", "", "system:kube-controller-manager", &rbacv1.ClusterRoleBinding{}, func(b *rbacv1.ClusterRoleBinding) {
		b.RoleRef = other
		b.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	})
	var rbBefore rbacv1.RoleBinding
	updateStored(t, s, "rolebindings", "kube-system", "system::leader-locking-kube-scheduler", &rbBefore, func(b *rbacv1.RoleBinding) {
		b.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "other"}
	})
	updateStored(t, s, "clusterroles", "", "system:kube-scheduler", &rbacv1.ClusterRole{}, func(r *rbacv1.ClusterRole) {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}
	})
	if err := bootstrappolicy.Ensure(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantRef := func(name string) rbacv1.ClusterRoleBinding {
		for _, b := range bootstrappolicy.ClusterRoleBindings() {
			if b.Name == name {
				return b
			}
		}
		t.Fatalf("no default clusterrolebinding %s", name)
		return rbacv1.ClusterRoleBinding{}
	}
	var crb rbacv1.ClusterRoleBinding
	getStored(t, s, "clusterrolebindings", "", "system:kube-scheduler", &crb)
	if want := wantRef("system:kube-scheduler"); crb.RoleRef != want.RoleRef || crb.UID == before.UID || len(crb.Subjects) != len(want.Subjects) {
		t.Errorf("clusterrolebinding with another roleRef: roleRef %+v uid %s (was %s) subjects %v; want %+v, recreated with the default subjects",
			crb.RoleRef, crb.UID, before.UID, crb.Subjects, want.RoleRef)
	}
	getStored(t, s, "clusterrolebindings", "", "system:kube-controller-manager", &crb)
	if crb.RoleRef != other {
		t.Errorf("protected clusterrolebinding: roleRef %+v, want it left at %+v", crb.RoleRef, other)
	}
	var rb rbacv1.RoleBinding
	getStored(t, s, "rolebindings", "kube-system", "system::leader-locking-kube-scheduler", &rb)
	if rb.RoleRef.Name != "system::leader-locking-kube-scheduler" || rb.UID == rbBefore.UID {
		t.Errorf("rolebinding with another roleRef: roleRef %+v uid %s (was %s), want recreated with the default's", rb.RoleRef, rb.UID, rbBefore.UID)
	}
	var role rbacv1.ClusterRole
	getStored(t, s, "clusterroles", "", "system:kube-scheduler", &role)
	if role.AggregationRule != nil {
		t.Errorf("clusterrole system:kube-scheduler kept an aggregation rule the default does not have: %+v", role.AggregationRule)
	}
}
