package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// storeQuotas is QuotaStore on the API server's stores.
type storeQuotas struct {
	quotas objectStore
	cache  *objectCache
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
