package apiserver_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// A request a deprecated kind's route serves sets kube-apiserver's STABLE
// gauge apiserver_requested_deprecated_apis to 1 for the group, version,
// resource and subresource, with the kind's removed_release (none for
// v1 Endpoints); the router's 405 and other kinds' requests set nothing.
// The `kubernetes` Endpoints' reconciler is off: its requests, the
// server's own through its loopback client, are served requests to the
// deprecated kind too.
func TestRequestedDeprecatedAPIsGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) {
		c.Metrics, c.EndpointReconcilerType = reg, apiserver.EndpointReconcilerNone
	})
	e.do("PUT", "/api/v1/namespaces/default/endpoints", nil) // the router's 405
	e.do("GET", "/api/v1/namespaces/default/configmaps/missing", nil)
	body := string(e.do("GET", "/metrics", nil).body)
	if strings.Contains(body, "\napiserver_requested_deprecated_apis{") {
		t.Errorf("gauge set without a served request to a deprecated kind:\n%s", grepLines(body, "apiserver_requested_deprecated_apis"))
	}
	e.do("GET", "/api/v1/namespaces/default/endpoints/missing", nil)
	e.do("GET", "/api/v1/namespaces/default/endpoints", nil)
	body = string(e.do("GET", "/metrics", nil).body)
	want := []string{
		"# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.\n",
		"# TYPE apiserver_requested_deprecated_apis gauge\n",
		`apiserver_requested_deprecated_apis{group="",removed_release="",resource="endpoints",subresource="",version="v1"} 1` + "\n",
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %q:\n%s", w, grepLines(body, "apiserver_requested_deprecated_apis"))
		}
	}
	if n := strings.Count(body, "\napiserver_requested_deprecated_apis{"); n != 1 {
		t.Errorf("%d series, want 1:\n%s", n, grepLines(body, "apiserver_requested_deprecated_apis"))
	}
}
