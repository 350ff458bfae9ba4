package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestResponseSizes: apiserver_response_sizes observes, as kube-apiserver,
// the body bytes of the reads its handlers answer (a get, a list, a health
// report), whatever their code, labelled with the
// reported verb, group, version, resource, subresource, scope and
// component; writes are not observed. Scraped from /metrics.
func TestResponseSizes(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	missing := e.do("GET", "/api/v1/namespaces/default/configmaps/missing", nil)
	if missing.code != 404 {
		t.Fatalf("get missing: %d %s", missing.code, missing.body)
	}
	if r := e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"m"}}`)); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	got := e.do("GET", "/api/v1/namespaces/default/configmaps/m", nil)
	if got.code != 200 {
		t.Fatalf("get: %d %s", got.code, got.body)
	}
	list := e.do("GET", "/api/v1/namespaces/default/configmaps", nil)
	if list.code != 200 {
		t.Fatalf("list: %d %s", list.code, list.body)
	}
	livez := e.do("GET", "/livez", nil)
	body := string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		"# HELP apiserver_response_sizes [STABLE] Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
		"# TYPE apiserver_response_sizes histogram",
		`apiserver_response_sizes_bucket{component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1",le="1000"} 2`,
		`apiserver_response_sizes_bucket{component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1",le="1e+09"} 2`,
		`apiserver_response_sizes_count{component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 2`,
		fmt.Sprintf(`apiserver_response_sizes_sum{component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} %d`,
			len(missing.body)+len(got.body)),
		fmt.Sprintf(`apiserver_response_sizes_sum{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} %d`,
			len(list.body)),
		fmt.Sprintf(`apiserver_response_sizes_sum{component="",group="",resource="",scope="",subresource="/livez",verb="GET",version=""} %d`,
			len(livez.body)),
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s\n%s", want, grepLines(body, "apiserver_response_sizes"))
		}
	}
	// Writes are not observed; the bucket bounds are upstream's.
	if strings.Contains(body, `apiserver_response_sizes_count{component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST"`) {
		t.Errorf("a create observed:\n%s", grepLines(body, "apiserver_response_sizes"))
	}
	var les []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, `apiserver_response_sizes_bucket{component="",group="",resource="",scope="",subresource="/livez",`) {
			les = append(les, l[strings.Index(l, `le="`)+4:strings.LastIndex(l, `"`)])
		}
	}
	if got, want := strings.Join(les, ","), "1000,10000,100000,1e+06,1e+07,1e+08,1e+09,+Inf"; got != want {
		t.Errorf("buckets %s, want %s", got, want)
	}
}

// TestSLILatencyScraped: apiserver_request_sli_duration_seconds has a
// series for each timed request but dry runs (kube-apiserver 1.35 left
// them out), with its upstream help text and level. Scraped from /metrics.
func TestSLILatencyScraped(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	if r := e.do("POST", "/api/v1/namespaces/default/secrets", []byte(`{"metadata":{"name":"s"}}`)); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/api/v1/namespaces/default/secrets?dryRun=All", []byte(`{"metadata":{"name":"dry"}}`)); r.code != 201 {
		t.Fatalf("dry-run create: %d %s", r.code, r.body)
	}
	e.do("GET", "/api/v1/namespaces/default/secrets/s", nil)
	body := string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		"# HELP apiserver_request_sli_duration_seconds [ALPHA] Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
		`apiserver_request_sli_duration_seconds_count{component="apiserver",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_sli_duration_seconds_count{component="apiserver",group="",resource="secrets",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_sli_duration_seconds_bucket{component="apiserver",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1",le="+Inf"} 1`,
		// the dry run is timed in the other histogram only.
		`apiserver_request_duration_seconds_count{component="apiserver",dry_run="All",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s\n%s", want, grepLines(body, "apiserver_request_sli_duration_seconds_count"))
		}
	}
}

// TestSelfRequestsScraped: the server's own requests through its loopback
// client (the legacy token tracking ConfigMap's create) are counted in
// apiserver_selfrequest_total, with upstream's help text and level; the
// administrator's are not. Scraped from /metrics.
func TestSelfRequestsScraped(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	const self = `apiserver_selfrequest_total{resource="configmaps",subresource="",verb="POST"} 1`
	eventually(t, "the legacy token tracking ConfigMap created through the loopback client", func() bool {
		return strings.Contains(string(e.do("GET", "/metrics", nil).body), self+"\n")
	})
	if r := e.do("POST", "/api/v1/namespaces/default/secrets", []byte(`{"metadata":{"name":"s"}}`)); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	body := string(e.do("GET", "/metrics", nil).body)
	if want := "# HELP apiserver_selfrequest_total [ALPHA] Counter of apiserver self-requests broken out for each verb, API resource and subresource.\n"; !strings.Contains(body, want) {
		t.Errorf("metrics lack %s", want)
	}
	if strings.Contains(body, `apiserver_selfrequest_total{resource="secrets"`) {
		t.Errorf("the administrator's create counted as a self-request:\n%s", grepLines(body, "apiserver_selfrequest_total"))
	}
}
