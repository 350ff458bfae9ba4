package bootstrappolicy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// refusingClient answers every create of one ClusterRole as a validating
// admission webhook that cannot be called under failurePolicy Fail
// answers it: 500, "failed calling webhook".
type refusingClient struct {
	objcachetest.PolicyClient
	name    string
	refused int
}

func (c *refusingClient) Create(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	if m, err := meta.Accessor(obj); err == nil && gr.Resource == "clusterroles" && m.GetName() == c.name {
		c.refused++
		return apierrors.NewInternalError(errors.New(`failed calling webhook "deny.example.com": connection refused`))
	}
	return c.PolicyClient.Create(ctx, gr, obj)
}

// TestEnsureLeavesAnObjectItCannotWrite: as kube-apiserver's
// rbac/bootstrap-roles hook, an object whose write keeps failing with
// anything but a conflict or 503 (here an admission webhook's 500) is
// left after its tries, the rest of the policy is written, and Ensure
// returns: the API server starts. It used to retry the whole policy
// until its context ended, so such a webhook kept the server from
// starting.
func TestEnsureLeavesAnObjectItCannotWrite(t *testing.T) {
	s := newStores(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &refusingClient{PolicyClient: objcachetest.PolicyClient{Stores: s}, name: "system:kube-scheduler"}
	if err := bootstrappolicy.Ensure(ctx, c); err != nil {
		t.Fatalf("Ensure: %v, want the rest of the policy written", err)
	}
	if c.refused != 1 {
		t.Errorf("the refused create was tried %d times, want 1 (only conflicts and 503 are tried again)", c.refused)
	}
	gr := rbacv1.Resource("clusterroles")
	st, _ := s.Store(gr)
	for _, want := range bootstrappolicy.ClusterRoles() {
		err := st.Get(ctx, s.ObjectKey(gr, "", want.Name), storage.GetOptions{}, &rbacv1.ClusterRole{})
		switch {
		case want.Name == c.name && !storage.IsNotFound(err):
			t.Errorf("clusterrole %s: %v, want not found", want.Name, err)
		case want.Name != c.name && err != nil:
			t.Errorf("clusterrole %s: %v", want.Name, err)
		}
	}
	for _, want := range bootstrappolicy.NamespaceRoleBindings() {
		gr := rbacv1.Resource("rolebindings")
		st, _ := s.Store(gr)
		if err := st.Get(ctx, s.ObjectKey(gr, want.Namespace, want.Name), storage.GetOptions{}, &rbacv1.RoleBinding{}); err != nil {
			t.Errorf("rolebinding %s/%s: %v", want.Namespace, want.Name, err)
		}
	}
}

// unavailableClient answers its first reads 503, as a server whose
// storage is not there yet.
type unavailableClient struct {
	objcachetest.PolicyClient
	unavailable int
}

func (c *unavailableClient) Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (runtime.Object, error) {
	if c.unavailable > 0 {
		c.unavailable--
		return nil, apierrors.NewServiceUnavailable("storage not ready")
	}
	return c.PolicyClient.Get(ctx, gr, namespace, name)
}

// TestEnsureWaitsForTheServerToAnswer: a server that does not answer yet
// is asked again until it does, and then the whole policy is written.
func TestEnsureWaitsForTheServerToAnswer(t *testing.T) {
	s := newStores(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := &unavailableClient{PolicyClient: objcachetest.PolicyClient{Stores: s}, unavailable: 2}
	if err := bootstrappolicy.Ensure(ctx, c); err != nil {
		t.Fatal(err)
	}
	getClusterRole(t, s, bootstrappolicy.ClusterRoles()[0].Name)
	getClusterRole(t, s, "system:kube-scheduler")
}
