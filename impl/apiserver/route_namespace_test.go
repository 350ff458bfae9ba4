package apiserver_test

import (
	"net/http"
	"testing"
)

// TestNamespaceUnderNamespaceIsNotFound: kube-apiserver routes a
// namespace only at /api/v1/namespaces/<name>[/status|/finalize]; under
// another namespace (/api/v1/namespaces/a/namespaces[/b[/status|/finalize]])
// no route serves it, so every method is its router's 404 and namespace b
// is neither read nor written nor deleted. (Before, these paths were
// served as namespace b's: a PUT updated it, a DELETE deleted it, with
// RBAC deciding on namespace a.)
func TestNamespaceUnderNamespaceIsNotFound(t *testing.T) {
	e := newEnv(t, nil)
	for _, ns := range []string{"a", "b"} {
		if r := e.do("POST", "/api/v1/namespaces", []byte(`{"metadata":{"name":"`+ns+`"}}`)); r.code != http.StatusCreated {
			t.Fatalf("create namespace %s: %d %s", ns, r.code, r.body)
		}
	}
	before := e.do("GET", "/api/v1/namespaces/b", nil)
	put := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b","labels":{"x":"y"}},"spec":{"finalizers":[]}}`)
	for _, p := range []string{
		"/api/v1/namespaces/a/namespaces",
		"/api/v1/namespaces/a/namespaces/b",
		"/api/v1/namespaces/a/namespaces/b/status",
		"/api/v1/namespaces/a/namespaces/b/finalize",
		"/api/v1/namespaces/b/namespaces/b",
		"/api/v1/watch/namespaces/a/namespaces/b?timeoutSeconds=1",
		"/api/v1/namespaces//nodes",
	} {
		for _, m := range []string{"GET", "PUT", "PATCH", "DELETE", "POST"} {
			var body []byte
			var hdr []string
			switch m {
			case "PUT", "POST":
				body = put
			case "PATCH":
				body, hdr = []byte(`{"metadata":{"labels":{"x":"y"}}}`), []string{"Content-Type", "application/merge-patch+json"}
			}
			r := e.do(m, p, body, hdr...)
			if r.code != http.StatusNotFound {
				t.Errorf("%s %s: %d %s, want the router's 404", m, p, r.code, r.body)
				continue
			}
			if st := r.status(t); st.Message != "the server could not find the requested resource" {
				t.Errorf("%s %s: %q, want the router's 404", m, p, st.Message)
			}
		}
	}
	after := e.do("GET", "/api/v1/namespaces/b", nil)
	if after.code != http.StatusOK || string(after.body) != string(before.body) {
		t.Errorf("namespace b changed:\nbefore %s\nafter  %d %s", before.body, after.code, after.body)
	}
}
