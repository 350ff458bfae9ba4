package apiserver

import (
	"net"
	"testing"

	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
)

// TestAdvertiseCandidate: as kube-apiserver, which defaults an unset or
// unspecified --advertise-address (0.0.0.0, ::) from its bind address, a
// specific non-loopback bind address is advertised when the advertise
// address is unset or unspecified; a specific advertise address wins.
func TestAdvertiseCandidate(t *testing.T) {
	for _, tc := range []struct {
		bound, advertise string
		want             string
	}{
		{"10.1.2.3", "", "10.1.2.3"},
		{"10.1.2.3", "::", "10.1.2.3"},
		{"10.1.2.3", "0.0.0.0", "10.1.2.3"},
		{"fd00::5", "::", "fd00::5"},
		{"10.1.2.3", "192.168.7.8", "192.168.7.8"},
		{"0.0.0.0", "192.168.7.8", "192.168.7.8"},
	} {
		bound, advertise := net.ParseIP(tc.bound), net.ParseIP(tc.advertise)
		got, ok := ipallocator.AdvertiseAddress(advertiseCandidate(bound, advertise))
		if !ok || got.String() != tc.want {
			t.Errorf("bind %s, --advertise-address %q: advertised %v (%v), want %s", tc.bound, tc.advertise, got, ok, tc.want)
		}
	}
}
