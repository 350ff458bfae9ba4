package objcachetest

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// PolicyClient is a bootstrappolicy.Client straight over stores, for the
// tests that run the authorizers without an API server: it writes as the
// API would (a UID and creation time on create, the resourceVersion as
// the condition of an update) and answers the API's errors.
type PolicyClient struct{ Stores objcache.Stores }

func newPolicyObject(gr schema.GroupResource) (runtime.Object, error) {
	switch gr.Resource {
	case "clusterroles":
		return &rbacv1.ClusterRole{}, nil
	case "clusterrolebindings":
		return &rbacv1.ClusterRoleBinding{}, nil
	case "roles":
		return &rbacv1.Role{}, nil
	case "rolebindings":
		return &rbacv1.RoleBinding{}, nil
	}
	return nil, fmt.Errorf("no policy kind for %s", gr)
}

func (c PolicyClient) Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (runtime.Object, error) {
	st, _ := c.Stores.Store(gr)
	obj, err := newPolicyObject(gr)
	if err != nil {
		return nil, err
	}
	if err := st.Get(ctx, c.Stores.ObjectKey(gr, namespace, name), storage.GetOptions{}, obj); err != nil {
		if storage.IsNotFound(err) {
			return nil, apierrors.NewNotFound(gr, name)
		}
		return nil, err
	}
	return obj, nil
}

func (c PolicyClient) Create(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	st, _ := c.Stores.Store(gr)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	err = st.Create(ctx, c.Stores.ObjectKey(gr, m.GetNamespace(), m.GetName()), obj, nil)
	if storage.IsExists(err) {
		return apierrors.NewAlreadyExists(gr, m.GetName())
	}
	return err
}

func (c PolicyClient) Update(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	st, _ := c.Stores.Store(gr)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	into, err := newPolicyObject(gr)
	if err != nil {
		return err
	}
	rv := m.GetResourceVersion()
	err = st.GuaranteedUpdate(ctx, c.Stores.ObjectKey(gr, m.GetNamespace(), m.GetName()), into, false,
		&storage.Preconditions{ResourceVersion: &rv}, func(runtime.Object) (runtime.Object, error) { return obj, nil })
	switch {
	case storage.IsNotFound(err):
		return apierrors.NewNotFound(gr, m.GetName())
	case storage.IsConflict(err), storage.CodeOf(err) == storage.ErrCodeInvalidObj:
		return apierrors.NewConflict(gr, m.GetName(), err)
	}
	return err
}

// Delete removes the object on the condition that its UID is uid.
func (c PolicyClient) Delete(ctx context.Context, gr schema.GroupResource, namespace, name string, uid types.UID) error {
	st, _ := c.Stores.Store(gr)
	out, err := newPolicyObject(gr)
	if err != nil {
		return err
	}
	err = st.Delete(ctx, c.Stores.ObjectKey(gr, namespace, name), out, &storage.Preconditions{UID: &uid}, nil)
	switch {
	case storage.IsNotFound(err):
		return apierrors.NewNotFound(gr, name)
	case storage.IsConflict(err), storage.CodeOf(err) == storage.ErrCodeInvalidObj:
		return apierrors.NewConflict(gr, name, err)
	}
	return err
}
