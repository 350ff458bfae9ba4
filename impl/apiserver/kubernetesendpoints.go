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
	"k8s.io/client-go/util/retry"

	"github.com/kubeproof/kubeproof/impl/apiserver/kubernetesservice"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
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
// kubernetesservice.Endpoints decides, through the loopback client as
// kube-apiserver's reconciler: a read, then a create or an update (none
// when nothing changes), read and decided again when another server's
// write comes first (a conflict, or AlreadyExists).
func (s *Server) writeKubernetesEndpoints(ctx context.Context, addrs []string, ports []corev1.EndpointPort, resetPorts bool) error {
	client := s.self.typed.CoreV1().Endpoints(metav1.NamespaceDefault)
	err := retry.OnError(retry.DefaultBackoff, lostToAnotherWrite, func() error {
		cur, err := client.Get(ctx, kubernetesservice.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = client.Create(ctx, kubernetesservice.Endpoints(nil, addrs, ports, resetPorts), metav1.CreateOptions{})
			return err
		case err != nil:
			return err
		}
		if want := kubernetesservice.Endpoints(cur, addrs, ports, resetPorts); want != nil {
			_, err = client.Update(ctx, want, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the kubernetes endpoints: %w", err)
	}
	return nil
}

// lostToAnotherWrite: another server wrote the object between this one's
// read and write; read and decide again.
func lostToAnotherWrite(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// writeKubernetesEndpointSlice does for the `kubernetes` EndpointSlice
// what writeKubernetesEndpoints does for the Endpoints, when
// discovery.k8s.io/v1 endpointslices are served: the slices labelled for
// the `kubernetes` Service are listed, those but its own deleted
// (kubernetesservice.StraySlices), and its own created, updated, or, of
// the wrong address type (immutable), deleted and created again.
func (s *Server) writeKubernetesEndpointSlice(ctx context.Context, addrs []string, ports []corev1.EndpointPort, resetPorts bool) error {
	if _, served := s.handlers[endpointSlicesGVR]; !served {
		return nil
	}
	if _, stored := s.stores[endpointSlicesGVR.GroupResource()]; !stored {
		return nil
	}
	client := s.self.typed.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	addressType := kubernetesservice.AddressType(s.endpoints.ipv6)
	err := retry.OnError(retry.DefaultBackoff, lostToAnotherWrite, func() error {
		list, err := client.List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: kubernetesservice.Name}).String()})
		if err != nil {
			return fmt.Errorf("listing the kubernetes endpointslices: %w", err)
		}
		var cur *discoveryv1.EndpointSlice
		for i := range list.Items {
			if list.Items[i].Name == kubernetesservice.Name {
				cur = &list.Items[i]
			}
		}
		for _, name := range kubernetesservice.StraySlices(list.Items) {
			if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting endpointslice default/%s, labelled for the kubernetes service: %w", name, err)
			}
		}
		c := kubernetesservice.EndpointSlice(cur, addrs, ports, addressType, resetPorts)
		switch {
		case c.Write == nil:
			return nil
		case cur == nil:
			_, err = client.Create(ctx, c.Write, metav1.CreateOptions{})
		case c.Recreate:
			if err = client.Delete(ctx, cur.Name, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
				_, err = client.Create(ctx, c.Write, metav1.CreateOptions{})
			}
		default:
			_, err = client.Update(ctx, c.Write, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the kubernetes endpointslice: %w", err)
	}
	return nil
}
