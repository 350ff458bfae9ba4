package admission

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// storeQuotas is QuotaStore on the API server's stores.
type storeQuotas struct {
	quotas objectStore
	cache  *objectCache
	stores StoreGetter
}

// List reads the cache: which quotas exist may lag a little (as
// kube-apiserver's informer), their usage never does, since Update
// decides on the current object.
func (s *storeQuotas) List(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error) {
	objs, err := s.cache.list(ctx, namespace)
	return typed[corev1.ResourceQuota](objs), err
}

func (s *storeQuotas) Update(ctx context.Context, namespace, name string, tryUpdate func(*corev1.ResourceQuota) (*corev1.ResourceQuota, error)) error {
	return s.quotas.store.GuaranteedUpdate(ctx, s.quotas.key(namespace, name), &corev1.ResourceQuota{}, false, nil,
		func(in runtime.Object) (runtime.Object, error) {
			q, ok := in.(*corev1.ResourceQuota)
			if !ok {
				return nil, fmt.Errorf("quota store holds %T", in)
			}
			return tryUpdate(q)
		})
}

// Usage counts, with quorum reads, what the namespace's objects use of
// each resource q limits.
func (s *storeQuotas) Usage(ctx context.Context, namespace string, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	used := corev1.ResourceList{}
	for n := range q.Spec.Hard {
		used[n] = resource.MustParse("0")
	}
	add := func(l corev1.ResourceList) {
		for n, v := range l {
			if u, ok := used[n]; ok {
				u.Add(v)
				used[n] = u
			}
		}
	}
	// Every resource q counts, by the resource it is counted on.
	counted := map[schema.GroupResource]bool{}
	for n := range q.Spec.Hard {
		if gr, ok := quotaeval.CountedResource(n); ok {
			counted[gr] = true
		} else {
			counted[podResource] = true
		}
	}
	for gr := range counted {
		st, err := storeFor(s.stores, gr)
		if err != nil {
			continue // not served: nothing of it exists
		}
		newList := listOf(gr)
		if newList == nil {
			// A resource kubeproof does not count: existing objects are
			// not recounted, only new ones are charged.
			continue
		}
		l := newList()
		if err := st.store.GetList(ctx, st.listKey(namespace), storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, l); err != nil {
			return nil, fmt.Errorf("counting %s: %w", gr, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, obj := range items {
			if quotaeval.Covers(q, gr, obj) {
				add(usageOf(gr, obj))
			}
		}
	}
	return used, nil
}

// listOf gives an empty list of the resources a quota can count here.
func listOf(gr schema.GroupResource) func() runtime.Object {
	switch gr {
	case podResource:
		return func() runtime.Object { return &corev1.PodList{} }
	case corev1.Resource("configmaps"):
		return func() runtime.Object { return &corev1.ConfigMapList{} }
	case corev1.Resource("secrets"):
		return func() runtime.Object { return &corev1.SecretList{} }
	case corev1.Resource("services"):
		return func() runtime.Object { return &corev1.ServiceList{} }
	case quotaResource:
		return func() runtime.Object { return &corev1.ResourceQuotaList{} }
	case saResource:
		return func() runtime.Object { return &corev1.ServiceAccountList{} }
	case limitRangeResource:
		return func() runtime.Object { return &corev1.LimitRangeList{} }
	case corev1.Resource("events"):
		return func() runtime.Object { return &corev1.EventList{} }
	case corev1.Resource("replicationcontrollers"):
		return func() runtime.Object { return &corev1.ReplicationControllerList{} }
	case corev1.Resource("persistentvolumeclaims"):
		return func() runtime.Object { return &corev1.PersistentVolumeClaimList{} }
	case appsv1.Resource("deployments"):
		return func() runtime.Object { return &appsv1.DeploymentList{} }
	case appsv1.Resource("replicasets"):
		return func() runtime.Object { return &appsv1.ReplicaSetList{} }
	case appsv1.Resource("statefulsets"):
		return func() runtime.Object { return &appsv1.StatefulSetList{} }
	case appsv1.Resource("daemonsets"):
		return func() runtime.Object { return &appsv1.DaemonSetList{} }
	case coordinationv1.Resource("leases"):
		return func() runtime.Object { return &coordinationv1.LeaseList{} }
	case rbacv1.Resource("roles"):
		return func() runtime.Object { return &rbacv1.RoleList{} }
	case rbacv1.Resource("rolebindings"):
		return func() runtime.Object { return &rbacv1.RoleBindingList{} }
	}
	return nil
}
