package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/kubernetesservice"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// The `kubernetes` Service's endpoints follow the API servers alive, as
// with kube-apiserver's --endpoint-reconciler-type=lease: each server
// keeps a lease on its address (package kubernetesservice decides what
// the Endpoints and EndpointSlice list; this file does the reads and
// writes), renews it every EndpointReconcileInterval, and on graceful
// shutdown removes it and its address.

// The --endpoint-reconciler-type values.
const (
	EndpointReconcilerLease = "lease"
	EndpointReconcilerNone  = "none"
)

var endpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")

// errNoLeases: no lease listed, which (but when the last server stops)
// is taken for a storage problem, not for every server gone.
var errNoLeases = errors.New("no API server address is listed in the leases; not erasing the kubernetes endpoints")

// endpointReconciler is this server's part in keeping the `kubernetes`
// Endpoints.
type endpointReconciler struct {
	leases kubernetesservice.Leases
	// self is the address this server advertises; "" (nothing to
	// advertise: a loopback-only host) leaves the leases and Endpoints
	// alone. ipv6 is the `kubernetes` Service's family.
	self string
	ipv6 bool
	// leaveOnShutdown makes Run stop as a killed server would, leaving
	// its lease to expire (tests).
	leaveOnShutdown bool
}

// checkEndpointReconcilerType accepts the --endpoint-reconciler-type
// values kubeproof implements.
func checkEndpointReconcilerType(t string) error {
	switch t {
	case "", EndpointReconcilerLease, EndpointReconcilerNone:
		return nil
	case "master-count":
		return errors.New(`apiserver: --endpoint-reconciler-type=master-count (deprecated in Kubernetes) is not supported; use "lease" or "none"`)
	default:
		return fmt.Errorf(`apiserver: --endpoint-reconciler-type=%q: must be "lease" or "none"`, t)
	}
}

// newEndpointReconciler builds the leases store when the lease reconciler
// runs: Endpoints served, and the `kubernetes` Service with them.
func (s *Server) newEndpointReconciler() error {
	if s.cfg.EndpointReconcilerType == EndpointReconcilerNone || s.services == nil {
		return nil
	}
	if _, ok := s.stores[endpointsGVR.GroupResource()]; !ok {
		return nil
	}
	store, destroy, err := s.cfg.StorageFactory.New(kubernetesservice.LeaseStorage(s.cfg.EndpointLeaseTTL))
	if err != nil {
		return fmt.Errorf("apiserver: building the API server leases store: %w", err)
	}
	s.destroy = append(s.destroy, destroy)
	s.endpoints = &endpointReconciler{leases: kubernetesservice.Leases{Store: store}}
	return nil
}

// prepareEndpointReconciler picks the address this server advertises at
// start and removes a lease of it left by a run that did not stop
// gracefully, with its address, until the server is ready (as
// kube-apiserver does before it serves).
func (s *Server) prepareEndpointReconciler(ctx context.Context, bind net.IP) error {
	r := s.endpoints
	if r == nil {
		return nil
	}
	self, ok := ipallocator.AdvertiseAddress(bind)
	if !ok {
		s.log.Debug("no address to advertise in the kubernetes endpoints (loopback only)")
		return nil
	}
	r.self, r.ipv6 = self.String(), s.services.store.IPs().FirstIP().Is6()
	found, err := r.leases.Remove(ctx, r.self)
	if err != nil || !found {
		return err
	}
	s.log.Info("removed this API server's lease left by a run that did not stop gracefully", "address", r.self)
	// With no other server alive nothing is erased: the address stays
	// until this server lists itself again.
	if err := s.reconcileAPIEndpoints(ctx, false, false); err != nil && !errors.Is(err, errNoLeases) {
		s.log.Warn("removing a stale address from the kubernetes endpoints", "err", err)
	}
	return nil
}

// firstEndpointReconcile lists this server in the `kubernetes`
// Endpoints before it serves, trying for about a second; the loop keeps
// trying after that.
func (s *Server) firstEndpointReconcile(ctx context.Context) {
	if s.endpoints == nil || s.endpoints.self == "" {
		return
	}
	var err error
	for range 5 {
		if err = s.reconcileAPIEndpoints(ctx, true, false); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.log.Warn("listing this API server in the kubernetes endpoints; will retry", "err", err)
}

// runKubernetesServiceLoop, every EndpointReconcileInterval until ctx
// ends, recreates the `kubernetes` Service if it was deleted and renews
// this server's lease and the Endpoints, as kube-apiserver's
// kubernetesservice controller.
func (s *Server) runKubernetesServiceLoop(ctx context.Context) {
	if s.services == nil {
		return
	}
	t := time.NewTicker(s.cfg.EndpointReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.ensureKubernetesServiceObject(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("recreating the kubernetes service", "err", err)
		}
		if s.endpoints == nil || s.endpoints.self == "" {
			continue
		}
		if err := s.reconcileAPIEndpoints(ctx, true, false); err != nil && ctx.Err() == nil {
			s.log.Warn("reconciling the kubernetes endpoints", "err", err)
		}
	}
}

// removeAPIEndpoints takes this server out of the `kubernetes` Endpoints
// on graceful shutdown: its lease, then its address, within ctx (the
// shutdown's: ShutdownTimeout, 10 s, where kube-apiserver waits up to
// two reconcile intervals). The last server leaves the Endpoints empty.
func (s *Server) removeAPIEndpoints(ctx context.Context) {
	r := s.endpoints
	if r == nil || r.self == "" || r.leaveOnShutdown {
		return
	}
	if _, err := r.leases.Remove(ctx, r.self); err != nil {
		s.log.Warn("removing this API server from the kubernetes endpoints", "err", err)
		return
	}
	if err := s.reconcileAPIEndpoints(ctx, false, true); err != nil {
		s.log.Warn("removing this API server from the kubernetes endpoints", "err", err)
	}
}

// reconcileAPIEndpoints renews this server's lease (renew), lists the
// live leases and makes the `kubernetes` Endpoints, and the EndpointSlice
// when served, list them. Unless stopping (the server removing itself),
// no lease at all is taken for a storage problem and nothing is erased.
// Ports are reset when not renewing, as kube-apiserver's removal does.
func (s *Server) reconcileAPIEndpoints(ctx context.Context, renew, stopping bool) error {
	r := s.endpoints
	if renew {
		if err := r.leases.Renew(ctx, r.self); err != nil {
			return err
		}
	}
	leases, err := r.leases.List(ctx)
	if err != nil {
		return err
	}
	addrs := kubernetesservice.Addresses(leases, r.ipv6)
	if len(addrs) == 0 && !stopping {
		return errNoLeases
	}
	ports := kubernetesservice.EndpointPorts(int32(s.services.port))
	if err := s.writeKubernetesEndpoints(ctx, addrs, ports, !renew); err != nil {
		return err
	}
	return s.writeKubernetesEndpointSlice(ctx, addrs, ports, !renew)
}

// writeKubernetesEndpoints makes the `kubernetes` Endpoints what
// kubernetesservice.Endpoints decides, deciding again on the object as
// stored when another server's write comes first.
func (s *Server) writeKubernetesEndpoints(ctx context.Context, addrs []string, ports []corev1.EndpointPort, resetPorts bool) error {
	gr := endpointsGVR.GroupResource()
	store := s.stores[gr].store
	key := s.ObjectKey(gr, metav1.NamespaceDefault, kubernetesservice.Name)
	var err error
	for range 3 {
		err = store.GuaranteedUpdate(ctx, key, &corev1.Endpoints{}, false, nil, func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*corev1.Endpoints)
			if !ok {
				return nil, fmt.Errorf("kubernetes endpoints: got %T", in)
			}
			if want := kubernetesservice.Endpoints(cur, addrs, ports, resetPorts); want != nil {
				return want, nil
			}
			return in, nil // unchanged: not written
		})
		if !storage.IsNotFound(err) {
			break
		}
		info := &request.Info{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "endpoints", Namespace: metav1.NamespaceDefault}
		_, err = s.handlers[endpointsGVR].CreateObject(ctx, info, kubernetesservice.Endpoints(nil, addrs, ports, resetPorts), false)
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing the kubernetes endpoints: %w", err)
	}
	return nil
}

// writeKubernetesEndpointSlice does for the `kubernetes` EndpointSlice
// what writeKubernetesEndpoints does for the Endpoints, when
// discovery.k8s.io/v1 endpointslices are served. One of the wrong address
// type (immutable) is deleted and created again; other slices labelled
// for the `kubernetes` Service are deleted (kubernetesservice.StraySlices).
func (s *Server) writeKubernetesEndpointSlice(ctx context.Context, addrs []string, ports []corev1.EndpointPort, resetPorts bool) error {
	gr := endpointSlicesGVR.GroupResource()
	h, served := s.handlers[endpointSlicesGVR]
	e, stored := s.stores[gr]
	if !served || !stored {
		return nil
	}
	if err := s.deleteStraySlices(ctx, e.store); err != nil {
		return err
	}
	addressType := kubernetesservice.AddressType(s.endpoints.ipv6)
	key := s.ObjectKey(gr, metav1.NamespaceDefault, kubernetesservice.Name)
	var err error
	for range 3 {
		recreate := false
		err = e.store.GuaranteedUpdate(ctx, key, &discoveryv1.EndpointSlice{}, false, nil, func(in runtime.Object) (runtime.Object, error) {
			cur, ok := in.(*discoveryv1.EndpointSlice)
			if !ok {
				return nil, fmt.Errorf("kubernetes endpointslice: got %T", in)
			}
			c := kubernetesservice.EndpointSlice(cur, addrs, ports, addressType, resetPorts)
			switch {
			case c.Recreate:
				recreate = true
				return nil, errors.New("kubernetes endpointslice: address type changes")
			case c.Write != nil:
				// Written to the store directly: what the update
				// strategy would do, a new generation.
				c.Write.Generation = cur.Generation + 1
				return c.Write, nil
			}
			return in, nil // unchanged: not written
		})
		if recreate {
			if err = e.store.Delete(ctx, key, &discoveryv1.EndpointSlice{}, nil, nil); err != nil && !storage.IsNotFound(err) {
				break
			}
		} else if !storage.IsNotFound(err) {
			break
		}
		info := &request.Info{IsResourceRequest: true, Verb: "create", APIPrefix: "apis", APIGroup: discoveryv1.GroupName,
			APIVersion: "v1", Resource: "endpointslices", Namespace: metav1.NamespaceDefault}
		_, err = h.CreateObject(ctx, info, kubernetesservice.EndpointSlice(nil, addrs, ports, addressType, resetPorts).Write, false)
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing the kubernetes endpointslice: %w", err)
	}
	return nil
}

// deleteStraySlices deletes the EndpointSlices labelled for the
// `kubernetes` Service but its own.
func (s *Server) deleteStraySlices(ctx context.Context, store storage.Interface) error {
	gr := endpointSlicesGVR.GroupResource()
	var list discoveryv1.EndpointSliceList
	pred := storage.Everything()
	pred.Label = labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: kubernetesservice.Name})
	opts := storage.ListOptions{ResourceVersion: "0", Predicate: pred, Recursive: true}
	if err := store.GetList(ctx, s.ListKey(gr, metav1.NamespaceDefault), opts, &list); err != nil {
		return fmt.Errorf("listing the kubernetes endpointslices: %w", err)
	}
	for _, name := range kubernetesservice.StraySlices(list.Items) {
		err := store.Delete(ctx, s.ObjectKey(gr, metav1.NamespaceDefault, name), &discoveryv1.EndpointSlice{}, nil, nil)
		if err != nil && !storage.IsNotFound(err) {
			return fmt.Errorf("deleting endpointslice default/%s, labelled for the kubernetes service: %w", name, err)
		}
	}
	return nil
}
