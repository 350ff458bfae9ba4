package kubelet

import (
	"bytes"
	"context"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// healthzServer is an API server stand-in for a bootstrap: /healthz
// answers 500 for the first failures requests (all of them when
// failures < 0), then "ok"; a CertificateSigningRequest's creation is
// refused (403), ending the bootstrap. It records each request as
// "METHOD path".
type healthzServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []string
}

func newHealthzServer(t *testing.T, failures int) *healthzServer {
	t.Helper()
	h := &healthzServer{}
	healthz := 0
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests = append(h.requests, r.Method+" "+r.URL.Path)
		fail := false
		if r.URL.Path == "/healthz" {
			healthz++
			fail = failures < 0 || healthz <= failures
		}
		h.mu.Unlock()
		switch {
		case r.URL.Path == "/healthz" && fail:
			http.Error(w, "[-]etcd failed: reason withheld\nhealthz check failed", http.StatusInternalServerError)
		case r.URL.Path == "/healthz":
			_, _ = w.Write([]byte("ok"))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"refused by the test","reason":"Forbidden","code":403}`))
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// recorded is what was asked so far.
func (h *healthzServer) recorded() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.requests...)
}

// bootstrapAgainst runs Bootstrap of node n1 with a bootstrap kubeconfig
// of h (a token user), returning its error and log.
func bootstrapAgainst(t *testing.T, h *healthzServer) (error, string) {
	t.Helper()
	dir := t.TempDir()
	boot := clientcmdapi.NewConfig()
	boot.Clusters["c"] = &clientcmdapi.Cluster{Server: h.srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})}
	boot.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"}
	boot.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "bootstrap"}
	boot.CurrentContext = "c"
	bootPath := filepath.Join(dir, "bootstrap-kubelet.conf")
	if err := clientcmd.WriteToFile(*boot, bootPath); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &log}, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := Bootstrap(ctx, filepath.Join(dir, "kubelet.conf"), bootPath, filepath.Join(dir, "pki"), "n1", logger)
	logMu.Lock()
	defer logMu.Unlock()
	return err, log.String()
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// csrCreate is the request creating a CertificateSigningRequest.
const csrCreate = "POST /apis/certificates.k8s.io/v1/certificatesigningrequests"

// TestBootstrapWaitsForTheAPIServer: as upstream's kubelet, the bootstrap
// asks the API server's /healthz (with the bootstrap credentials) until it
// answers, before it asks for a certificate; each failed attempt is
// logged "Failed to connect to apiserver". Before, it asked at once.
func TestBootstrapWaitsForTheAPIServer(t *testing.T) {
	h := newHealthzServer(t, 2)
	err, log := bootstrapAgainst(t, h)
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("bootstrap: %v, want the refused creation", err)
	}
	got := h.recorded()
	want := []string{"GET /healthz", "GET /healthz", "GET /healthz", csrCreate}
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(log, `msg="Failed to connect to apiserver"`); n != 2 {
		t.Errorf("%d failed attempts logged, want 2:\n%s", n, log)
	}
	if strings.Contains(log, "Error waiting for apiserver") {
		t.Errorf("the wait is logged as failed though the server answered:\n%s", log)
	}
}

// TestBootstrapAPIServerWaitEnds: a server whose /healthz never succeeds
// is waited for bootstrapServerWait (a minute; shortened here), then, as
// upstream's, the bootstrap logs "Error waiting for apiserver to come up"
// with "timed out waiting to connect to apiserver" and asks anyway.
func TestBootstrapAPIServerWaitEnds(t *testing.T) {
	defer func(d time.Duration) { bootstrapServerWait = d }(bootstrapServerWait)
	bootstrapServerWait = 3 * time.Second
	h := newHealthzServer(t, -1)
	err, log := bootstrapAgainst(t, h)
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("bootstrap: %v, want the refused creation", err)
	}
	got := h.recorded()
	if len(got) < 3 || got[0] != "GET /healthz" || got[1] != "GET /healthz" || got[len(got)-1] != csrCreate {
		t.Errorf("requests:\n%s\nwant /healthz at least twice, then the creation", strings.Join(got, "\n"))
	}
	if !strings.Contains(log, `msg="Error waiting for apiserver to come up" err="timed out waiting to connect to apiserver"`) {
		t.Errorf("log lacks upstream's wait error:\n%s", log)
	}
}
