package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestEmptyNameSegment is a table over subresource paths whose name
// segment is empty (pods//status) × methods. kube-apiserver's router
// matches the subresource's route with an empty name, so a method the
// route serves reaches its handler, which reads the name first and answers
// 400 "name must be provided" (a connect's dryRun refusal and a patch's
// content type are checked before it); a method it does not serve is the
// router's 405, and a namespaced subresource outside a namespace its 404.
// Nothing may be read, proxied or written under the empty name.
func TestEmptyNameSegment(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
	})
	const ns = "/api/v1/namespaces/default"
	for _, c := range []struct {
		path   string
		served []string // methods the subresource's route serves
	}{
		{ns + "/pods//status", []string{"GET", "PUT", "PATCH"}},
		{ns + "/pods//ephemeralcontainers", []string{"GET", "PUT", "PATCH"}},
		{ns + "/pods//resize", []string{"GET", "PUT", "PATCH"}},
		{ns + "/pods//binding", []string{"POST"}},
		{ns + "/pods//eviction", []string{"POST"}},
		{ns + "/pods//log", []string{"GET"}},
		{ns + "/pods//exec", []string{"GET", "POST"}},
		{ns + "/pods//attach", []string{"GET", "POST"}},
		{ns + "/pods//portforward", []string{"GET", "POST"}},
		{ns + "/pods//proxy", []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		{ns + "/pods//proxy/healthz", []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		{ns + "/services//proxy", []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		{ns + "/services//status", []string{"GET", "PUT", "PATCH"}},
		{ns + "/serviceaccounts//token", []string{"POST"}},
		{"/apis/apps/v1/namespaces/default/deployments//scale", []string{"GET", "PUT", "PATCH"}},
		{"/apis/apps/v1/namespaces/default/deployments//status", []string{"GET", "PUT", "PATCH"}},
		{"/api/v1/nodes//status", []string{"GET", "PUT", "PATCH"}},
		{"/api/v1/nodes//proxy", []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		{"/api/v1/namespaces//status", []string{"GET", "PUT", "PATCH"}},
		{"/api/v1/namespaces//finalize", []string{"PUT"}},
	} {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			served := false
			for _, s := range c.served {
				served = served || s == m
			}
			if !served {
				checkRouterAnswer(t, e, m, c.path, http.StatusMethodNotAllowed)
				continue
			}
			checkEmptyName(t, e, m, c.path, http.StatusBadRequest, "name must be provided")
		}
	}
	// A GET's watch parameter does not change the route.
	checkEmptyName(t, e, "GET", ns+"/pods//status?watch=1", http.StatusBadRequest, "name must be provided")
	// Checked before the name: a connect's dryRun, a patch's content type.
	checkEmptyName(t, e, "POST", ns+"/pods//exec?dryRun=All", http.StatusBadRequest, "dryRun is not supported")
	checkEmptyName(t, e, "GET", ns+"/pods//proxy?dryRun=All", http.StatusBadRequest, "dryRun is not supported")
	if r := e.do("PATCH", ns+"/pods//status", []byte(`{}`), "Content-Type", "text/plain"); r.code != http.StatusUnsupportedMediaType {
		t.Errorf("PATCH pods//status as text/plain: %d %s, want 415", r.code, r.body)
	}
	// Without a namespace there is no subresource route at all.
	for _, p := range []string{"/api/v1/pods//status", "/apis/apps/v1/deployments//scale"} {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			checkRouterAnswer(t, e, m, p, http.StatusNotFound)
		}
	}
}

func checkEmptyName(t *testing.T, e *env, m, p string, code int, msg string) {
	t.Helper()
	var body []byte
	var hdr []string
	switch m {
	case "POST", "PUT":
		body = []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`)
	case "PATCH":
		body, hdr = []byte(`{"metadata":{"labels":{"x":"y"}}}`), []string{"Content-Type", "application/merge-patch+json"}
	}
	r := e.do(m, p, body, hdr...)
	if r.code != code || !strings.Contains(string(r.body), `"message":"`+msg+`"`) || !strings.Contains(string(r.body), `"reason":"BadRequest"`) {
		t.Errorf("%s %s: %d %s, want %d %q", m, p, r.code, r.body, code, msg)
	}
}
