package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
)

var (
	servicesGVR  = corev1.SchemeGroupVersion.WithResource("services")
	endpointsGVR = corev1.SchemeGroupVersion.WithResource("endpoints")
)

// serviceAllocation is the services store with its allocators.
type serviceAllocation struct {
	store  *ipallocator.ServiceStorage
	prefix string
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
	cidr, err := ipallocator.ParseCIDR(cidrFlag)
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
	wrapped := ipallocator.NewServiceStorage(inner, ipallocator.NewIPs(records, cidr), ipallocator.NewPorts(records, ports), s.log)
	stores[servicesGVR] = wrapped
	if e, ok := s.stores[servicesGVR.GroupResource()]; ok {
		e.store = wrapped
		s.stores[servicesGVR.GroupResource()] = e
	}
	s.services = &serviceAllocation{store: wrapped, prefix: prefixes[servicesGVR]}
	return nil
}

// ensureKubernetesService brings the allocation records in line with the
// configured ranges, then makes sure the `kubernetes` Service exists in
// `default` and its Endpoints list this server (kube-apiserver's
// bootstrap controller), retrying until ctx ends.
func (s *Server) ensureKubernetesService(ctx context.Context, addr net.Addr) error {
	if s.services == nil {
		return nil
	}
	port := 0
	var bind net.IP
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port, bind = tcp.Port, tcp.IP
	}
	if s.cfg.AdvertiseAddress != nil {
		bind = s.cfg.AdvertiseAddress
	}
	for attempt := 0; ; attempt++ {
		err := s.reconcileKubernetesService(ctx, port, bind)
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

func (s *Server) reconcileKubernetesService(ctx context.Context, port int, bind net.IP) error {
	if err := s.services.store.Sync(ctx, s.services.prefix); err != nil {
		return err
	}
	svcH := s.handlers[servicesGVR]
	if _, err := svcH.GetObject(ctx, metav1.NamespaceDefault, ipallocator.KubernetesServiceName); apierrors.IsNotFound(err) {
		info := &request.Info{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "services", Namespace: metav1.NamespaceDefault}
		want := ipallocator.KubernetesService(s.services.store.IPs().FirstIP(), port)
		if _, err := svcH.CreateObject(ctx, info, want, false); err != nil && !apierrors.IsAlreadyExists(err) {
			// Another API server sharing etcd may have created it
			// (and taken the address) first.
			if _, gerr := svcH.GetObject(ctx, metav1.NamespaceDefault, ipallocator.KubernetesServiceName); gerr != nil {
				return err
			}
		}
	} else if err != nil {
		return err
	}
	epH, ok := s.handlers[endpointsGVR]
	if !ok {
		return nil
	}
	self, ok := ipallocator.AdvertiseAddress(bind)
	if !ok {
		s.log.Debug("no address to advertise in the kubernetes endpoints (loopback only)")
		return nil
	}
	cur, err := epH.GetObject(ctx, metav1.NamespaceDefault, ipallocator.KubernetesServiceName)
	if apierrors.IsNotFound(err) {
		info := &request.Info{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "endpoints", Namespace: metav1.NamespaceDefault}
		_, err = epH.CreateObject(ctx, info, ipallocator.KubernetesEndpoints([]netip.Addr{self}, port), false)
		if err == nil || !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if err != nil {
		return err
	}
	if ep, ok := cur.(*corev1.Endpoints); ok && slices.Contains(ipallocator.EndpointsAddresses(ep, port), self) {
		return nil
	}
	// Add this server to the addresses already listed (several API
	// servers may share etcd and port).
	key := s.ObjectKey(endpointsGVR.GroupResource(), metav1.NamespaceDefault, ipallocator.KubernetesServiceName)
	return s.stores[endpointsGVR.GroupResource()].store.GuaranteedUpdate(ctx, key, &corev1.Endpoints{}, false, nil, func(in runtime.Object) (runtime.Object, error) {
		ep, ok := in.(*corev1.Endpoints)
		if !ok {
			return nil, fmt.Errorf("kubernetes endpoints: got %T", in)
		}
		addrs := append(ipallocator.EndpointsAddresses(ep, port), self)
		out := ep.DeepCopy()
		out.Subsets = ipallocator.KubernetesEndpoints(addrs, port).Subsets
		return out, nil
	})
}
