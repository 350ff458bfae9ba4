package apiserver

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The server's own writes at start and in its control loops (the system
// namespaces, the `kubernetes` Service, its Endpoints and EndpointSlice,
// the resources' bootstrap objects, the API Priority and Fairness
// configuration objects and their FlowSchemas' Dangling condition, the
// service repair events, and the post-start hooks' writes through
// PostStartHookContext.LoopbackClientConfig: the RBAC bootstrap policy)
// are requests of its loopback identity
// served by its full handler in process, as kube-apiserver's controllers
// make them through its loopback client: authenticated as
// system:apiserver, audited, counted in the request metrics, authorized,
// admitted, and recorded in managedFields under the manager
// "kube-apiserver" (the product of the loopback client's user agent,
// operation Update). In process rather than over the network, since the
// first of them come before Run serves; nothing but the transport
// differs from a request of kube-apiserver's loopback client.

// loopbackProduct is the program name of the loopback client's user agent,
// and so the field manager of its writes: kube-apiserver's loopback client
// sends client-go's default user agent, named after the kube-apiserver
// binary.
const loopbackProduct = "kube-apiserver"

// loopbackUserAgent is the user agent kube-apiserver's loopback client
// sends, client-go's default for the kube-apiserver binary: the version
// without its pre-release part, the platform and the commit (kubeproof
// has none to name: "unknown", as /version says).
func loopbackUserAgent(gitVersion string) string {
	version, _, _ := strings.Cut(gitVersion, "-")
	if version == "" {
		version = "unknown"
	}
	return fmt.Sprintf("%s/%s (%s/%s) kubernetes/unknown", loopbackProduct, version, runtime.GOOS, runtime.GOARCH)
}

// selfClients are client-go clients calling this server in process as
// its loopback identity.
type selfClients struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
	// config is the clients' configuration, the post-start hooks'
	// LoopbackClientConfig.
	config *rest.Config
}

// newSelfClients builds the in-process clients; s.handler must be set.
func (s *Server) newSelfClients() (*selfClients, error) {
	cfg := &rest.Config{
		// Never dialed: the transport serves the request itself.
		Host:        "https://" + LoopbackServerName,
		BearerToken: s.loopback.token,
		UserAgent:   loopbackUserAgent(s.cfg.GitVersion),
		Transport:   inProcessTransport{handler: s.handler, remoteAddr: s.loopbackRemoteAddr},
		// Not rate limited, as kube-apiserver's loopback configuration.
		QPS: -1,
		// Protobuf, as kube-apiserver's loopback client configuration (the
		// audit records its request and response objects as JSON all the
		// same). The dynamic client built on it speaks JSON.
		ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"},
		// The server's own requests' warnings (the Endpoints kind's
		// deprecation) are not logged: logs are quiet by default.
		WarningHandler: rest.NoWarnings{},
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the in-process loopback client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the in-process loopback dynamic client: %w", err)
	}
	return &selfClients{typed: typed, dynamic: dyn, config: cfg}, nil
}

// loopbackRemoteAddr is the client address of an in-process request:
// the loopback address kube-apiserver's loopback client connects from
// (that of the address Run listens on, 127.0.0.1 until it listens or when
// it is a name), the port an ephemeral one's stand-in.
func (s *Server) loopbackRemoteAddr() string {
	host := "127.0.0.1"
	if a := s.loopback.addr.Load(); a != nil {
		if h, _, err := net.SplitHostPort(*a); err == nil && net.ParseIP(h) != nil {
			host = h
		}
	}
	return net.JoinHostPort(host, "0")
}

// inProcessTransport is an http.RoundTripper serving each request with
// handler, as the server would once it came off the connection. Only for
// requests whose answer is complete when the handler returns (no watch,
// no upgrade).
type inProcessTransport struct {
	handler    http.Handler
	remoteAddr func() string
}

func (t inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	// What the server sees: the path and query only, and the peer.
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r.RequestURI = r.URL.RequestURI()
	r.Host = req.URL.Host
	r.RemoteAddr = t.remoteAddr()
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	if r.Body == nil {
		r.Body = http.NoBody
	}
	w := &bufferedResponse{header: http.Header{}}
	t.handler.ServeHTTP(w, r)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	w.WriteHeader(http.StatusOK)
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         r.Proto,
		ProtoMajor:    r.ProtoMajor,
		ProtoMinor:    r.ProtoMinor,
		Header:        w.sent,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// bufferedResponse is the http.ResponseWriter of an in-process request:
// the status, headers and body kept until the handler returns.
type bufferedResponse struct {
	header http.Header
	// sent are the headers as they were when the status was written.
	sent http.Header
	code int
	body bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.code == 0 {
		w.code, w.sent = code, w.header.Clone()
	}
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush implements http.Flusher: nothing to flush before the handler
// returns.
func (w *bufferedResponse) Flush() {}
