// Package metrics defines the API server's request metrics, named and
// labelled as kube-apiserver's (apiserver_request_total,
// apiserver_request_duration_seconds, apiserver_longrunning_requests and
// apiserver_response_sizes, STABLE; apiserver_request_terminations_total,
// apiserver_request_sli_duration_seconds and apiserver_selfrequest_total,
// ALPHA): verb, dry_run, group, version, resource, subresource, scope,
// component and code, with the values kube-apiserver reports.
//
// apiserver_request_aborts_total is not defined: kube-apiserver counts
// there the requests whose handler panicked with http.ErrAbortHandler (its
// timeout filter aborting a response already begun, its proxy failing
// mid-copy), and nothing in this server aborts a request that way but the
// panic recovery's own abort of a response begun before a panic, which
// kube-apiserver does not count.
package metrics

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// Component is the component label of every resource request
// kube-apiserver's generic API server counts (and of its 429 refusals);
// the non-resource paths it counts have an empty one.
const Component = "apiserver"

// Metrics are the request metrics of one server.
type Metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	// sizes are the body sizes of the reads (sized).
	sizes *prometheus.HistogramVec
	// sli is the latency of the timed requests but dry runs, less the
	// webhook calls and the queue wait (request.ExcludedLatency).
	sli *prometheus.HistogramVec
	// selfRequests counts the timed requests of the server's own loopback
	// user.
	selfRequests *prometheus.CounterVec
	// terminations counts the requests the server turned away in
	// self-defense (429s of the in-flight limit and priority and
	// fairness).
	terminations *prometheus.CounterVec
	// served are the resources the server serves. A request for anything
	// else (but the few non-resource paths of nonResourceSubresource)
	// never reaches an instrumented handler in kube-apiserver (it is a 404
	// of the router), so it is not counted, save a 429 of the
	// in-flight limit or priority and fairness, which kube-apiserver counts
	// too: here with empty group, version and resource, so that request
	// paths cannot create unbounded (or invalid) label values.
	served map[schema.GroupVersionResource]bool
	// deprecated are the served resources whose kind is deprecated at
	// the served version, with the release each goes away in ("" when its
	// kind names none), set by Deprecated before serving.
	deprecated map[schema.GroupVersionResource]string
	// deprecatedAPIs is apiserver_requested_deprecated_apis: 1 for each
	// deprecated resource (and subresource) a served request was for.
	deprecatedAPIs *prometheus.GaugeVec
	// observed caches the children of requests and latency per label
	// values (labels -> *observers): a child's lookup hashes its label
	// values on every request. Bounded as the vectors are.
	observed sync.Map
}

// labels are one request's label values but the code.
type labels struct {
	verb, dryRun, group, version, resource, subresource, scope, component string
}

type observerKey struct {
	labels
	code      int
	latency   bool // the request's latency is observed too
	sized     bool // its response size too
	self      bool // a request of the loopback user (APIServerUser)
	throttled bool // ObserveThrottled's: a termination too
}

type observers struct {
	requests     prometheus.Counter
	latency      prometheus.Observer // nil when not observed
	sizes        prometheus.Observer // nil when not observed
	sli          prometheus.Observer // nil when not observed
	self         prometheus.Counter  // nil when not counted
	terminations prometheus.Counter  // set for the throttled requests' key only
	deprecated   prometheus.Gauge    // set for a deprecated resource's timed requests only
}

// Subresources are the subresource names that may appear as a label value
// (those the server serves); a request of another is not counted.
var Subresources = map[string]bool{
	"status": true, "scale": true, "binding": true, "finalize": true, "log": true, "exec": true,
	"attach": true, "portforward": true, "ephemeralcontainers": true, "proxy": true, "eviction": true, "token": true, "resize": true,
	"approval": true,
}

// connectSubresources are the subresources kube-apiserver reports with
// verb CONNECT whatever the method.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// reportedVerbs are the verb label values kube-apiserver reports; any
// other verb is reported as "other".
var reportedVerbs = map[string]bool{
	"APPLY": true, "CONNECT": true, "CREATE": true, "DELETE": true, "DELETECOLLECTION": true, "GET": true, "LIST": true,
	"PATCH": true, "POST": true, "PROXY": true, "PUT": true, "UPDATE": true, "WATCH": true, "WATCHLIST": true,
}

// applyYAML is the content type that makes a PATCH a server-side apply in
// the verb label (kube-apiserver compares the header with the YAML apply
// patch type only, exactly).
const applyYAML = "application/apply-patch+yaml"

// latencyBuckets are apiserver_request_duration_seconds' bucket bounds.
var latencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// sizeBuckets are apiserver_response_sizes' bucket bounds: 1 kB to 1 GB
// by factors of ten.
var sizeBuckets = prometheus.ExponentialBuckets(1000, 10, 7)

// sliBuckets are apiserver_request_sli_duration_seconds' bucket bounds.
var sliBuckets = []float64{0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// New registers the metrics on reg. served lists the resources the
// server serves.
func New(reg prometheus.Registerer, served []schema.GroupVersionResource) (*Metrics, error) {
	m := &Metrics{
		served: map[schema.GroupVersionResource]bool{}, deprecated: map[schema.GroupVersionResource]string{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: stability.Stable.Help("Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code."),
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    stability.Stable.Help("Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component."),
			Buckets: latencyBuckets,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: stability.Stable.Help("Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way."),
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
	}
	for _, r := range served {
		m.served[r] = true
	}
	m.terminations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_terminations_total",
		Help: stability.Alpha.Help("Number of requests which apiserver terminated in self-defense."),
	}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component", "code"})
	m.sizes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_response_sizes",
		Help:    stability.Stable.Help("Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component."),
		Buckets: sizeBuckets,
	}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"})
	m.sli = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_sli_duration_seconds",
		Help:    stability.Alpha.Help("Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component."),
		Buckets: sliBuckets,
	}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"})
	m.selfRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_selfrequest_total",
		Help: stability.Alpha.Help("Counter of apiserver self-requests broken out for each verb, API resource and subresource."),
	}, []string{"verb", "resource", "subresource"})
	m.deprecatedAPIs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_requested_deprecated_apis",
		Help: stability.Stable.Help("Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release."),
	}, []string{"group", "version", "resource", "subresource", "removed_release"})
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.longRunning, m.terminations, m.sizes, m.sli, m.selfRequests, m.deprecatedAPIs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering apiserver metrics: %w", err)
		}
	}
	return m, nil
}

// Serve adds resources the server serves besides those given to New (the
// review endpoints, which have no storage), so that their requests are
// counted. It must be called before the server serves requests.
func (m *Metrics) Serve(gvrs ...schema.GroupVersionResource) {
	for _, gvr := range gvrs {
		m.served[gvr] = true
	}
}

// Deprecated marks a served resource whose kind is deprecated at the
// served version, removedRelease the release it goes away in ("" when
// none), so that its requests set apiserver_requested_deprecated_apis as
// kube-apiserver's route instrumentation does. It must be called before
// the server serves requests.
func (m *Metrics) Deprecated(gvr schema.GroupVersionResource, removedRelease string) {
	m.deprecated[gvr] = removedRelease
}

// Scope is the scope label of a request: "resource" for one named object
// (or its subresource) or a create, "namespace" for a collection in a
// namespace, "cluster" for a cluster-wide collection, "" for a
// non-resource request. It is the scope of the route kube-apiserver's
// router picks, so an empty name segment on a subresource's path
// (pods//status) is still "resource" and an empty namespace segment
// (namespaces//pods) still "namespace".
func Scope(info *request.Info) string {
	switch {
	case info == nil:
		return ""
	case info.Name != "" || info.Subresource != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "" || info.UnderNamespace:
		return "namespace"
	case info.IsResourceRequest:
		return "cluster"
	}
	return ""
}

// Verb is the verb label kube-apiserver reports for r: the HTTP method,
// HEAD as GET, GET and HEAD of a collection as LIST, a watch (watch
// path, or a GET whose first watch parameter is neither "0" nor "false")
// as WATCH, a PATCH with the YAML apply patch content type as APPLY, a
// request of a streaming subresource (log, exec, attach, portforward,
// proxy) as CONNECT, and any method outside kube-apiserver's list as
// "other".
func Verb(r *http.Request, info *request.Info) string {
	method := strings.ToUpper(r.Method)
	verb := method
	scope := Scope(info)
	if method == http.MethodGet || method == http.MethodHead {
		// kube-apiserver reports a HEAD as the GET (or LIST) it stands for.
		verb = http.MethodGet
		if scope != "resource" && scope != "" {
			verb = "LIST"
		}
	}
	if method == http.MethodGet && watchParam(r) {
		verb = "WATCH"
	}
	if method == http.MethodPatch && r.Header.Get("Content-Type") == applyYAML {
		verb = "APPLY"
	}
	if info != nil && info.IsResourceRequest && connectSubresources[info.Subresource] {
		verb = "CONNECT"
	}
	if info != nil && info.IsResourceRequest && info.Verb == "watch" {
		verb = "WATCH" // also the /watch/ path
	}
	if !reportedVerbs[verb] {
		return "other"
	}
	return verb
}

// watchParam reports whether r's first watch query value asks for a
// watch (anything but "0" and "false", case-insensitively).
func watchParam(r *http.Request) bool {
	if !strings.Contains(r.URL.RawQuery, "watch") {
		return false
	}
	v, ok := r.URL.Query()["watch"]
	if !ok || len(v) == 0 {
		return false
	}
	s := strings.ToLower(v[0])
	return s != "0" && s != "false"
}

// DryRun is the dry_run label of r: "" without a dryRun parameter,
// "invalid" when one of its values is not "All", else its distinct values
// sorted and joined by commas ("All").
func DryRun(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	values := r.URL.Query()["dryRun"]
	seen := map[string]bool{}
	var out []string
	for _, v := range values {
		if v != "All" {
			return "invalid"
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// nonResourceSubresource is the subresource label of a request of one of
// the non-resource paths kube-apiserver instruments, and whether path is
// one: the health endpoints /healthz, /livez and /readyz (the whole
// report, not a single check's path), labelled with their path, and the
// OpenAPI v3 documents, labelled "openapi/v3" (the index) and
// "openapi/v3/" (any group-version's document). kube-apiserver counts
// those with empty group, version, resource, scope and component; it
// counts no other non-resource path (/version, /openapi/v2, discovery,
// /metrics, a single health check), and the set is fixed, so paths
// cannot make label values.
func nonResourceSubresource(path string) (string, bool) {
	switch path {
	case "/healthz", "/livez", "/readyz":
		return path, true
	case "/openapi/v3":
		return "openapi/v3", true
	}
	if strings.HasPrefix(path, "/openapi/v3/") {
		return "openapi/v3/", true
	}
	return "", false
}

// labelsOf are r's label values, and whether kube-apiserver counts a
// request like it answered with code, with or without its latency: a
// request of a served resource (and a known subresource) but a 405 of a
// method it does not serve, or of an
// instrumented non-resource path (nonResourceSubresource) with it, any
// other request only when refused with 429 by the in-flight limit or
// priority and fairness, with empty group, version and resource.
func (m *Metrics) labelsOf(r *http.Request, info *request.Info, code int) (l labels, counted, latency bool) {
	l = labels{verb: Verb(r, info), dryRun: DryRun(r), scope: Scope(info), component: Component}
	if info != nil && info.IsResourceRequest &&
		m.served[schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}] &&
		(info.Subresource == "" || Subresources[info.Subresource]) {
		l.group, l.version, l.resource, l.subresource = info.APIGroup, info.APIVersion, info.Resource, info.Subresource
		// A 405 is kube-apiserver's router answering a method the
		// resource has no handler for, before any instrumented one.
		counted := code != http.StatusMethodNotAllowed
		return l, counted, counted
	}
	if info == nil || !info.IsResourceRequest {
		if sub, ok := nonResourceSubresource(r.URL.Path); ok && code != http.StatusTooManyRequests {
			l.subresource, l.component = sub, ""
			return l, true, true
		}
	}
	return l, code == http.StatusTooManyRequests, false
}

// APIServerUser is the user the server's loopback client authenticates
// as, whose requests apiserver_selfrequest_total counts.
const APIServerUser = "system:apiserver"

// Response is what the metrics learn of one answered request.
type Response struct {
	Code     int
	Duration time.Duration // from its arrival to its handler's return
	Size     int64         // body bytes written
	// Excluded is the part of Duration left out of the SLI latency
	// (request.ExcludedLatency's Total).
	Excluded time.Duration
}

// Observe records one finished request r (its request info in its
// context) answered with code after d, its size unknown.
func (m *Metrics) Observe(r *http.Request, code int, d time.Duration) {
	m.ObserveResponse(r, Response{Code: code, Duration: d})
}

// ObserveResponse records one finished request r (its request info in its
// context) and its response.
func (m *Metrics) ObserveResponse(r *http.Request, res Response) {
	info := request.InfoFrom(r.Context())
	l, counted, withLatency := m.labelsOf(r, info, res.Code)
	if !counted {
		return
	}
	key := observerKey{labels: l, code: res.Code, latency: withLatency, sized: withLatency && sized(r, info),
		self: withLatency && selfRequest(r)}
	o, ok := m.observed.Load(key)
	if !ok {
		obs := &observers{requests: m.requests.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource,
			l.subresource, l.scope, l.component, strconv.Itoa(res.Code))}
		if withLatency {
			obs.latency = m.latency.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component)
		}
		if key.sized {
			obs.sizes = m.sizes.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component)
		}
		// kube-apiserver times in the SLI histogram every request it
		// times, but dry runs (any dryRun parameter).
		if withLatency && l.dryRun == "" {
			obs.sli = m.sli.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component)
		}
		if key.self {
			obs.self = m.selfRequests.WithLabelValues(l.verb, l.resource, l.subresource)
		}
		// The requests a route's handler served (timed: not the
		// router's 405).
		if removed, ok := m.deprecated[schema.GroupVersionResource{Group: l.group, Version: l.version, Resource: l.resource}]; ok && withLatency {
			obs.deprecated = m.deprecatedAPIs.WithLabelValues(l.group, l.version, l.resource, l.subresource, removed)
		}
		o, _ = m.observed.LoadOrStore(key, obs)
	}
	obs := o.(*observers)
	obs.requests.Inc()
	if obs.latency != nil {
		obs.latency.Observe(res.Duration.Seconds())
	}
	if obs.sizes != nil {
		obs.sizes.Observe(float64(res.Size))
	}
	if obs.sli != nil {
		obs.sli.Observe((res.Duration - res.Excluded).Seconds())
	}
	if obs.self != nil {
		obs.self.Inc()
	}
	if obs.deprecated != nil {
		obs.deprecated.Set(1)
	}
}

// selfRequest reports whether r was made by the server's loopback user
// (the user it acts as, after impersonation), as kube-apiserver counts its
// self-requests among the requests it times.
func selfRequest(r *http.Request) bool {
	u := request.UserFrom(r.Context())
	return u != nil && u.Name == APIServerUser
}

// sized reports whether kube-apiserver observes the response size of r, a
// request it times: it does for the routes it instruments as reads (a get,
// also of a getter subresource such as status or scale, and a list, a
// watch by parameter included, labelled WATCH), and for the non-resource
// paths it instruments (as gets whatever the method), not for writes, the
// legacy /watch/ paths or the subresources reported as CONNECT (exec,
// attach, portforward, proxy, and pods/log: its get route is instrumented
// with the overridden verb CONNECT, which the size check does not take
// for a read).
func sized(r *http.Request, info *request.Info) bool {
	if info == nil || !info.IsResourceRequest {
		return true
	}
	if method := strings.ToUpper(r.Method); method != http.MethodGet && method != http.MethodHead {
		return false
	}
	if watchPath(info) {
		return false
	}
	return !connectSubresources[info.Subresource]
}

// ObserveThrottled records a request r (its request info in its context)
// turned away with 429 by the in-flight limit or priority and fairness
// before any handler: counted, not timed, as kube-apiserver records
// dropped requests, and counted in apiserver_request_terminations_total
// as it records its self-defense terminations; group, version and
// resource are empty unless served (kube-apiserver would put the path in
// the termination's subresource, an unbounded label value).
func (m *Metrics) ObserveThrottled(r *http.Request) {
	l, _, _ := m.labelsOf(r, request.InfoFrom(r.Context()), http.StatusTooManyRequests)
	key := observerKey{labels: l, code: http.StatusTooManyRequests, throttled: true}
	o, ok := m.observed.Load(key)
	if !ok {
		code := strconv.Itoa(http.StatusTooManyRequests)
		o, _ = m.observed.LoadOrStore(key, &observers{
			requests: m.requests.WithLabelValues(l.verb, l.dryRun, l.group, l.version,
				l.resource, l.subresource, l.scope, l.component, code),
			terminations: m.terminations.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component, code),
		})
	}
	obs := o.(*observers)
	obs.requests.Inc()
	obs.terminations.Inc()
}

// WatchStarted counts an open watch of a served resource until the
// returned func is called. Its verb is WATCH for a watch asked by
// parameter; a watch of the legacy /watch/ path is LIST (GET when named),
// as kube-apiserver labels the gauge from the method and the parameter
// only.
func (m *Metrics) WatchStarted(info *request.Info) func() {
	if info == nil || !m.served[schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}] {
		return func() {}
	}
	sub := info.Subresource
	if !Subresources[sub] {
		sub = ""
	}
	scope := Scope(info)
	verb := "WATCH"
	if watchPath(info) {
		verb = "LIST"
		if scope == "resource" {
			verb = "GET"
		}
	}
	g := m.longRunning.WithLabelValues(verb, info.APIGroup, info.APIVersion, info.Resource, sub, scope, Component)
	g.Inc()
	return g.Dec
}

// ConnectStarted counts an open request r of a connect subresource
// (pods/exec, pods/attach, pods/portforward, nodes/proxy) of a served
// resource in apiserver_longrunning_requests until the returned func is
// called, as kube-apiserver tracks its connect handlers there: verb
// CONNECT, the resource's labels, scope resource. pods/log, though
// reported as CONNECT, is a get upstream, not tracked.
func (m *Metrics) ConnectStarted(r *http.Request, info *request.Info) func() {
	if info == nil || !info.IsResourceRequest || !connectSubresources[info.Subresource] || info.Subresource == "log" ||
		!m.served[schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}] {
		return func() {}
	}
	g := m.longRunning.WithLabelValues(Verb(r, info), info.APIGroup, info.APIVersion, info.Resource, info.Subresource,
		Scope(info), Component)
	g.Inc()
	return g.Dec
}

// watchPath reports whether info's path is a legacy watch path
// (/api/v1/watch/..., /apis/group/version/watch/...).
func watchPath(info *request.Info) bool {
	rest := strings.TrimPrefix(info.Path, "/")
	skip := 2 // api, version
	if info.APIPrefix == "apis" {
		skip = 3 // apis, group, version
	}
	for range skip {
		_, after, ok := strings.Cut(rest, "/")
		if !ok {
			return false
		}
		rest = after
	}
	return rest == "watch" || strings.HasPrefix(rest, "watch/")
}
