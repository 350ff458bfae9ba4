// Package objcachetest gives the authorizer and bootstrap-policy tests
// real stores: an embedded etcd and an objcache.Stores over the
// storage backend, one store per resource under a prefix of its own.
package objcachetest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// Resource describes one store to build.
type Resource struct {
	GR         schema.GroupResource
	Version    schema.GroupVersion
	Namespaced bool
	New        func() runtime.Object
	NewList    func() runtime.Object
}

// RBACAndPods are the resources the authorizers read.
func RBACAndPods() []Resource {
	rv := rbacv1.SchemeGroupVersion
	return []Resource{
		{rbacv1.Resource("clusterroles"), rv, false, func() runtime.Object { return &rbacv1.ClusterRole{} }, func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
		{rbacv1.Resource("roles"), rv, true, func() runtime.Object { return &rbacv1.Role{} }, func() runtime.Object { return &rbacv1.RoleList{} }},
		{rbacv1.Resource("clusterrolebindings"), rv, false, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
		{rbacv1.Resource("rolebindings"), rv, true, func() runtime.Object { return &rbacv1.RoleBinding{} }, func() runtime.Object { return &rbacv1.RoleBindingList{} }},
		{corev1.Resource("pods"), corev1.SchemeGroupVersion, true, func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }},
	}
}

// Etcd is one embedded etcd for a test binary.
type Etcd struct {
	*embedded.Etcd
	dir string
	seq atomic.Int64
}

// StartEtcd starts an embedded etcd in a temporary directory.
func StartEtcd(ctx context.Context) (*Etcd, error) {
	dir, err := os.MkdirTemp("", "objcachetest-")
	if err != nil {
		return nil, err
	}
	e, err := embedded.Start(ctx, embedded.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Etcd{Etcd: e, dir: dir}, nil
}

// Close stops etcd and removes its data.
func (e *Etcd) Close() {
	e.Etcd.Close()
	os.RemoveAll(e.dir)
}

// Stores implements objcache.Stores.
type Stores struct {
	factory    *storagebackend.Factory
	stores     map[schema.GroupResource]storage.Interface
	namespaced map[schema.GroupResource]bool
}

// NewStores builds the stores of resources under a fresh etcd prefix, so
// tests never see each other's objects. Close releases them.
func (e *Etcd) NewStores(resources []Resource) (*Stores, error) {
	return e.newStores(resources, false)
}

// NewCachedStores is NewStores with a watch cache in front of each store,
// as the API server has by default.
func (e *Etcd) NewCachedStores(resources []Resource) (*Stores, error) {
	return e.newStores(resources, true)
}

func (e *Etcd) newStores(resources []Resource, watchCache bool) (*Stores, error) {
	f := storagebackend.NewFactory(storagebackend.Config{
		Client: e.Client(), Prefix: fmt.Sprintf("/test%d", e.seq.Add(1)), WatchCache: watchCache,
	})
	s := &Stores{factory: f, stores: map[schema.GroupResource]storage.Interface{}, namespaced: map[schema.GroupResource]bool{}}
	for _, r := range resources {
		st, _, err := f.New(storage.ResourceConfig{
			GroupResource: r.GR, StorageVersion: r.Version, ResourcePrefix: "/" + r.GR.Resource,
			NewFunc: r.New, NewListFunc: r.NewList, GetAttrs: storage.DefaultAttrs, Namespaced: r.Namespaced,
		})
		if err != nil {
			f.Close()
			return nil, err
		}
		s.stores[r.GR] = st
		s.namespaced[r.GR] = r.Namespaced
	}
	return s, nil
}

// Close destroys the stores.
func (s *Stores) Close() { s.factory.Close() }

// Store implements objcache.Stores.
func (s *Stores) Store(gr schema.GroupResource) (storage.Interface, bool) {
	st, ok := s.stores[gr]
	return st, ok
}

// ObjectKey implements objcache.Stores.
func (s *Stores) ObjectKey(gr schema.GroupResource, namespace, name string) string {
	if !s.namespaced[gr] || namespace == "" {
		return "/" + gr.Resource + "/" + name
	}
	return "/" + gr.Resource + "/" + namespace + "/" + name
}

// ListKey implements objcache.Stores.
func (s *Stores) ListKey(gr schema.GroupResource, namespace string) string {
	if s.namespaced[gr] && namespace != "" {
		return "/" + gr.Resource + "/" + namespace + "/"
	}
	return "/" + gr.Resource + "/"
}
