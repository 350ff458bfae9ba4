package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// TestProxyCredentialsNotForwarded: the caller's credentials never reach
// the pod behind pods/proxy. As kube-apiserver's authentication filter
// drops the Authorization header once it authenticated the request, and
// its impersonation filter drops the Impersonate-* headers once it
// allowed them, the pod sees neither the bearer token nor the
// impersonation headers; it does see apimachinery's X-Forwarded-* headers
// and the caller's other headers.
func TestProxyCredentialsNotForwarded(t *testing.T) {
	tokens, err := auth.ParseTokenFile(strings.NewReader("root-token,root,1000,\"system:masters\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, n := newProxyEnv(t, func(c *apiserver.Config) {
		c.TokenAuthenticators = []auth.TokenAuthenticator{tokens}
	})
	got := make(chan http.Header, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer backend.Close()
	n.route("10.0.0.7:8080", backend)
	createPodWithIP(t, e, "web", "10.0.0.7", true)

	// A client without a certificate: the token is its only credential.
	tr := e.client.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = nil
	tokenOnly := &http.Client{Transport: tr}
	r := e.doWith(tokenOnly, "GET", "/api/v1/namespaces/default/pods/web/proxy/x", nil,
		"Authorization", "Bearer root-token", "Impersonate-User", "bob", "Impersonate-Group", "devs",
		"Impersonate-Extra-Scopes", "s", "Impersonate-Uid", "42", "X-Custom", "kept")
	if r.code != http.StatusOK {
		t.Fatalf("proxy answered %d: %s", r.code, r.body)
	}
	h := <-got
	var names []string
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "Authorization" || strings.HasPrefix(k, "Impersonate-") {
			t.Errorf("the pod received the caller's %s header: %q", k, h.Values(k))
		}
	}
	if h.Get("X-Custom") != "kept" || h.Get("X-Forwarded-Uri") != "/api/v1/namespaces/default/pods/web/proxy/x" {
		t.Errorf("the pod's headers: %v", names)
	}
}

// TestProxyDryRunRefused: as kube-apiserver's connect handler, pods/proxy
// and services/proxy refuse a request naming dryRun (any value, even
// empty) with 400 "dryRun is not supported" before looking the pod or
// Service up; nothing is sent to the pod.
func TestProxyDryRunRefused(t *testing.T) {
	e, n := newProxyEnv(t, nil)
	backend := httptest.NewServer(echoBackend("plain"))
	defer backend.Close()
	n.route("10.0.0.7:8080", backend)
	createPodWithIP(t, e, "web", "10.0.0.7", true)
	for _, path := range []string{
		"/api/v1/namespaces/default/pods/web/proxy/x?dryRun=All",
		"/api/v1/namespaces/default/pods/web/proxy/x?a=b&dryRun=",
		"/api/v1/namespaces/default/pods/missing/proxy?dryRun=All",
		"/api/v1/namespaces/default/services/missing:80/proxy/x?dryRun=All",
	} {
		for _, m := range []string{"GET", "POST"} {
			expectStatus(t, e.do(m, path, nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, "dryRun is not supported")
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.dialed) != 0 {
		t.Errorf("a dry-run proxy request reached the network: %v", n.dialed)
	}
}

// TestProxyPatchBodyNotAudited: a PATCH through pods/proxy is a connect
// request, not a patch of an object: as kube-apiserver (whose patch
// handler, not its audit filter, records a patch's body), its audit event
// has no requestObject even at level RequestResponse, and the audit
// filter does not read the body ahead of the proxy: the pod gets it whole.
func TestProxyPatchBodyNotAudited(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, n := newProxyEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	backend := httptest.NewServer(echoBackend("plain"))
	defer backend.Close()
	n.route("10.0.0.7:8080", backend)
	createPodWithIP(t, e, "web", "10.0.0.7", true)
	r := e.do("PATCH", "/api/v1/namespaces/default/pods/web/proxy/p", []byte(`{"secret":"s3cr3t"}`), "Audit-ID", "proxy-patch")
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), `plain PATCH /p ? body={"secret":"s3cr3t"}`) {
		t.Fatalf("PATCH through the proxy: %d %s", r.code, r.body)
	}
	ev := b.stage("proxy-patch", audit.StageResponseComplete)
	if ev == nil {
		t.Fatal("no ResponseComplete event")
	}
	if len(ev.RequestObject) != 0 {
		t.Errorf("the proxied PATCH body was audited as requestObject: %s", ev.RequestObject)
	}
	if ev.Verb != "patch" || ev.ObjectRef == nil || ev.ObjectRef.Subresource != "proxy" {
		t.Errorf("event verb %q objectRef %+v", ev.Verb, ev.ObjectRef)
	}
}

// TestProxyPatchBodyStreamed: with an audit policy recording request
// bodies, a PATCH through pods/proxy is still streamed to the pod as
// kube-apiserver streams it (its audit filter never reads a body): the
// pod answers the first bytes while the client has not finished sending.
// Before, the audit filter read the body ahead (up to its 3 MiB limit or
// the end) and the request hung until the client's deadline.
func TestProxyPatchBodyStreamed(t *testing.T) {
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, n := newProxyEnv(t, func(c *apiserver.Config) {
		c.AuditPolicy, c.AuditBackend = policy, &auditEvents{evs: map[string][]*audit.Event{}}
	})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Go's HTTP/1 server reads no body once the answer started
		// unless told to.
		_ = http.NewResponseController(w).EnableFullDuplex()
		first := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, first); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(first)
		_ = http.NewResponseController(w).Flush()
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer backend.Close()
	n.route("10.0.0.7:8080", backend)
	createPodWithIP(t, e, "web", "10.0.0.7", true)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, "PATCH", e.url+"/api/v1/namespaces/default/pods/web/proxy/stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	go func() { _, _ = pw.Write([]byte("hello")) }()
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("the pod's answer never came while the body was still open: %v", err)
	}
	defer resp.Body.Close()
	got := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != "hello" || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %d %q %v", resp.StatusCode, got, err)
	}
}
