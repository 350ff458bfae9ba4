package kubelet

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hookRequests serves HTTP (over TLS when tls is set) and keeps the
// requests it got.
type hookRequests struct {
	mu   sync.Mutex
	reqs []*http.Request
	port int
}

func newHookRequests(t *testing.T, tls bool) *hookRequests {
	t.Helper()
	hr := &hookRequests{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hr.mu.Lock()
		hr.reqs = append(hr.reqs, r)
		hr.mu.Unlock()
	})
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	hr.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return hr
}

func (hr *hookRequests) got() []*http.Request {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return slices.Clone(hr.reqs)
}

// hookPod runs an HTTP postStart hook against 127.0.0.1 (the sandbox's IP).
func hookPod(t *testing.T, name string, hg *v1.HTTPGetAction) (*v1.Pod, []string) {
	t.Helper()
	h, rec := eventHarness(t)
	h.krt = sandboxIPRuntime{Runtime: h.rt, ip: "127.0.0.1"}
	h.k = h.newKubelet(func(c *Config) { c.Recorder = rec })
	p := h.sync(h.create(h.pod(name, func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: hg}}
	})))
	return p, drain(rec)
}

// TestHTTPHookRequestAsUpstream: an HTTP lifecycle hook's request is
// built as upstream's handler runner builds it
// (NewRequestForHTTPGetAction with the "lifecycle" user agent): User-Agent
// "kube-lifecycle/1.37" and Accept "*/*" unless the hook's headers set
// them, the hook's headers, Host from a Host header, a path's query kept.
// Before, it carried the probes' "kube-probe/kubeproof", no Accept, and
// a query in the path was escaped into it.
func TestHTTPHookRequestAsUpstream(t *testing.T) {
	srv := newHookRequests(t, false)
	p, _ := hookPod(t, "hooked", &v1.HTTPGetAction{Path: "/started?from=kubelet", Port: intstr.FromInt32(int32(srv.port)),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Hook", Value: "1"}, {Name: "Host", Value: "web.example"}}})
	if cs := cstatus(p, "app"); cs.State.Running == nil {
		t.Fatalf("container %+v, want running", cs.State)
	}
	reqs := srv.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if ua := r.Header.Get("User-Agent"); ua != "kube-lifecycle/1.37" {
		t.Errorf("User-Agent %q, want kube-lifecycle/1.37", ua)
	}
	if a := r.Header.Get("Accept"); a != "*/*" {
		t.Errorf("Accept %q, want */*", a)
	}
	if r.Header.Get("X-Hook") != "1" || r.Host != "web.example" {
		t.Errorf("X-Hook %q Host %q, want the hook's headers", r.Header.Get("X-Hook"), r.Host)
	}
	if r.URL.Path != "/started" || r.URL.RawQuery != "from=kubelet" {
		t.Errorf("path %q query %q, want /started and from=kubelet", r.URL.Path, r.URL.RawQuery)
	}

	// The hook's own User-Agent is kept, an empty Accept removes it.
	srv2 := newHookRequests(t, false)
	hookPod(t, "hooked2", &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(srv2.port)),
		HTTPHeaders: []v1.HTTPHeader{{Name: "User-Agent", Value: "mine"}, {Name: "Accept", Value: ""}}})
	if reqs := srv2.got(); len(reqs) != 1 || reqs[0].Header.Get("User-Agent") != "mine" || len(reqs[0].Header.Values("Accept")) != 0 {
		t.Errorf("requests %v, want one with User-Agent mine and no Accept", reqs)
	}
}

// TestHTTPSHookAsUpstream: an HTTPS lifecycle hook does not verify the
// server's certificate (upstream's lifecycle client skips verification:
// it has nothing to verify with), and one answered over plain HTTP is
// sent again over HTTP without its Authorization header and succeeds,
// recording upstream's Warning LifecycleHTTPFallback "request to HTTPS
// lifecycle hook <host:port> got HTTP response, retry with HTTP
// succeeded". Before, both hooks failed and the container was killed.
func TestHTTPSHookAsUpstream(t *testing.T) {
	tlsSrv := newHookRequests(t, true)
	p, events := hookPod(t, "tls", &v1.HTTPGetAction{Path: "/", Scheme: v1.URISchemeHTTPS, Port: intstr.FromInt32(int32(tlsSrv.port))})
	if cs := cstatus(p, "app"); cs.State.Running == nil || len(tlsSrv.got()) != 1 {
		t.Errorf("HTTPS hook to a self-signed server: container %+v, %d requests; want running, 1", cs.State, len(tlsSrv.got()))
	}
	if slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Warning LifecycleHTTPFallback") }) {
		t.Errorf("events %q, want no fallback", events)
	}

	plain := newHookRequests(t, false)
	p, events = hookPod(t, "plain", &v1.HTTPGetAction{Path: "/", Scheme: v1.URISchemeHTTPS, Port: intstr.FromInt32(int32(plain.port)),
		HTTPHeaders: []v1.HTTPHeader{{Name: "Authorization", Value: "Bearer secret"}}})
	if cs := cstatus(p, "app"); cs.State.Running == nil {
		t.Errorf("HTTPS hook answered over HTTP: container %+v, want running", cs.State)
	}
	reqs := plain.got()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "" {
		t.Errorf("requests %v, want one, over HTTP, without Authorization", reqs)
	}
	want := "Warning LifecycleHTTPFallback request to HTTPS lifecycle hook 127.0.0.1:" + strconv.Itoa(plain.port) + " got HTTP response, retry with HTTP succeeded"
	if !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}

// TestHTTPHookPortAsUpstream: an HTTP hook's port is resolved as
// upstream's ResolveContainerPort: a name the container's ports lack is
// tried as a number, and that error is the hook's ("strconv.Atoi: parsing
// ..."), in the waiting message after upstream's runner's prefix. Before,
// the error was kubeproof's own ("couldn't find port ...").
func TestHTTPHookPortAsUpstream(t *testing.T) {
	p, _ := hookPod(t, "noport", &v1.HTTPGetAction{Path: "/started", Port: intstr.FromString("web")})
	want := `HTTP lifecycle hook (/started) for Container "app" in Pod "noport_default(uid-noport)" failed - error: strconv.Atoi: parsing "web": invalid syntax`
	if w := cstatus(p, "app").State.Waiting; w == nil || w.Message != want {
		t.Errorf("waiting %+v, want message %q", w, want)
	}
}
