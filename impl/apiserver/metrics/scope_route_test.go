package metrics

import (
	"net/http/httptest"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestScopeAndVerbOfTheRoute: kube-apiserver labels a request with its
// route's scope (installer.go: "resource" for a path with {name} or a
// POST, "namespace" for a namespaced collection under {namespace},
// "cluster" across namespaces), so an empty name or namespace segment,
// which its router still routes there, keeps the route's scope and verb
// though the request-info parser sees no name (pods//status, a GET its
// parser calls a list) or no namespace (namespaces//pods).
func TestScopeAndVerbOfTheRoute(t *testing.T) {
	for _, c := range []struct {
		method, path, scope, verb string
	}{
		{"GET", "/api/v1/namespaces/default/pods//status", "resource", "GET"},
		{"PUT", "/api/v1/namespaces/default/pods//status", "resource", "PUT"},
		{"GET", "/apis/apps/v1/namespaces/default/deployments//scale", "resource", "GET"},
		{"GET", "/api/v1/namespaces/default/pods//status?watch=1", "resource", "WATCH"},
		{"GET", "/api/v1/nodes//status", "resource", "GET"},
		{"GET", "/api/v1/namespaces//pods", "namespace", "LIST"},
		{"GET", "/api/v1/namespaces//pods/x", "resource", "GET"},
		// unchanged: ordinary paths
		{"GET", "/api/v1/namespaces/default/pods", "namespace", "LIST"},
		{"GET", "/api/v1/pods", "cluster", "LIST"},
		{"GET", "/api/v1/namespaces/default/pods/x/status", "resource", "GET"},
		{"POST", "/api/v1/namespaces/default/pods", "resource", "POST"},
		{"DELETE", "/api/v1/namespaces/default/pods", "namespace", "DELETE"},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		info := request.Parse(r)
		if got := Scope(info); got != c.scope {
			t.Errorf("%s %s: scope %q, want %q", c.method, c.path, got, c.scope)
		}
		if got := Verb(r, info); got != c.verb {
			t.Errorf("%s %s: verb %q, want %q", c.method, c.path, got, c.verb)
		}
	}
}
