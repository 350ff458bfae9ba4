package bootstrappolicy_test

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
)

// TestAPIClientRecreatesBindingWithUIDPrecondition: through the API
// client (the loopback client in the server), a default binding bound to
// another role is deleted with its UID as the delete's precondition, as
// kube-apiserver's reconciliation deletes it, and created again as the
// default.
func TestAPIClientRecreatesBindingWithUIDPrecondition(t *testing.T) {
	var want rbacv1.ClusterRoleBinding
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		if b.Name == "system:kube-scheduler" {
			want = b
		}
	}
	stored := want.DeepCopy()
	stored.UID = "old-uid"
	stored.RoleRef.Name = "view"
	cs := fake.NewClientset(stored)
	if err := bootstrappolicy.Ensure(context.Background(), bootstrappolicy.NewClient(cs.RbacV1())); err != nil {
		t.Fatal(err)
	}
	var deleted bool
	for _, a := range cs.Actions() {
		d, ok := a.(clienttesting.DeleteAction)
		if !ok || a.GetResource().Resource != "clusterrolebindings" || d.GetName() != want.Name {
			continue
		}
		deleted = true
		if p := d.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != "old-uid" || p.ResourceVersion != nil {
			t.Errorf("delete of clusterrolebinding %s: preconditions %+v, want the stored UID only", want.Name, p)
		}
	}
	if !deleted {
		t.Errorf("clusterrolebinding %s bound to another role was not deleted", want.Name)
	}
	got, err := cs.RbacV1().ClusterRoleBindings().Get(context.Background(), want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.RoleRef != want.RoleRef {
		t.Errorf("clusterrolebinding %s roleRef %+v, want %+v", want.Name, got.RoleRef, want.RoleRef)
	}
}
