package apiserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// The checks kube-apiserver 1.37 lists, in its order, less those of
// components kubeproof does not have (the admission initializer, the
// apiextensions and aggregator hooks, the identity leases, cluster
// authentication info, the service CIDR controller, the flow control
// watermark filters).
const upstreamHooks = `[+]poststarthook/generic-apiserver-start-informers ok
[+]poststarthook/priority-and-fairness-config-consumer ok
[+]poststarthook/storage-object-count-tracker-hook ok
[+]poststarthook/start-system-namespaces-controller ok
[+]poststarthook/start-legacy-token-tracking-controller ok
[+]poststarthook/start-service-ip-repair-controllers ok
[+]poststarthook/rbac/bootstrap-roles ok
[+]poststarthook/scheduling/bootstrap-system-priority-classes ok
[+]poststarthook/priority-and-fairness-config-producer ok
[+]poststarthook/bootstrap-controller ok
`

// withBootstrapRoles adds a plugin post-start hook named as the cluster's
// RBAC one, which records that it ran.
func withBootstrapRoles(ran *bool) func(*apiserver.Config) {
	return func(c *apiserver.Config) {
		c.Plugins = func(apiserver.StoreGetter) (apiserver.Plugins, error) {
			return apiserver.Plugins{PostStartHooks: []apiserver.PostStartHook{{Name: "rbac/bootstrap-roles",
				Run: func(context.Context, apiserver.PostStartHookContext) error { *ran = true; return nil }}}}, nil
		}
	}
}

func TestHealthEndpointsListUpstreamChecks(t *testing.T) {
	var ran bool
	e := newEnv(t, withBootstrapRoles(&ran))
	if !ran {
		t.Fatal("the plugin's post-start hook did not run before the server served")
	}
	want := map[string]string{
		"/readyz?verbose": "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n" + upstreamHooks +
			"[+]shutdown ok\nreadyz check passed\n",
		"/livez?verbose":   "[+]ping ok\n[+]log ok\n[+]etcd ok\n" + upstreamHooks + "livez check passed\n",
		"/healthz?verbose": "[+]ping ok\n[+]log ok\n[+]etcd ok\n" + upstreamHooks + "healthz check passed\n",
	}
	for path, body := range want {
		r := e.do("GET", path, nil)
		if r.code != http.StatusOK || string(r.body) != body {
			t.Errorf("%s: %d\n%s\nwant\n%s", path, r.code, r.body, body)
		}
		if ct := r.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: Content-Type %q, X-Content-Type-Options %q", path, ct, r.header.Get("X-Content-Type-Options"))
		}
	}
	// Each check has its own path.
	for _, p := range []string{"/readyz/etcd-readiness", "/readyz/informer-sync", "/readyz/shutdown",
		"/readyz/poststarthook/rbac/bootstrap-roles", "/livez/log", "/healthz/poststarthook/bootstrap-controller"} {
		r := e.do("GET", p, nil)
		if r.code != http.StatusOK || string(r.body) != "ok" {
			t.Errorf("%s: %d %q", p, r.code, r.body)
		}
		// As kube-apiserver's per-check handler: no nosniff header.
		if r.header.Get("X-Content-Type-Options") != "" {
			t.Errorf("%s: X-Content-Type-Options %q", p, r.header.Get("X-Content-Type-Options"))
		}
	}
}

func TestHealthUnknownCheckPathsAreNotFound(t *testing.T) {
	e := newEnv(t, nil)
	// /readyz/ (no check), a check of another endpoint, an unknown one.
	for _, p := range []string{"/readyz/", "/livez/shutdown", "/healthz/informer-sync", "/readyz/nope", "/readyz/etcd/x"} {
		r := e.do("GET", p, nil)
		expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
}

func TestHealthExclude(t *testing.T) {
	e := newEnv(t, nil)
	r := e.do("GET", "/livez?verbose&exclude=nope&exclude=etcd&exclude=etcd&exclude=a%22b", nil)
	want := "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n"
	tail := "warn: some health checks cannot be excluded: no matches for \"a\\\"b\",\"nope\"\nlivez check passed\n"
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), want) || !strings.HasSuffix(string(r.body), tail) {
		t.Fatalf("livez excluding: %d\n%s", r.code, r.body)
	}
	// Not verbose: just ok.
	if r := e.do("GET", "/livez?exclude=nope", nil); r.code != http.StatusOK || string(r.body) != "ok" {
		t.Fatalf("livez excluding, not verbose: %d %q", r.code, r.body)
	}
}

// Before Run has done the post-start hooks' work, their checks fail: a
// server built but not run is not ready, and says which checks fail.
func TestHealthBeforeRunFails(t *testing.T) {
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: "/health-before-run"})
	srv, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(), Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	body := rec.Body.String()
	for _, line := range []string{"[+]ping ok\n", "[-]informer-sync failed: reason withheld\n",
		"[-]poststarthook/start-system-namespaces-controller failed: reason withheld\n",
		"[-]poststarthook/scheduling/bootstrap-system-priority-classes failed: reason withheld\n",
		"[-]poststarthook/bootstrap-controller failed: reason withheld\n", "[+]shutdown ok\n"} {
		if !strings.Contains(body, line) {
			t.Errorf("readyz lacks %q", line)
		}
	}
	if rec.Code != http.StatusInternalServerError || !strings.HasSuffix(body, "readyz check failed\n") ||
		rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("readyz before Run: %d %q\n%s", rec.Code, rec.Header(), body)
	}
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz/poststarthook/start-service-ip-repair-controllers", nil))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != "internal server error: not finished\n" {
		t.Errorf("repair hook check before Run: %d %q", rec.Code, rec.Body)
	}
}
