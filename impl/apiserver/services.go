package apiserver

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
)

var (
	servicesGVR  = corev1.SchemeGroupVersion.WithResource("services")
	endpointsGVR = corev1.SchemeGroupVersion.WithResource("endpoints")
)

// The services handler has the allocating store fill a service's IP
// families and take its ClusterIPs and NodePorts before validating it
// (given back unless written), and show a dry run's allocations.
var (
	_ endpoints.FieldInitializer = (*ipallocator.ServiceStorage)(nil)
	_ endpoints.DryRunner        = (*ipallocator.ServiceStorage)(nil)
)

// serviceAllocation is the services store with its allocators.
type serviceAllocation struct {
	store  *ipallocator.ServiceStorage
	prefix string
	// port is the one this server serves on (the `kubernetes` Service's
	// targetPort), known once Run listens.
	port int
}

// wrapServices puts ClusterIP and NodePort allocation in front of the
// services store, with the allocation records in their own store
// ("/ranges/..."), when services are served.
func (s *Server) wrapServices(stores map[schema.GroupVersionResource]storage.Interface, prefixes map[schema.GroupVersionResource]string) error {
	inner, ok := stores[servicesGVR]
	if !ok {
		return nil
	}
	cidrFlag, portsFlag := s.cfg.ServiceClusterIPRange, s.cfg.ServiceNodePortRange
	if cidrFlag == "" {
		cidrFlag = ipallocator.DefaultServiceClusterIPRange
	}
	if portsFlag == "" {
		portsFlag = ipallocator.DefaultServiceNodePortRange
	}
	cidrs, err := ipallocator.ParseCIDRs(cidrFlag)
	if err != nil {
		return fmt.Errorf("apiserver: --service-cluster-ip-range: %w", err)
	}
	ports, err := ipallocator.ParsePortRange(portsFlag)
	if err != nil {
		return fmt.Errorf("apiserver: --service-node-port-range: %w", err)
	}
	records, destroy, err := s.cfg.StorageFactory.New(storage.ResourceConfig{
		GroupResource: schema.GroupResource{Resource: "rangeallocations"}, StorageVersion: corev1.SchemeGroupVersion,
		ResourcePrefix: "/ranges",
		NewFunc:        func() runtime.Object { return &corev1.RangeAllocation{} },
		NewListFunc:    func() runtime.Object { return &ipallocator.RecordList{} },
	})
	if err != nil {
		return fmt.Errorf("apiserver: building the service allocation store: %w", err)
	}
	s.destroy = append(s.destroy, destroy)
	wrapped := ipallocator.NewServiceStorage(inner, ipallocator.NewServiceIPs(records, cidrs), ipallocator.NewPorts(records, ports), s.log)
	stores[servicesGVR] = wrapped
	if e, ok := s.stores[servicesGVR.GroupResource()]; ok {
		e.store = wrapped
		s.stores[servicesGVR.GroupResource()] = e
	}
	s.services = &serviceAllocation{store: wrapped, prefix: prefixes[servicesGVR]}
	return nil
}

// ensureKubernetesService brings the allocation records in line with the
// configured ranges, makes sure the `kubernetes` Service exists in
// `default` (kube-apiserver's bootstrap controller), and readies the
// endpoint reconciler (kubernetesendpoints.go) with the port and address
// this server is reached at, retrying until ctx ends.
func (s *Server) ensureKubernetesService(ctx context.Context, addr net.Addr) error {
	if s.services == nil {
		return nil
	}
	port := 0
	var bind net.IP
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port, bind = tcp.Port, tcp.IP
	}
	bind = advertiseCandidate(bind, s.cfg.AdvertiseAddress)
	s.services.port = port
	for attempt := 0; ; attempt++ {
		err := s.services.store.Sync(ctx, s.services.prefix)
		if err == nil {
			err = s.ensureKubernetesServiceObject(ctx)
		}
		if err == nil {
			err = s.prepareEndpointReconciler(ctx, bind)
		}
		if err == nil {
			return nil
		}
		s.log.Debug("creating the kubernetes service", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver: creating the kubernetes service: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// advertiseCandidate is the address the advertised one is chosen from
// (ipallocator.AdvertiseAddress): --advertise-address when it is a real
// address, else the address the server listens on. As kube-apiserver
// defaults an unset or unspecified (0.0.0.0, ::) --advertise-address
// from its bind address, such an advertise address does not replace a
// specific bind address; only when both are unspecified (or the bind
// address is loopback) is the host's own address advertised.
func advertiseCandidate(bound, advertise net.IP) net.IP {
	if advertise != nil && !advertise.IsUnspecified() {
		return advertise
	}
	return bound
}

// ensureKubernetesServiceObject creates the `kubernetes` Service when it
// does not exist (at start, and when deleted, as kube-apiserver's
// kubernetesservice controller does). An existing one is left as it is:
// kube-apiserver does not repair its ports or type either.
func (s *Server) ensureKubernetesServiceObject(ctx context.Context) error {
	svcH := s.handlers[servicesGVR]
	if _, err := svcH.GetCachedObject(ctx, metav1.NamespaceDefault, ipallocator.KubernetesServiceName); !apierrors.IsNotFound(err) {
		return err
	}
	// The cache may lag: confirm with etcd before creating.
	if _, err := svcH.GetObject(ctx, metav1.NamespaceDefault, ipallocator.KubernetesServiceName); !apierrors.IsNotFound(err) {
		return err
	}
	// Created through the loopback client, as kube-apiserver's
	// kubernetesservice controller creates it.
	want := ipallocator.KubernetesService(s.services.store.IPs().FirstIP(), s.services.port)
	if _, err := s.self.typed.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		// Another API server sharing etcd may have created it
		// (and taken the address) first.
		if _, gerr := svcH.GetObject(ctx, metav1.NamespaceDefault, ipallocator.KubernetesServiceName); gerr != nil {
			return err
		}
	}
	return nil
}
