package ipallocator

import (
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/ipfamily"
)

// KubernetesServiceName is the Service in `default` that fronts the API
// server.
const KubernetesServiceName = "kubernetes"

// KubernetesService is the `kubernetes` Service as kube-apiserver creates
// it: single-stack, the primary range's first address, port 443 ("https")
// to the API server's port.
func KubernetesService(clusterIP netip.Addr, apiPort int) *corev1.Service {
	single := corev1.IPFamilyPolicySingleStack
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: KubernetesServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"},
		},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: clusterIP.String(), ClusterIPs: []string{clusterIP.String()},
			Ports: []corev1.ServicePort{{
				Name: "https", Protocol: corev1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(int32(apiPort)),
			}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			IPFamilies:            []corev1.IPFamily{ipfamily.OfAddr(clusterIP)},
			IPFamilyPolicy:        &single,
			InternalTrafficPolicy: &cluster,
		},
	}
}

// KubernetesEndpoints is the `kubernetes` Endpoints listing the API
// servers' addresses (sorted) on their port.
func KubernetesEndpoints(addrs []netip.Addr, apiPort int) *corev1.Endpoints {
	addrs = slices.Clone(addrs)
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{
			Name: KubernetesServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"},
		},
	}
	if len(addrs) == 0 {
		return ep
	}
	ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: int32(apiPort), Protocol: corev1.ProtocolTCP}}}
	for _, a := range addrs {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: a.String()})
	}
	ep.Subsets = []corev1.EndpointSubset{ss}
	return ep
}

// EndpointsAddresses are the addresses of ep's subsets that serve apiPort.
func EndpointsAddresses(ep *corev1.Endpoints, apiPort int) []netip.Addr {
	var out []netip.Addr
	for _, ss := range ep.Subsets {
		if !slices.ContainsFunc(ss.Ports, func(p corev1.EndpointPort) bool { return int(p.Port) == apiPort }) {
			continue
		}
		for _, a := range ss.Addresses {
			if ip, err := netip.ParseAddr(a.IP); err == nil {
				out = append(out, ip)
			}
		}
	}
	return out
}

// AdvertiseAddress picks the address other members of the cluster reach
// the API server at, as kube-apiserver's default --advertise-address: the
// bind address when it is a usable unicast address, else the first
// global unicast IPv4 address of the host's interfaces. ok is false when
// there is none (a host with loopback only).
func AdvertiseAddress(bind net.IP) (netip.Addr, bool) {
	if a, ok := netip.AddrFromSlice(bind); ok && usable(a.Unmap()) {
		return a.Unmap(), true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && usable(ip.Unmap()) {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// usable: what Endpoints validation accepts as an address.
func usable(a netip.Addr) bool {
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsLoopback() && !a.IsLinkLocalUnicast()
}
