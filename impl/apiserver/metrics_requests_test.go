package apiserver_test

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestRefusedRequestsNotCounted: as kube-apiserver, requests refused by
// authentication (401), impersonation or authorization (403) are not in
// apiserver_request_total, while a 404 of the API (a request that reached
// its handler) is.
func TestRefusedRequestsNotCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) {
		c.Metrics = reg
		c.Authorizer = adminOnly{}
	})
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	if r := e.doWith(anon, "GET", "/api/v1/namespaces/default/configmaps", nil, "Authorization", "Bearer bogus"); r.code != http.StatusUnauthorized {
		t.Fatalf("bogus token: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil, "Impersonate-User", "nobody"); r.code != http.StatusForbidden {
		t.Fatalf("nobody lists: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil, "Impersonate-Group", "g"); r.code != http.StatusBadRequest {
		t.Fatalf("bad impersonation: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps/missing", nil); r.code != http.StatusNotFound {
		t.Fatalf("get missing: %d %s", r.code, r.body)
	}
	body := string(e.do("GET", "/metrics", nil).body)
	want := `apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1`
	if !strings.Contains(body, want) {
		t.Errorf("metrics lack %s", want)
	}
	for _, code := range []string{"400", "401", "403"} {
		if strings.Contains(body, `apiserver_request_total{code="`+code+`"`) {
			t.Errorf("a refused request counted with code %s:\n%s", code, grepLines(body, "apiserver_request_total{"))
		}
	}
}

// grepLines are the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
