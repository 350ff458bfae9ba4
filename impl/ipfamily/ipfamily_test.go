package ipfamily

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestOf(t *testing.T) {
	for ip, want := range map[string]corev1.IPFamily{
		"10.0.0.1":         corev1.IPv4Protocol,
		"fd00::1":          corev1.IPv6Protocol,
		"::ffff:10.0.0.1":  corev1.IPv4Protocol,
		"fe80::1%eth0":     corev1.IPv6Protocol,
		"None":             "",
		"":                 "",
		"10.0.0.1/24":      "",
		"example.com":      "",
		"2001:db8::ffff:1": corev1.IPv6Protocol,
	} {
		if got := Of(ip); got != want {
			t.Errorf("Of(%q) = %q, want %q", ip, got, want)
		}
	}
	if got := OfAddr(netip.Addr{}); got != "" {
		t.Errorf("OfAddr of the zero Addr = %q", got)
	}
	if Other(corev1.IPv4Protocol) != corev1.IPv6Protocol || Other(corev1.IPv6Protocol) != corev1.IPv4Protocol {
		t.Error("Other")
	}
}

func TestParse(t *testing.T) {
	for ip, ok := range map[string]bool{
		"10.0.0.1":        true,
		"fd00::1":         true,
		"::ffff:10.0.0.1": true,
		"fe80::1%eth0":    false, // k8s.io/utils/net takes no zone
		"":                false,
		"10.0.0.1/24":     false,
		"example.com":     false,
	} {
		a, err := Parse(ip)
		if (err == nil) != ok || (ok && a.String() != netip.MustParseAddr(ip).String()) {
			t.Errorf("Parse(%q) = %v, %v; want ok %v", ip, a, err, ok)
		}
	}
}
