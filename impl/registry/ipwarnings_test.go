package registry

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// TestIPWarningsAsUpstream: ipWarnings says what GetWarningsForIP says
// for every IP that parses, nothing for one that does not, and makes no
// allocation for an IP in its standard form.
func TestIPWarningsAsUpstream(t *testing.T) {
	path := func() *field.Path { return field.NewPath("status", "podIPs").Index(0).Child("ip") }
	for _, ip := range []string{
		"10.0.0.1", "010.0.0.1", "10.000.0.1", "0.0.0.0", "255.255.255.255",
		"::ffff:10.0.0.1", "::FFFF:10.0.0.1", "2001:db8::1", "2001:DB8::1", "2001:db8:0:0:0:0:0:1",
		"2001:0db8::1", "::", "::1", "fe80::1%eth0", "1::2:3:4:5:6:7", "",
		"not-an-ip", "10.0.0", "2001:db8::/64",
	} {
		var want []string
		if netutils.ParseIPSloppy(ip) != nil {
			want = validation.GetWarningsForIP(path(), ip)
		}
		if got := ipWarnings(path, ip); !slices.Equal(got, want) {
			t.Errorf("ipWarnings(%q) = %q, want %q", ip, got, want)
		}
	}
	for _, ip := range []string{"10.0.0.1", "2001:db8::1", "fd00:10:244::5"} {
		if n := testing.AllocsPerRun(50, func() { _ = ipWarnings(path, ip) }); n != 0 {
			t.Errorf("ipWarnings(%q): %v allocations, want 0", ip, n)
		}
	}
}

// TestPodStatusIPWarningsAllocations: a status write's standard pod and
// host IPs cost no allocation in its warnings.
func TestPodStatusIPWarningsAllocations(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{
		PodIPs:  []corev1.PodIP{{IP: "10.244.1.7"}, {IP: "fd00:10:244:1::7"}},
		HostIPs: []corev1.HostIP{{IP: "192.168.0.4"}},
	}}
	if n := testing.AllocsPerRun(50, func() { _ = podStatusIPWarnings(p, p) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
	p.Status.PodIPs[0].IP = "010.244.1.7"
	if w := podStatusIPWarnings(p, p); len(w) != 1 || !strings.HasPrefix(w[0], "status.podIPs[0].ip: non-standard IP address") {
		t.Errorf("warnings %q", w)
	}
}
