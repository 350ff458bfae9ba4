package endpoints

import (
	"strings"
	"testing"
)

// A node create takes a non-canonical IPv6 podCIDR with a Warning header
// and refuses one with host bits set, as upstream 1.37 (legacy CIDR
// fields, StrictIPCIDRValidation on).
func TestNodePodCIDRsThroughTheAPI(t *testing.T) {
	h, _ := servedHandler(t, "nodes")
	const path = "/api/v1/nodes"
	r := do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"spec":{"podCIDRs":["FD00:10:244:1::/64"]}}`)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if want := `spec.podCIDRs[0]: IPv6 CIDR value \"FD00:10:244:1::/64\" should be in RFC 5952 canonical format (\"fd00:10:244:1::/64\")`; !strings.Contains(r.warning, want) {
		t.Errorf("Warning header %q, want it to hold %q", r.warning, want)
	}
	r = do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"b"},"spec":{"podCIDRs":["10.244.1.5/24"]}}`)
	if r.code != 422 {
		t.Fatalf("create with a host-bits podCIDR: %d %s", r.code, r.body)
	}
	if msg := r.status(t).Message; !strings.Contains(msg, `spec.podCIDRs[0]: Invalid value: "10.244.1.5/24": must not have bits set beyond the prefix length`) {
		t.Errorf("message %q", msg)
	}
}
