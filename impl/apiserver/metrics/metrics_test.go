package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

var testServed = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "namespaces"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
}

// req is a request as it reaches the metrics filter: its info parsed
// into its context.
func req(method, target string, header ...string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r.WithContext(request.NewContext(r.Context(), r))
}

// series are the family's series as "name{label=value,...} value",
// labels sorted by name; a histogram's value is its sample count.
func series(t *testing.T, reg prometheus.Gatherer, name string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out = append(out, name+"{"+labelText(m)+"} "+value(m))
		}
	}
	sort.Strings(out)
	return out
}

func labelText(m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(ls)
	return strings.Join(ls, ",")
}

func value(m *dto.Metric) string {
	switch {
	case m.GetCounter() != nil:
		return fmt.Sprint(m.GetCounter().GetValue())
	case m.GetGauge() != nil:
		return fmt.Sprint(m.GetGauge().GetValue())
	case m.GetHistogram() != nil:
		return fmt.Sprint(m.GetHistogram().GetSampleCount())
	}
	return "?"
}

// TestRequestLabelsAsKubeAPIServer: each request's apiserver_request_total
// labels are kube-apiserver's: LIST for collections, WATCH for watches
// (parameter or path), APPLY for a YAML apply patch, CONNECT for streaming
// subresources, scope resource/namespace/cluster, dry_run "" / "All" /
// "invalid", component apiserver; requests of resources not served are
// not counted unless refused with 429.
func TestRequestLabelsAsKubeAPIServer(t *testing.T) {
	for _, tc := range []struct {
		r    *http.Request
		code int
		want string // labels; "" when not counted
	}{
		{req("POST", "/api/v1/namespaces/ns/configmaps"), 201,
			"code=201,component=apiserver,dry_run=,group=,resource=configmaps,scope=resource,subresource=,verb=POST,version=v1"},
		{req("POST", "/api/v1/namespaces/ns/configmaps?dryRun=All"), 201,
			"code=201,component=apiserver,dry_run=All,group=,resource=configmaps,scope=resource,subresource=,verb=POST,version=v1"},
		{req("POST", "/api/v1/namespaces/ns/configmaps?dryRun=All&dryRun=All"), 201,
			"code=201,component=apiserver,dry_run=All,group=,resource=configmaps,scope=resource,subresource=,verb=POST,version=v1"},
		{req("POST", "/api/v1/namespaces/ns/configmaps?dryRun=Some"), 400,
			"code=400,component=apiserver,dry_run=invalid,group=,resource=configmaps,scope=resource,subresource=,verb=POST,version=v1"},
		{req("POST", "/api/v1/namespaces"), 201,
			"code=201,component=apiserver,dry_run=,group=,resource=namespaces,scope=resource,subresource=,verb=POST,version=v1"},
		{req("GET", "/api/v1/namespaces/ns/configmaps"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=namespace,subresource=,verb=LIST,version=v1"},
		{req("GET", "/api/v1/configmaps?limit=5"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=cluster,subresource=,verb=LIST,version=v1"},
		{req("GET", "/api/v1/namespaces/ns/configmaps/a"), 404,
			"code=404,component=apiserver,dry_run=,group=,resource=configmaps,scope=resource,subresource=,verb=GET,version=v1"},
		{req("GET", "/api/v1/namespaces/ns"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=namespaces,scope=resource,subresource=,verb=GET,version=v1"},
		{req("GET", "/api/v1/namespaces/ns/configmaps?watch=true"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=namespace,subresource=,verb=WATCH,version=v1"},
		{req("GET", "/api/v1/namespaces/ns/configmaps?watch=0"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=namespace,subresource=,verb=LIST,version=v1"},
		{req("GET", "/api/v1/watch/configmaps"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=cluster,subresource=,verb=WATCH,version=v1"},
		{req("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d?fieldManager=m", "Content-Type", "application/apply-patch+yaml"), 200,
			"code=200,component=apiserver,dry_run=,group=apps,resource=deployments,scope=resource,subresource=,verb=APPLY,version=v1"},
		{req("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "Content-Type", "application/merge-patch+json"), 200,
			"code=200,component=apiserver,dry_run=,group=apps,resource=deployments,scope=resource,subresource=,verb=PATCH,version=v1"},
		{req("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale"), 200,
			"code=200,component=apiserver,dry_run=,group=apps,resource=deployments,scope=resource,subresource=scale,verb=PUT,version=v1"},
		{req("PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval"), 200,
			"code=200,component=apiserver,dry_run=,group=certificates.k8s.io,resource=certificatesigningrequests,scope=resource,subresource=approval,verb=PUT,version=v1"},
		{req("DELETE", "/api/v1/namespaces/ns/configmaps"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=namespace,subresource=,verb=DELETE,version=v1"},
		{req("GET", "/api/v1/namespaces/ns/pods/p/log"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=pods,scope=resource,subresource=log,verb=CONNECT,version=v1"},
		// A method the resource has no handler for: kube-apiserver's
		// router answers 405 before any instrumented handler.
		{req("OPTIONS", "/api/v1/namespaces/ns/configmaps/a"), 405, ""},
		{req("PUT", "/api/v1/namespaces/ns/configmaps"), 405, ""},
		// A method outside kube-apiserver's list is reported as other.
		{req("OPTIONS", "/api/v1/namespaces/ns/configmaps/a"), 429,
			"code=429,component=apiserver,dry_run=,group=,resource=configmaps,scope=resource,subresource=,verb=other,version=v1"},
		// Not served: no series (kube-apiserver's router answers 404).
		{req("GET", "/api/v1/namespaces/ns/made-up"), 404, ""},
		{req("GET", "/apis/made.up/v1/configmaps"), 404, ""},
		{req("GET", "/api/v2/configmaps"), 404, ""},
		{req("GET", "/api/v1/namespaces/ns/configmaps/a/x.00%2F0000%800"), 404, ""},
		// kube-apiserver's instrumented non-resource paths: the health
		// reports and the OpenAPI v3 documents, with an empty component.
		{req("GET", "/healthz"), 200,
			"code=200,component=,dry_run=,group=,resource=,scope=,subresource=/healthz,verb=GET,version="},
		{req("HEAD", "/livez"), 200,
			"code=200,component=,dry_run=,group=,resource=,scope=,subresource=/livez,verb=GET,version="},
		{req("GET", "/readyz?verbose"), 500,
			"code=500,component=,dry_run=,group=,resource=,scope=,subresource=/readyz,verb=GET,version="},
		{req("GET", "/openapi/v3"), 200,
			"code=200,component=,dry_run=,group=,resource=,scope=,subresource=openapi/v3,verb=GET,version="},
		{req("GET", "/openapi/v3/apis/apps/v1?hash=x"), 200,
			"code=200,component=,dry_run=,group=,resource=,scope=,subresource=openapi/v3/,verb=GET,version="},
		{req("GET", "/openapi/v3/no/such/%ff"), 404,
			"code=404,component=,dry_run=,group=,resource=,scope=,subresource=openapi/v3/,verb=GET,version="},
		// Other non-resource paths are not counted.
		{req("GET", "/healthz/etcd"), 200, ""},
		{req("GET", "/healthz/"), 200, ""},
		{req("GET", "/version"), 200, ""},
		{req("GET", "/openapi/v2"), 200, ""},
		{req("GET", "/apis"), 200, ""},
		{req("GET", "/api/v1"), 200, ""},
		{req("GET", "/metrics"), 200, ""},
		{req("GET", "/made-up/path"), 404, ""},
		// HEAD is reported as the GET or LIST it stands for.
		{req("HEAD", "/api/v1/namespaces/ns/configmaps/a"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=resource,subresource=,verb=GET,version=v1"},
		{req("HEAD", "/api/v1/namespaces/ns/configmaps"), 200,
			"code=200,component=apiserver,dry_run=,group=,resource=configmaps,scope=namespace,subresource=,verb=LIST,version=v1"},
		// Refused by the in-flight limit: counted, without path labels.
		{req("GET", "/api/v1/no-such-%ff"), 429,
			"code=429,component=apiserver,dry_run=,group=,resource=,scope=cluster,subresource=,verb=LIST,version="},
		{req("GET", "/version"), 429,
			"code=429,component=apiserver,dry_run=,group=,resource=,scope=,subresource=,verb=GET,version="},
		{req("GET", "/healthz"), 429,
			"code=429,component=apiserver,dry_run=,group=,resource=,scope=,subresource=,verb=GET,version="},
	} {
		reg := prometheus.NewRegistry()
		m, err := New(reg, testServed)
		if err != nil {
			t.Fatal(err)
		}
		m.Observe(tc.r, tc.code, time.Millisecond) // must not panic
		got := series(t, reg, "apiserver_request_total")
		var want []string
		if tc.want != "" {
			want = []string{"apiserver_request_total{" + tc.want + "} 1"}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s %s (%d):\n got %v\nwant %v", tc.r.Method, tc.r.URL, tc.code, got, want)
		}
	}
}

// TestObserveCountsPerSeries: requests with the same labels count in the
// same series (the server keeps each series' children); watches are timed
// too, as kube-apiserver times them; a 429 of an unserved path counts
// without latency.
func TestObserveCountsPerSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m.Observe(req("POST", "/api/v1/namespaces/a/configmaps"), 201, 2*time.Millisecond)
	}
	m.Observe(req("POST", "/api/v1/namespaces/b/configmaps"), 409, time.Millisecond)
	m.Observe(req("GET", "/api/v1/configmaps?watch=1"), 200, time.Minute)
	m.Observe(req("GET", "/healthz"), 429, time.Millisecond)
	const cm = "component=apiserver,dry_run=,group=,resource=configmaps,"
	want := []string{
		"apiserver_request_duration_seconds{" + cm + "scope=cluster,subresource=,verb=WATCH,version=v1} 1",
		"apiserver_request_duration_seconds{" + cm + "scope=resource,subresource=,verb=POST,version=v1} 4",
		"apiserver_request_total{code=200," + cm + "scope=cluster,subresource=,verb=WATCH,version=v1} 1",
		"apiserver_request_total{code=201," + cm + "scope=resource,subresource=,verb=POST,version=v1} 3",
		"apiserver_request_total{code=409," + cm + "scope=resource,subresource=,verb=POST,version=v1} 1",
		"apiserver_request_total{code=429,component=apiserver,dry_run=,group=,resource=,scope=,subresource=,verb=GET,version=} 1",
	}
	got := append(series(t, reg, "apiserver_request_duration_seconds"), series(t, reg, "apiserver_request_total")...)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLatencyBuckets: apiserver_request_duration_seconds has
// kube-apiserver's bucket bounds.
func TestLatencyBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe(req("GET", "/api/v1/namespaces/ns/pods/p"), 200, time.Millisecond)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_request_duration_seconds" {
			for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
				got = append(got, fmt.Sprint(b.GetUpperBound()))
			}
		}
	}
	want := "0.005 0.025 0.05 0.1 0.2 0.4 0.6 0.8 1 1.25 1.5 2 3 4 5 6 8 10 15 20 30 45 60"
	if strings.Join(got, " ") != want {
		t.Errorf("buckets %v, want %s", got, want)
	}
}

// TestWatchStartedLabels: an open watch is in apiserver_longrunning_requests
// with kube-apiserver's labels until it ends; a watch of an unserved
// resource is not.
func TestWatchStartedLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	done := m.WatchStarted(request.Parse(httptest.NewRequest("GET", "/apis/apps/v1/namespaces/ns/deployments?watch=true", nil)))
	m.WatchStarted(request.Parse(httptest.NewRequest("GET", "/api/v1/bogus%ff?watch=true", nil)))()
	want := "apiserver_longrunning_requests{component=apiserver,group=apps,resource=deployments,scope=namespace,subresource=,verb=WATCH,version=v1} 1"
	if got := series(t, reg, "apiserver_longrunning_requests"); strings.Join(got, "\n") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	done()
	if got := series(t, reg, "apiserver_longrunning_requests"); len(got) != 1 || !strings.HasSuffix(got[0], "} 0") {
		t.Errorf("after the watch: %v", got)
	}
	// The legacy watch path: LIST, or GET when named (kube-apiserver reads
	// the gauge's verb from the method and the watch parameter only); a
	// namespace named "watch" is no watch path.
	reg = prometheus.NewRegistry()
	if m, err = New(reg, testServed); err != nil {
		t.Fatal(err)
	}
	m.WatchStarted(request.Parse(httptest.NewRequest("GET", "/api/v1/watch/namespaces/ns/configmaps", nil)))
	m.WatchStarted(request.Parse(httptest.NewRequest("GET", "/apis/apps/v1/watch/namespaces/ns/deployments/d", nil)))
	m.WatchStarted(request.Parse(httptest.NewRequest("GET", "/api/v1/namespaces/watch/configmaps?watch=1", nil)))
	want = strings.Join([]string{
		"apiserver_longrunning_requests{component=apiserver,group=,resource=configmaps,scope=namespace,subresource=,verb=LIST,version=v1} 1",
		"apiserver_longrunning_requests{component=apiserver,group=,resource=configmaps,scope=namespace,subresource=,verb=WATCH,version=v1} 1",
		"apiserver_longrunning_requests{component=apiserver,group=apps,resource=deployments,scope=resource,subresource=,verb=GET,version=v1} 1",
	}, "\n")
	if got := series(t, reg, "apiserver_longrunning_requests"); strings.Join(got, "\n") != want {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}

// TestObserveThrottled: a request the in-flight limit or priority and
// fairness turned away is counted with code 429 and its resource labels
// when served, but not timed, as kube-apiserver records dropped requests.
func TestObserveThrottled(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveThrottled(req("POST", "/api/v1/namespaces/ns/configmaps?dryRun=All"))
	m.ObserveThrottled(req("POST", "/api/v1/namespaces/ns/configmaps?dryRun=All"))
	m.ObserveThrottled(req("GET", "/api/v1/made-up"))
	want := []string{
		"apiserver_request_total{code=429,component=apiserver,dry_run=,group=,resource=,scope=cluster,subresource=,verb=LIST,version=} 1",
		"apiserver_request_total{code=429,component=apiserver,dry_run=All,group=,resource=configmaps,scope=resource,subresource=,verb=POST,version=v1} 2",
	}
	if got := series(t, reg, "apiserver_request_total"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := series(t, reg, "apiserver_request_duration_seconds"); len(got) != 0 {
		t.Errorf("throttled requests timed: %v", got)
	}
	// kube-apiserver also counts them as terminated in self-defense.
	want = []string{
		"apiserver_request_terminations_total{code=429,component=apiserver,group=,resource=,scope=cluster,subresource=,verb=LIST,version=} 1",
		"apiserver_request_terminations_total{code=429,component=apiserver,group=,resource=configmaps,scope=resource,subresource=,verb=POST,version=v1} 2",
	}
	if got := series(t, reg, "apiserver_request_terminations_total"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("terminations: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTerminationsHelp: apiserver_request_terminations_total is ALPHA
// upstream, with kube-apiserver's help text.
func TestTerminationsHelp(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	// An answered 429 of an unserved path and a throttled one with the
	// same labels are separate records: neither may break the other.
	m.Observe(req("GET", "/version"), http.StatusTooManyRequests, time.Millisecond)
	m.ObserveThrottled(req("GET", "/version"))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	const want = "[ALPHA] Number of requests which apiserver terminated in self-defense."
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_request_terminations_total" {
			found = true
			if mf.GetHelp() != want {
				t.Errorf("help %q, want %q", mf.GetHelp(), want)
			}
		}
	}
	if !found {
		t.Error("no apiserver_request_terminations_total")
	}
	if got := series(t, reg, "apiserver_request_total"); len(got) != 1 || !strings.HasSuffix(got[0], "} 2") {
		t.Errorf("requests: %v", got)
	}
}

// TestConnectStartedLabels: an open connect request (exec, attach,
// portforward, proxy) of a served resource is long-running with verb
// CONNECT; pods/log (a get upstream) and unserved resources are not
// tracked.
func TestConnectStartedLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	start := func(method, target string) func() {
		r := req(method, target)
		return m.ConnectStarted(r, request.InfoFrom(r.Context()))
	}
	done := start("POST", "/api/v1/namespaces/ns/pods/p/exec?command=ls")
	start("GET", "/api/v1/namespaces/ns/pods/p/log")()
	start("GET", "/api/v1/nodes/n/proxy/x")() // nodes not served here
	want := "apiserver_longrunning_requests{component=apiserver,group=,resource=pods,scope=resource,subresource=exec,verb=CONNECT,version=v1} 1"
	if got := series(t, reg, "apiserver_longrunning_requests"); strings.Join(got, "\n") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	done()
	if got := series(t, reg, "apiserver_longrunning_requests"); len(got) != 1 || !strings.HasSuffix(got[0], "} 0") {
		t.Errorf("after the exec: %v", got)
	}
}

// TestResponseSizesObserved: apiserver_response_sizes observes what
// kube-apiserver instruments as reads (a get, a getter subresource, a
// list, a watch by parameter as WATCH, an instrumented non-resource path),
// not writes, the legacy /watch/ path or the subresources reported as
// CONNECT (pods/log included: its route's metrics verb is CONNECT).
func TestResponseSizesObserved(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*http.Request{
		req("GET", "/api/v1/namespaces/ns/pods/p"),
		req("GET", "/api/v1/namespaces/ns/pods/p/status"),
		req("GET", "/api/v1/namespaces/ns/pods/p/log"),
		req("GET", "/api/v1/namespaces/ns/pods?watch=1"),
		req("GET", "/api/v1/pods"),
		req("GET", "/readyz"),
		req("POST", "/api/v1/namespaces/ns/pods"),
		req("GET", "/api/v1/watch/namespaces/ns/pods"),
		req("GET", "/api/v1/namespaces/ns/pods/p/exec?command=ls"),
		req("POST", "/api/v1/namespaces/ns/pods/p/attach"),
		req("GET", "/version"),
	} {
		m.ObserveResponse(r, Response{Code: 200, Duration: time.Millisecond, Size: 1500})
	}
	got := strings.Join(series(t, reg, "apiserver_response_sizes"), "\n")
	want := strings.Join([]string{
		"apiserver_response_sizes{component=,group=,resource=,scope=,subresource=/readyz,verb=GET,version=} 1",
		"apiserver_response_sizes{component=apiserver,group=,resource=pods,scope=cluster,subresource=,verb=LIST,version=v1} 1",
		"apiserver_response_sizes{component=apiserver,group=,resource=pods,scope=namespace,subresource=,verb=WATCH,version=v1} 1",
		"apiserver_response_sizes{component=apiserver,group=,resource=pods,scope=resource,subresource=,verb=GET,version=v1} 1",
		"apiserver_response_sizes{component=apiserver,group=,resource=pods,scope=resource,subresource=status,verb=GET,version=v1} 1",
	}, "\n")
	if got != want {
		t.Errorf("series:\n%s\nwant:\n%s", got, want)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_response_sizes" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleSum() != 1500 || h.GetBucket()[0].GetCumulativeCount() != 0 || h.GetBucket()[1].GetCumulativeCount() != 1 {
				t.Errorf("histogram %v", h)
			}
		}
	}
}

// TestSLILatency: apiserver_request_sli_duration_seconds times what
// apiserver_request_duration_seconds times, less the excluded latency
// (webhook calls, queue wait), but dry runs; a 429 of the in-flight limit
// or priority and fairness is not timed.
func TestSLILatency(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveResponse(req("POST", "/api/v1/namespaces/ns/pods"), Response{Code: 201, Duration: 2 * time.Second, Excluded: 1900 * time.Millisecond})
	m.ObserveResponse(req("POST", "/api/v1/namespaces/ns/pods?dryRun=All"), Response{Code: 201, Duration: time.Second})
	m.ObserveResponse(req("GET", "/api/v1/namespaces/ns/pods?watch=true"), Response{Code: 200, Duration: time.Minute})
	m.ObserveResponse(req("GET", "/livez"), Response{Code: 200, Duration: time.Millisecond})
	m.ObserveResponse(req("GET", "/version"), Response{Code: 200, Duration: time.Millisecond})
	m.ObserveThrottled(req("GET", "/api/v1/pods"))
	got := strings.Join(series(t, reg, "apiserver_request_sli_duration_seconds"), "\n")
	want := strings.Join([]string{
		"apiserver_request_sli_duration_seconds{component=,group=,resource=,scope=,subresource=/livez,verb=GET,version=} 1",
		"apiserver_request_sli_duration_seconds{component=apiserver,group=,resource=pods,scope=namespace,subresource=,verb=WATCH,version=v1} 1",
		"apiserver_request_sli_duration_seconds{component=apiserver,group=,resource=pods,scope=resource,subresource=,verb=POST,version=v1} 1",
	}, "\n")
	if got != want {
		t.Errorf("series:\n%s\nwant:\n%s", got, want)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_request_sli_duration_seconds" {
			continue
		}
		if want := "[ALPHA] Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component."; mf.GetHelp() != want {
			t.Errorf("help %q", mf.GetHelp())
		}
		for _, s := range mf.GetMetric() {
			if labelText(s) != "component=apiserver,group=,resource=pods,scope=resource,subresource=,verb=POST,version=v1" {
				continue
			}
			h := s.GetHistogram()
			var bounds []string
			for _, b := range h.GetBucket() {
				bounds = append(bounds, fmt.Sprint(b.GetUpperBound()))
			}
			if got := strings.Join(bounds, ","); got != "0.05,0.1,0.2,0.4,0.6,0.8,1,1.25,1.5,2,3,4,5,6,8,10,15,20,30,45,60" {
				t.Errorf("buckets %s", got)
			}
			// 2 s less 1.9 s excluded: in the 0.1 bucket, not the 0.05 one.
			if h.GetBucket()[0].GetCumulativeCount() != 0 || h.GetBucket()[1].GetCumulativeCount() != 1 {
				t.Errorf("POST observed at %v s", h.GetSampleSum())
			}
		}
	}
}

// TestSelfRequests: apiserver_selfrequest_total counts the timed requests
// of the loopback user system:apiserver by reported verb, resource and
// subresource; other users' requests and 429s are not counted.
func TestSelfRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, testServed)
	if err != nil {
		t.Fatal(err)
	}
	as := func(name string, r *http.Request) *http.Request {
		return r.WithContext(request.SetUser(r.Context(), &request.User{Name: name}))
	}
	ok := Response{Code: 200, Duration: time.Millisecond}
	m.ObserveResponse(as(APIServerUser, req("POST", "/api/v1/namespaces/ns/configmaps")), Response{Code: 201, Duration: time.Millisecond})
	m.ObserveResponse(as(APIServerUser, req("PUT", "/api/v1/namespaces/ns/configmaps/c")), Response{Code: 409, Duration: time.Millisecond})
	m.ObserveResponse(as(APIServerUser, req("GET", "/api/v1/namespaces/ns/configmaps?watch=1")), ok)
	m.ObserveResponse(as(APIServerUser, req("GET", "/api/v1/namespaces/ns/pods/p/status")), ok)
	m.ObserveResponse(as(APIServerUser, req("GET", "/api/v1/namespaces/ns/pods/p/status")), ok)
	m.ObserveResponse(as("admin", req("POST", "/api/v1/namespaces/ns/pods")), ok)
	m.ObserveResponse(req("GET", "/api/v1/pods"), ok)
	m.ObserveThrottled(as(APIServerUser, req("GET", "/api/v1/pods")))
	got := strings.Join(series(t, reg, "apiserver_selfrequest_total"), "\n")
	want := strings.Join([]string{
		"apiserver_selfrequest_total{resource=configmaps,subresource=,verb=POST} 1",
		"apiserver_selfrequest_total{resource=configmaps,subresource=,verb=PUT} 1",
		"apiserver_selfrequest_total{resource=configmaps,subresource=,verb=WATCH} 1",
		"apiserver_selfrequest_total{resource=pods,subresource=status,verb=GET} 2",
	}, "\n")
	if got != want {
		t.Errorf("series:\n%s\nwant:\n%s", got, want)
	}
}
