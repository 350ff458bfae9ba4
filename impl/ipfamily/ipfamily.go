// Package ipfamily parses an address with Kubernetes' syntax and names
// its IP family (core/v1 IPv4 or IPv6), as the API server's service validation and ClusterIP
// allocation and the endpoints and EndpointSlice controllers read it: an
// IPv4-mapped IPv6 address (::ffff:10.0.0.1) is IPv4, as Kubernetes'
// k8s.io/utils/net reads it. It is its own package so that the registry
// and the controllers share it without one importing the other.
package ipfamily

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// Parse parses an address as Kubernetes' parser (k8s.io/utils/net) does:
// netip's syntax without the zone it allows ("fe80::1%eth0").
func Parse(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err == nil && a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q has a zone", s)
	}
	return a, err
}

// Of is the family of the address ip; "" when ip is no address (empty,
// "None", a hostname).
func Of(ip string) corev1.IPFamily {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	return OfAddr(a)
}

// OfAddr is the family of a ("" for the zero Addr).
func OfAddr(a netip.Addr) corev1.IPFamily {
	switch {
	case !a.IsValid():
		return ""
	case a.Is4() || a.Is4In6():
		return corev1.IPv4Protocol
	default:
		return corev1.IPv6Protocol
	}
}

// Other is the family f is not (IPv4 for anything but IPv4).
func Other(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
