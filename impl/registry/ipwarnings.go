package registry

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ipWarnings is upstream's GetWarningsForIP for an IP that parses
// (leniently: leading zeros allowed) and none for one that does not, with
// the path made only when there is a warning: status writes check every
// pod and host IP, and nearly all are in their standard form.
func ipWarnings(path func() *field.Path, value string) []string {
	if standardIP(value) || netutils.ParseIPSloppy(value) == nil {
		return nil
	}
	return validation.GetWarningsForIP(path(), value)
}

// standardIP: value is an IP GetWarningsForIP has no warning for — it
// parses strictly (no leading zeros), is not IPv4-mapped IPv6, and an IPv6
// one is in RFC 5952's canonical form — checked without allocating.
func standardIP(value string) bool {
	addr, err := netip.ParseAddr(value)
	if err != nil || addr.Is4In6() {
		return false
	}
	if addr.Is4() {
		return true
	}
	var buf [64]byte
	return string(addr.AppendTo(buf[:0])) == value
}
