// Package server is the kubelet API: the HTTPS endpoints the API server
// proxies pods/log, pods/exec and nodes/proxy to.
//
//	GET  /healthz                                  "ok"
//	GET  /metrics                                  Prometheus metrics
//	GET  /containerLogs/{namespace}/{pod}/{container}
//	     ?follow&previous&timestamps&tailLines&sinceSeconds&sinceTime&limitBytes
//	GET|POST /exec/{namespace}/{pod}/{container}?command=...&stdin&stdout&stderr&tty
//	GET|POST /attach/{namespace}/{pod}/{container}?stdin&stdout&stderr&tty
//	     upgraded to WebSocket (v5.channel.k8s.io, v4.channel.k8s.io) or
//	     SPDY/3.1 (the same two), as kubectl and client-go's remotecommand
//	     executors speak them: stdin, stdout, stderr, the exit Status and
//	     TTY resizes (streaming.go)
//	GET|POST /portForward/{namespace}/{pod}
//	     upgraded to SPDY/3.1 (portforward.k8s.io): one data and one error
//	     stream per forwarded connection, connected to the port through
//	     the runtime (a simulated pod serves HTTP on every port)
//
// One Mux serves any number of kubelets: `kubeproof up` runs all its
// simulated kubelets in one process and registers them all with one Mux
// behind one HTTPS port; a request for a pod goes to the kubelet that runs
// it. The standalone `kubeproof kubelet` registers just itself.
//
// Exec and attach are interactive, as upstream's: with a CRI runtime
// (IndirectStreamingRuntime) the kubelet asks the runtime for its streaming
// URL and proxies the client's upgraded connection there; with the
// simulation (DirectStreamingRuntime) it serves the protocol itself and
// hands the runtime the streams. A command's non-zero exit ends the session
// with a Status of reason NonZeroExitCode and an ExitCode cause.
//
// Authentication and authorization: with Options.Auth (auth.go) each
// request is authenticated (client certificate, else a bearer token by
// TokenReview) and authorized by a SubjectAccessReview on the node
// (nodes/proxy, nodes/stats, nodes/metrics, nodes/log, …), as kubelet's
// Webhook modes; TLSOptions.OptionalClientCert lets token clients in.
// Without Auth, TLS client certificates are the only check (see
// TLSConfig): any client certificate of the client CA may use every
// endpoint.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Kubelet is what the API needs from a kubelet; *kubelet.Kubelet
// implements it.
type Kubelet interface {
	NodeName() string
	// GetPodByName returns the pod as the kubelet knows it (read-only).
	GetPodByName(namespace, name string) (*v1.Pod, bool)
	ContainerLogs(ctx context.Context, namespace, pod, container string, previous bool, opts runtime.LogOptions) ([]runtime.LogLine, error)
	// ContainerRunning reports whether the container's latest instance runs.
	ContainerRunning(ctx context.Context, namespace, pod, container string) bool
	// Runtime is the kubelet's container runtime; exec and attach use it
	// when it is a DirectStreamingRuntime or an IndirectStreamingRuntime.
	Runtime() runtime.Runtime
	RunningPods() int
	// LifecycleHTTPFallbacks counts the HTTPS lifecycle hooks that
	// succeeded over HTTP after an HTTP answer.
	LifecycleHTTPFallbacks() uint64
}

// Options configure a Mux. Zero fields take defaults.
type Options struct {
	// FollowPollInterval is how often a followed log is checked for new
	// lines (250 ms).
	FollowPollInterval time.Duration
	// StreamCreationTimeout bounds how long exec waits for the client's
	// SPDY streams (30 s, upstream's default).
	StreamCreationTimeout time.Duration
	Logger                *slog.Logger
	// Auth, when set, authenticates and authorizes every request (see
	// auth.go); without it every client the TLS layer admits is served.
	Auth *Auth
}

// Mux is the kubelet API's http.Handler for a set of kubelets.
type Mux struct {
	opts     Options
	log      *slog.Logger
	registry *prometheus.Registry
	requests *prometheus.CounterVec

	// auth is Options.Auth, or what SetAuth set; nil: no checks.
	auth atomic.Pointer[Auth]

	mu       sync.RWMutex
	kubelets map[string]Kubelet // by node name
}

// NewMux returns a Mux serving no kubelet yet.
func NewMux(opts Options) *Mux {
	if opts.FollowPollInterval <= 0 {
		opts.FollowPollInterval = 250 * time.Millisecond
	}
	if opts.StreamCreationTimeout <= 0 {
		opts.StreamCreationTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Mux{opts: opts, log: opts.Logger, kubelets: map[string]Kubelet{}, registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "http_requests_total",
		Help: stability.Alpha.Help("Number of HTTP requests received by the kubelet API, by method and path (its first segment)."),
	}, []string{"method", "path"})
	m.registry.MustRegister(m.requests, runningPodsCollector{m}, httpFallbacksCollector{m}, certificateCollector{m, time.Now})
	if opts.Auth != nil {
		m.auth.Store(opts.Auth)
	}
	return m
}

// SetAuth switches authentication and authorization on (or off, with
// nil) for the requests that follow: a Mux serving in-process kubelets is
// created before the API server its Auth reviews against is up.
func (m *Mux) SetAuth(a *Auth) { m.auth.Store(a) }

// Add registers k; requests for its pods go to it.
func (m *Mux) Add(k Kubelet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kubelets[k.NodeName()] = k
}

// Remove unregisters the kubelet of a node.
func (m *Mux) Remove(nodeName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kubelets, nodeName)
}

// kubeletFor returns the kubelet running namespace/name and the pod. If
// several do (a pod recreated under the same name on another node while
// the old one terminates), the one whose pod is not being deleted wins.
func (m *Mux) kubeletFor(namespace, name string) (Kubelet, *v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var found Kubelet
	var foundPod *v1.Pod
	for _, k := range m.kubelets {
		p, ok := k.GetPodByName(namespace, name)
		if !ok {
			continue
		}
		if p.DeletionTimestamp == nil {
			return k, p, true
		}
		found, foundPod = k, p
	}
	return found, foundPod, found != nil
}

// ServeHTTP implements http.Handler.
func (m *Mux) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	m.requests.WithLabelValues(req.Method, parts[0]).Inc()
	if a := m.auth.Load(); a != nil && !a.authorizeRequest(w, req, m.nodeOf(parts)) {
		return
	}
	switch parts[0] {
	case "healthz":
		if len(parts) > 1 {
			break
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	case "metrics":
		if len(parts) > 1 {
			break
		}
		promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}).ServeHTTP(w, req)
		return
	case "containerLogs":
		if req.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if len(parts) != 4 {
			http.Error(w, "path must be /containerLogs/{namespace}/{pod}/{container}", http.StatusBadRequest)
			return
		}
		m.serveContainerLogs(w, req, parts[1], parts[2], parts[3])
		return
	case "portForward":
		if req.Method != http.MethodGet && req.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if len(parts) != 3 {
			http.Error(w, "path must be /portForward/{namespace}/{pod}", http.StatusBadRequest)
			return
		}
		m.servePortForward(w, req, parts[1], parts[2])
		return
	case "attach":
		if req.Method != http.MethodGet && req.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if len(parts) != 4 {
			http.Error(w, "path must be /attach/{namespace}/{pod}/{container}", http.StatusBadRequest)
			return
		}
		m.serveAttach(w, req, parts[1], parts[2], parts[3])
		return
	case "exec":
		if req.Method != http.MethodGet && req.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if len(parts) != 4 {
			http.Error(w, "path must be /exec/{namespace}/{pod}/{container}", http.StatusBadRequest)
			return
		}
		m.serveExec(w, req, parts[1], parts[2], parts[3])
		return
	}
	http.NotFound(w, req)
}

// nodeOf names the node a request is about, for authorization: the node
// running the pod for pod paths, the only kubelet of a Mux serving one,
// and "" (every node) when a shared Mux cannot tell.
func (m *Mux) nodeOf(parts []string) string {
	switch parts[0] {
	case "containerLogs", "exec", "attach", "portForward":
		if len(parts) >= 3 {
			if k, _, ok := m.kubeletFor(parts[1], parts[2]); ok {
				return k.NodeName()
			}
		}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.kubelets) == 1 {
		for name := range m.kubelets {
			return name
		}
	}
	return ""
}

// runningPodsCollector reports kubelet_running_pods (ALPHA upstream, as
// kubelet_http_requests_total) per registered node.
type runningPodsCollector struct{ m *Mux }

var runningPodsDesc = prometheus.NewDesc("kubelet_running_pods",
	stability.Alpha.Help("Number of pods the kubelet has admitted and is running, by node (one series per kubelet this server serves)."),
	[]string{"node"}, nil)

func (c runningPodsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- runningPodsDesc }

func (c runningPodsCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	for name, k := range c.m.kubelets {
		ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(k.RunningPods()), name)
	}
}

// httpFallbacksCollector reports upstream's
// kubelet_lifecycle_handler_http_fallbacks_total (an ALPHA counter, its
// help text upstream's as component-base exposes it) per registered node.
type httpFallbacksCollector struct{ m *Mux }

var httpFallbacksDesc = prometheus.NewDesc("kubelet_lifecycle_handler_http_fallbacks_total",
	stability.Alpha.Help("The number of times lifecycle handlers successfully fell back to http from https."),
	[]string{"node"}, nil)

func (c httpFallbacksCollector) Describe(ch chan<- *prometheus.Desc) { ch <- httpFallbacksDesc }

func (c httpFallbacksCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	for name, k := range c.m.kubelets {
		ch <- prometheus.MustNewConstMetric(httpFallbacksDesc, prometheus.CounterValue, float64(k.LifecycleHTTPFallbacks()), name)
	}
}

// lookupContainer resolves the pod and the container in its spec (an app,
// init or ephemeral container), writing upstream's 404s with writeError
// when not found.
func (m *Mux) lookupContainer(writeError func(code int, msg string), namespace, pod, container string) (Kubelet, *v1.Pod, *v1.Container, bool) {
	k, p, ok := m.kubeletFor(namespace, pod)
	if !ok {
		writeError(http.StatusNotFound, fmt.Sprintf("pod %q does not exist", pod))
		return nil, nil, nil, false
	}
	for _, list := range [][]v1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == container {
				return k, p, &list[i], true
			}
		}
	}
	for i := range p.Spec.EphemeralContainers {
		if c := &p.Spec.EphemeralContainers[i].EphemeralContainerCommon; c.Name == container {
			return k, p, (*v1.Container)(c), true
		}
	}
	writeError(http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", container, pod))
	return nil, nil, nil, false
}
