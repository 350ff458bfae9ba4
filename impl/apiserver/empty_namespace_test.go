package apiserver_test

import (
	"net/http"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestEmptyNamespaceSegment: a path under /namespaces/ whose namespace
// segment is empty (/api/v1/namespaces//pods/x) is still the namespaced
// route to kube-apiserver's router, and its request-info parser gives it
// the empty namespace; the handlers' scope namer reads a name without
// checking the namespace, and the registry's key function refuses the
// empty one: 400 "Namespace parameter required." for every method the
// object's or subresource's route serves. A cluster-scoped subresource
// under it (nodes/x/proxy) has no route: the router's 404.
func TestEmptyNamespaceSegment(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
	})
	const ns = "/api/v1/namespaces/"
	for _, c := range []struct {
		path    string
		methods []string
	}{
		{ns + "/pods/x", []string{"GET", "PUT", "PATCH", "DELETE"}},
		{ns + "/configmaps/x", []string{"GET", "PUT", "PATCH", "DELETE"}},
		{ns + "/pods/x/status", []string{"GET", "PUT", "PATCH"}},
		{ns + "/pods/x/log", []string{"GET"}},
		{ns + "/pods/x/exec", []string{"GET", "POST"}},
		{ns + "/pods/x/eviction", []string{"POST"}},
		{ns + "/pods/x/proxy", []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		{ns + "/services/x:80/proxy/healthz", []string{"GET"}},
		{ns + "/serviceaccounts/x/token", []string{"POST"}},
		{"/apis/apps/v1/namespaces//deployments/x", []string{"GET", "PUT", "PATCH", "DELETE"}},
		{"/apis/apps/v1/namespaces//deployments/x/scale", []string{"GET", "PUT", "PATCH"}},
	} {
		for _, m := range c.methods {
			var body []byte
			var hdr []string
			switch m {
			case "POST", "PUT":
				body = []byte(`{"metadata":{"name":"x"}}`)
			case "PATCH":
				body, hdr = []byte(`{"metadata":{"labels":{"a":"b"}}}`), []string{"Content-Type", "application/merge-patch+json"}
			}
			r := e.do(m, c.path, body, hdr...)
			if r.code != http.StatusBadRequest || r.status(t).Message != "Namespace parameter required." || r.status(t).Reason != "BadRequest" {
				t.Errorf("%s %s: %d %s, want 400 %q", m, c.path, r.code, r.body, "Namespace parameter required.")
			}
		}
	}
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		checkRouterAnswer(t, e, m, ns+"/nodes/x/proxy", http.StatusNotFound)
	}
	// services/proxy naming a port by name, or none, reads no Service: the
	// service REST refuses the empty namespace itself before it reads the
	// EndpointSlices (kubernetes PR 134860's ResourceLocation).
	for _, p := range []string{ns + "/services/x/proxy/healthz", ns + "/services/https:x:web/proxy"} {
		r := e.do("GET", p, nil)
		if r.code != http.StatusBadRequest || r.status(t).Message != "missing required namespace" {
			t.Errorf("GET %s: %d %s, want 400 %q", p, r.code, r.body, "missing required namespace")
		}
	}
}
