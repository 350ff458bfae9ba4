package apiserver_test

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// The API server tells every v1 Endpoints client that the kind is
// deprecated (kubectl prints "Warning: v1 Endpoints is deprecated in
// v1.33+; use discovery.k8s.io/v1 EndpointSlice"), list and watch
// included, as kube-apiserver 1.33+ does; a server reporting an older
// version does not. EndpointSlices get no warning.
func TestEndpointsDeprecationWarning(t *testing.T) {
	const want = `299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"`
	e := newEnv(t, nil)
	for _, path := range []string{
		"/api/v1/namespaces/default/endpoints",
		"/api/v1/endpoints?watch=1&timeoutSeconds=1",
		"/api/v1/namespaces/default/endpoints/kubernetes",
	} {
		if r := e.do("GET", path, nil); r.header.Get("Warning") != want {
			t.Errorf("GET %s: %d, Warning %q, want %q", path, r.code, r.header.Get("Warning"), want)
		}
	}
	if r := e.do("GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", nil); r.header.Get("Warning") != "" {
		t.Errorf("endpointslices: Warning %q, want none", r.header.Get("Warning"))
	}

	old := newEnv(t, func(c *apiserver.Config) { c.GitVersion = "v1.32.4" })
	if r := old.do("GET", "/api/v1/namespaces/default/endpoints", nil); r.code != 200 || r.header.Get("Warning") != "" {
		t.Errorf("v1.32 server: %d, Warning %q, want 200 and none", r.code, r.header.Get("Warning"))
	}
}
