// Package metrics defines the API server's Prometheus metrics, named as
// kube-apiserver names them.
package metrics

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// Metrics are the request metrics of one server.
type Metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	// served are the resource names the server serves; a request for
	// anything else is labelled with resource "" so that request paths
	// cannot create unbounded (or invalid) label values.
	served map[string]bool
	// observed caches the children of requests and latency per label
	// values (observerKey -> *observers): a child's lookup hashes its
	// label values on every request. Bounded as the vectors are.
	observed sync.Map
}

type observerKey struct {
	verb, resource, subresource string
	code                        int
	longRunning                 bool // no latency is observed
}

type observers struct {
	requests prometheus.Counter
	latency  prometheus.Observer // nil for long-running requests
}

// Subresources are the subresource names that may appear as a label value.
var Subresources = map[string]bool{
	"status": true, "scale": true, "binding": true, "finalize": true, "log": true, "exec": true,
	"attach": true, "portforward": true, "ephemeralcontainers": true, "proxy": true, "eviction": true, "token": true, "resize": true,
}

// New registers the metrics on reg. served lists the resource names
// (plural, e.g. "pods") the server serves.
func New(reg prometheus.Registerer, served []string) (*Metrics, error) {
	m := &Metrics{
		served: map[string]bool{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: stability.Stable.Help("Counter of apiserver requests broken out for each verb, resource, subresource and HTTP response code."),
		}, []string{"verb", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds",
			Help: stability.Stable.Help("Response latency distribution in seconds for each verb and resource."),
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "resource"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: stability.Stable.Help("Gauge of all active long-running apiserver requests (watches) broken out by verb and resource."),
		}, []string{"verb", "resource"}),
	}
	for _, r := range served {
		m.served[r] = true
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.longRunning} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering apiserver metrics: %w", err)
		}
	}
	return m, nil
}

// ReportVerb is the verb label kube-apiserver reports for a request.
func ReportVerb(info *request.Info) string {
	if info == nil {
		return ""
	}
	if !info.IsResourceRequest {
		return strings.ToUpper(info.Verb)
	}
	switch info.Verb {
	case "get":
		return "GET"
	case "list":
		return "LIST"
	case "watch":
		return "WATCH"
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		return "PATCH"
	case "delete", "deletecollection":
		return "DELETE"
	}
	return strings.ToUpper(info.Verb)
}

// Observe records one finished request.
func (m *Metrics) Observe(info *request.Info, code int, d time.Duration) {
	verb := ReportVerb(info)
	res, sub := m.labels(info)
	longRunning := info != nil && info.IsLongRunning()
	key := observerKey{verb, res, sub, code, longRunning}
	o, ok := m.observed.Load(key)
	if !ok {
		obs := &observers{requests: m.requests.WithLabelValues(verb, res, sub, strconv.Itoa(code))}
		if !longRunning {
			obs.latency = m.latency.WithLabelValues(verb, res)
		}
		o, _ = m.observed.LoadOrStore(key, obs)
	}
	obs := o.(*observers)
	obs.requests.Inc()
	if obs.latency != nil {
		obs.latency.Observe(d.Seconds())
	}
}

// labels are the resource and subresource label values of a request: only
// served resources and known subresource names, never raw path segments.
func (m *Metrics) labels(info *request.Info) (resource, subresource string) {
	if info == nil || !m.served[info.Resource] {
		return "", ""
	}
	if Subresources[info.Subresource] {
		return info.Resource, info.Subresource
	}
	return info.Resource, ""
}

// WatchStarted counts an open watch until the returned func is called.
func (m *Metrics) WatchStarted(info *request.Info) func() {
	res, _ := m.labels(info)
	g := m.longRunning.WithLabelValues(ReportVerb(info), res)
	g.Inc()
	return g.Dec
}
