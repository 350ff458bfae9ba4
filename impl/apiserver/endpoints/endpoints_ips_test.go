package endpoints

import (
	"strings"
	"testing"
)

// An Endpoints create takes a non-canonical IPv6 address with a Warning
// header and refuses one with leading zeros, as upstream 1.37 (legacy IP
// fields, StrictIPCIDRValidation on; endpointsWarnings).
func TestEndpointsIPsThroughTheAPI(t *testing.T) {
	h, _ := servedHandler(t, "endpoints")
	const path = "/api/v1/namespaces/ns/endpoints"
	r := do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"a"},"subsets":[{"addresses":[{"ip":"fd00:0:0:0::2"}],"ports":[{"port":80}]}]}`)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	// the kind's deprecation first, as kube-apiserver adds it before the
	// handler runs.
	if want := `subsets[0].addresses[0].ip: IPv6 address \"fd00:0:0:0::2\" should be in RFC 5952 canonical format (\"fd00::2\")`; len(r.warnings) != 2 || r.warnings[0] != endpointsWarning || !strings.Contains(r.warnings[1], want) {
		t.Errorf("Warning headers %q, want %q and one holding %q", r.warnings, endpointsWarning, want)
	}
	r = do(h, "POST", path, "application/json",
		`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"b"},"subsets":[{"addresses":[{"ip":"10.0.0.02"}],"ports":[{"port":80}]}]}`)
	if r.code != 422 {
		t.Fatalf("create with a leading-zero address: %d %s", r.code, r.body)
	}
	if msg := r.status(t).Message; !strings.Contains(msg, `subsets[0].addresses[0].ip: Invalid value: "10.0.0.02": must not have leading 0s`) {
		t.Errorf("message %q", msg)
	}
}
