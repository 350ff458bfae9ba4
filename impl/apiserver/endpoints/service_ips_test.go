package endpoints

import (
	"strings"
	"testing"
)

// A service create takes a non-canonical IPv6 externalIP with a Warning
// header and refuses a loadBalancerSourceRanges CIDR with host bits set,
// as upstream 1.37 (legacy IP/CIDR fields, StrictIPCIDRValidation on;
// GetWarningsForService). The handler here has no allocator in front of
// the services store, so clusterIP is left unset.
func TestServiceIPsThroughTheAPI(t *testing.T) {
	h, _ := servedHandler(t, "services")
	const path = "/api/v1/namespaces/ns/services"
	r := do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"},"spec":{"ports":[{"port":80}],"externalIPs":["2001:DB8::1"]}}`)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if want := `spec.externalIPs[0]: IPv6 address \"2001:DB8::1\" should be in RFC 5952 canonical format (\"2001:db8::1\")`; !strings.Contains(r.warning, want) {
		t.Errorf("Warning header %q, want it to hold %q", r.warning, want)
	}
	r = do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"b"},"spec":{"type":"LoadBalancer","ports":[{"port":80}],"loadBalancerSourceRanges":["192.168.1.5/24"]}}`)
	if r.code != 422 {
		t.Fatalf("create with a host-bits source range: %d %s", r.code, r.body)
	}
	if msg := r.status(t).Message; !strings.Contains(msg, `spec.LoadBalancerSourceRanges[0]: Invalid value: "192.168.1.5/24": must not have bits set beyond the prefix length`) {
		t.Errorf("message %q", msg)
	}
}
