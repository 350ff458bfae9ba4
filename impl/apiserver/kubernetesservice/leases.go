package kubernetesservice

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
)

const (
	// LeasePrefix is where the API servers' leases live in etcd (under
	// the storage prefix), one key per address, as kube-apiserver's.
	LeasePrefix = "/masterleases"
	// DefaultLeaseTTL is how long a lease outlives its last renewal
	// (kube-apiserver's --endpoint-reconciler lease time, 15 s).
	DefaultLeaseTTL = 15 * time.Second
	// DefaultInterval is how often each API server renews its lease and
	// reconciles the Endpoints (kube-apiserver's fixed 10 s).
	DefaultInterval = 10 * time.Second
)

// LeaseStorage is the storage.ResourceConfig of the leases store: an
// Endpoints object per address (as kube-apiserver stores them), written
// with an etcd lease of ttl.
func LeaseStorage(ttl time.Duration) storage.ResourceConfig {
	return storage.ResourceConfig{
		GroupResource:  schema.GroupResource{Resource: "masterleases"},
		StorageVersion: corev1.SchemeGroupVersion,
		ResourcePrefix: LeasePrefix,
		NewFunc:        func() runtime.Object { return &corev1.Endpoints{} },
		NewListFunc:    func() runtime.Object { return &corev1.EndpointsList{} },
		TTL:            ttl,
	}
}

// Leases are the API servers' leases, in a store built from LeaseStorage.
type Leases struct {
	Store storage.Interface
}

func leaseKey(ip string) string { return LeasePrefix + "/" + ip }

// Renew writes ip's lease, creating it if needed; the write starts its
// time to live again.
func (l Leases) Renew(ctx context.Context, ip string) error {
	err := l.Store.GuaranteedUpdate(ctx, leaseKey(ip), &corev1.Endpoints{}, true, nil, func(in runtime.Object) (runtime.Object, error) {
		cur, ok := in.(*corev1.Endpoints)
		if !ok {
			return nil, fmt.Errorf("lease of %s: got %T", ip, in)
		}
		out := cur.DeepCopy()
		out.Name = ip
		out.Subsets = []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}}}}
		// An unchanged object is not written (and its lease not
		// renewed): every renewal changes the generation.
		out.Generation++
		return out, nil
	})
	if err != nil {
		return fmt.Errorf("renewing the API server lease of %s: %w", ip, err)
	}
	return nil
}

// List returns the addresses of the live leases.
func (l Leases) List(ctx context.Context) ([]string, error) {
	var list corev1.EndpointsList
	if err := l.Store.GetList(ctx, LeasePrefix+"/", storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, &list); err != nil {
		return nil, fmt.Errorf("listing the API server leases: %w", err)
	}
	out := make([]string, 0, len(list.Items))
	for _, ep := range list.Items {
		if len(ep.Subsets) > 0 && len(ep.Subsets[0].Addresses) > 0 && ep.Subsets[0].Addresses[0].IP != "" {
			out = append(out, ep.Subsets[0].Addresses[0].IP)
		}
	}
	return out, nil
}

// Remove deletes ip's lease; found is false when there was none.
func (l Leases) Remove(ctx context.Context, ip string) (found bool, err error) {
	err = l.Store.Delete(ctx, leaseKey(ip), &corev1.Endpoints{}, nil, nil)
	if storage.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing the API server lease of %s: %w", ip, err)
	}
	return true, nil
}
