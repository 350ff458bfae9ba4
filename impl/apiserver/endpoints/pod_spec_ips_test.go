package endpoints

import (
	"strings"
	"testing"
)

// A pod create takes a non-canonical IPv6 hostAliases IP with a Warning
// header and refuses a nameserver with leading zeros, as upstream 1.37
// (legacy IP fields, StrictIPCIDRValidation on; KEP-4858's API warnings).
func TestPodSpecIPsThroughTheAPI(t *testing.T) {
	h, _ := servedHandler(t, "pods")
	const path = "/api/v1/namespaces/ns/pods"
	r := do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"nginx"}],"hostAliases":[{"ip":"fd00:0:0:0::2","hostnames":["x"]}]}}`)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if want := `spec.hostAliases[0].ip: IPv6 address \"fd00:0:0:0::2\" should be in RFC 5952 canonical format (\"fd00::2\")`; !strings.Contains(r.warning, want) {
		t.Errorf("Warning header %q, want it to hold %q", r.warning, want)
	}
	r = do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"nginx"}],"dnsConfig":{"nameservers":["010.0.0.10"]}}}`)
	if r.code != 422 {
		t.Fatalf("create with a leading-zero nameserver: %d %s", r.code, r.body)
	}
	if msg := r.status(t).Message; !strings.Contains(msg, `spec.dnsConfig.nameservers[0]: Invalid value: "010.0.0.10": must not have leading 0s`) {
		t.Errorf("message %q", msg)
	}
}
