package server_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// policy is the API server's side of the reviews in these tests.
type policy struct {
	mu   sync.Mutex
	sars []authorizationv1.SubjectAccessReviewSpec
}

// allowed: the API server's kubelet client may do anything; "metrics"
// may read nodes/metrics; group "readers" may get nodes/proxy of node-a
// only; nobody else anything.
func (p *policy) allowed(s authorizationv1.SubjectAccessReviewSpec) bool {
	ra := s.ResourceAttributes
	switch {
	case ra == nil || ra.Resource != "nodes" || ra.Version != "v1":
		return false
	case s.User == "kube-apiserver-kubelet-client":
		return true
	case s.User == "metrics":
		return ra.Verb == "get" && ra.Subresource == "metrics"
	case slices.Contains(s.Groups, "readers"):
		return ra.Verb == "get" && ra.Subresource == "proxy" && ra.Name == "node-a"
	}
	return false
}

func (p *policy) install(c *fake.Clientset) {
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		p.mu.Lock()
		p.sars = append(p.sars, sar.Spec)
		p.mu.Unlock()
		sar.Status.Allowed = p.allowed(sar.Spec)
		return true, sar, nil
	})
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "good-token" {
			tr.Status.Authenticated = true
			tr.Status.User = authenticationv1.UserInfo{Username: "token-user", Groups: []string{"readers"}}
		}
		return true, tr, nil
	})
}

func (p *policy) reviews() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sars)
}

func newAuthEnv(t *testing.T, p *policy, nodes ...string) *env {
	return newEnvWith(t, func(c *fake.Clientset) *server.Auth {
		p.install(c)
		return server.NewAuth(server.AuthOptions{Client: c, TokenWebhook: true})
	}, nodes...)
}

// as returns an HTTP client presenting a certificate for cn from the
// cluster CA, or none (cn "") with an optional bearer token.
func (e *env) as(cn, token string) *http.Client {
	e.t.Helper()
	cfg := *e.rest
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = nil, nil
	if cn != "" {
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = newClientCert(e.t, e.caKey, e.caCert, cn)
	}
	cfg.BearerToken = token
	tr, err := restclient.TransportFor(&cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	e.t.Cleanup(c.CloseIdleConnections)
	return c
}

func (e *env) status(c *http.Client, method, path string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.ctx, method, e.base+path, nil)
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func TestAuthAllowedAndDeniedPerPath(t *testing.T) {
	p := &policy{}
	e := newAuthEnv(t, p, "node-a")
	e.runPod("node-a", "web", map[string]string{"sim.kubeproof.io/logs": "hello"})
	apiserver, metrics, stranger := e.as("kube-apiserver-kubelet-client", ""), e.as("metrics", ""), e.as("stranger", "")
	token, badToken, nobody := e.as("", "good-token"), e.as("", "bad-token"), e.as("", "")
	for _, tc := range []struct {
		who    string
		c      *http.Client
		method string
		path   string
		code   int
		body   string
	}{
		{"no credentials", nobody, "GET", "/healthz", 401, "Unauthorized"},
		{"unknown token", badToken, "GET", "/healthz", 401, "Unauthorized"},
		{"api server", apiserver, "GET", "/healthz", 200, "ok"},
		{"api server", apiserver, "GET", "/containerLogs/default/web/app", 200, "hello"},
		{"api server", apiserver, "GET", "/metrics", 200, ""},
		{"metrics reader", metrics, "GET", "/metrics", 200, ""},
		{"metrics reader", metrics, "GET", "/containerLogs/default/web/app", 403, "Forbidden (user=metrics, verb=get, resource=nodes, subresource=proxy)"},
		{"metrics reader", metrics, "GET", "/healthz", 403, "Forbidden (user=metrics, verb=get, resource=nodes, subresource=healthz)"},
		{"stranger", stranger, "GET", "/healthz", 403, "Forbidden (user=stranger, verb=get, resource=nodes, subresource=healthz)"},
		{"stranger", stranger, "POST", "/exec/default/web/app?command=true&stdout=1", 403, "Forbidden (user=stranger, verb=create, resource=nodes, subresource=proxy)"},
		// healthz falls back to nodes/proxy, which the token's group has.
		{"token", token, "GET", "/healthz", 200, "ok"},
		{"token", token, "GET", "/containerLogs/default/web/app", 200, "hello"},
		{"token", token, "GET", "/metrics", 403, "Forbidden (user=token-user, verb=get, resource=nodes, subresource=metrics)"},
		{"token", token, "POST", "/exec/default/web/app?command=true&stdout=1", 403, "Forbidden (user=token-user, verb=create, resource=nodes, subresource=proxy)"},
	} {
		code, body := e.status(tc.c, tc.method, tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("%s %s %s: %d %q, want %d %q", tc.who, tc.method, tc.path, code, body, tc.code, tc.body)
		}
	}
	// Every review named node-a (the only node) as the resource name.
	p.mu.Lock()
	for _, s := range p.sars {
		if s.ResourceAttributes.Name != "node-a" {
			t.Errorf("review for %q, want node-a", s.ResourceAttributes.Name)
		}
	}
	p.mu.Unlock()
}

func TestAuthExecAsTheAPIServerAndDenied(t *testing.T) {
	p := &policy{}
	e := newAuthEnv(t, p, "node-a")
	e.runPod("node-a", "web", nil)
	for transport, ex := range executors(t, e, execQuery("app", "sh", "-c", "exit 3")) {
		err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
		var exitErr exec.CodeExitError
		if !errors.As(err, &exitErr) || exitErr.Code != 3 {
			t.Errorf("%s: exec as the API server: %v, want exit code 3", transport, err)
		}
	}
	// A client of the same CA without the right is refused the upgrade.
	stranger := *e.rest
	stranger.TLSClientConfig.CertData, stranger.TLSClientConfig.KeyData = newClientCert(t, e.caKey, e.caCert, "stranger")
	ex, err := remotecommand.NewWebSocketExecutor(&stranger, "GET", e.base+execQuery("app", "true"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &out}); err == nil {
		t.Errorf("exec as a stranger succeeded")
	}
}

func TestAuthCachesDecisions(t *testing.T) {
	p := &policy{}
	e := newAuthEnv(t, p, "node-a")
	c := e.as("kube-apiserver-kubelet-client", "")
	for range 5 {
		if code, _ := e.status(c, "GET", "/healthz"); code != 200 {
			t.Fatalf("healthz: %d", code)
		}
	}
	if n := p.reviews(); n != 1 {
		t.Errorf("%d reviews for five identical requests, want 1 (cached)", n)
	}
}

func TestAuthCacheExpires(t *testing.T) {
	p := &policy{}
	client := fake.NewClientset()
	p.install(client)
	now := time.Unix(1000, 0)
	a := server.NewAuth(server.AuthOptions{Client: client, Now: func() time.Time { return now }})
	attrs := server.Attributes{User: server.User{Name: "stranger"}, Verb: "get", Subresource: "proxy", Node: "n"}
	allowedAttrs := server.Attributes{User: server.User{Name: "metrics"}, Verb: "get", Subresource: "metrics", Node: "n"}
	for range 2 {
		if ok, err := a.Authorize(t.Context(), attrs); ok || err != nil {
			t.Fatalf("stranger allowed: %v %v", ok, err)
		}
		if ok, err := a.Authorize(t.Context(), allowedAttrs); !ok || err != nil {
			t.Fatalf("metrics denied: %v %v", ok, err)
		}
	}
	if n := p.reviews(); n != 2 {
		t.Fatalf("%d reviews, want 2", n)
	}
	now = now.Add(31 * time.Second) // the denial expires, the allowance not
	_, _ = a.Authorize(t.Context(), attrs)
	_, _ = a.Authorize(t.Context(), allowedAttrs)
	if n := p.reviews(); n != 3 {
		t.Fatalf("%d reviews after 31 s, want 3", n)
	}
	now = now.Add(5 * time.Minute)
	_, _ = a.Authorize(t.Context(), allowedAttrs)
	if n := p.reviews(); n != 4 {
		t.Fatalf("%d reviews after 5 min, want 4", n)
	}
}

func TestRequestAttributes(t *testing.T) {
	u := server.User{Name: "u"}
	for _, tc := range []struct {
		method, path       string
		verb, sub, fallbck string
	}{
		{"GET", "/containerLogs/ns/p/c", "get", "proxy", ""},
		{"POST", "/exec/ns/p/c", "create", "proxy", ""},
		{"GET", "/exec/ns/p/c", "get", "proxy", ""},
		{"POST", "/portForward/ns/p", "create", "proxy", ""},
		{"GET", "/stats/summary", "get", "stats", ""},
		{"GET", "/metrics", "get", "metrics", ""},
		{"GET", "/metrics/cadvisor", "get", "metrics", ""},
		{"GET", "/metricsfoo", "get", "proxy", ""},
		{"GET", "/logs/syslog", "get", "log", ""},
		{"GET", "/spec/", "get", "spec", ""},
		{"POST", "/checkpoint/ns/p/c", "create", "checkpoint", ""},
		{"GET", "/healthz", "get", "healthz", "proxy"},
		{"GET", "/configz", "get", "configz", "proxy"},
		{"GET", "/pods", "get", "pods", "proxy"},
		{"PUT", "/x", "update", "proxy", ""},
		{"PATCH", "/x", "patch", "proxy", ""},
		{"DELETE", "/x", "delete", "proxy", ""},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		a := server.RequestAttributes(u, req, "n")
		if a.Verb != tc.verb || a.Subresource != tc.sub || a.Fallback != tc.fallbck || a.Node != "n" {
			t.Errorf("%s %s: %+v, want verb %s subresource %s fallback %q", tc.method, tc.path, a, tc.verb, tc.sub, tc.fallbck)
		}
	}
}

// TestSetAuthSwitchesChecksOn: a Mux created without Auth serves any
// client the TLS layer admits until SetAuth, then checks every request.
func TestSetAuthSwitchesChecksOn(t *testing.T) {
	p := &policy{}
	var client *fake.Clientset
	e := newEnvWith(t, func(c *fake.Clientset) *server.Auth { client = c; p.install(c); return nil }, "node-a")
	stranger := e.as("stranger", "")
	if code, _ := e.status(stranger, "GET", "/healthz"); code != 200 {
		t.Fatalf("before SetAuth: %d", code)
	}
	e.mux.SetAuth(server.NewAuth(server.AuthOptions{Client: client}))
	if code, body := e.status(stranger, "GET", "/healthz"); code != 403 {
		t.Errorf("after SetAuth: %d %q, want 403", code, body)
	}
	if code, _ := e.status(e.as("kube-apiserver-kubelet-client", ""), "GET", "/healthz"); code != 200 {
		t.Errorf("the API server after SetAuth: %d", code)
	}
	e.mux.SetAuth(nil)
	if code, _ := e.status(stranger, "GET", "/healthz"); code != 200 {
		t.Errorf("after SetAuth(nil): %d", code)
	}
}
