package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// webhookReceiver is an audit service: it answers the statuses queued
// (then 200) and keeps the EventLists it was sent.
type webhookReceiver struct {
	mu       sync.Mutex
	statuses []int
	lists    []EventList
	types    []string
}

func (h *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	var l EventList
	if r.Method != http.MethodPost || json.Unmarshal(body, &l) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.types = append(h.types, r.Header.Get("Content-Type"))
	if len(h.statuses) > 0 {
		code := h.statuses[0]
		h.statuses = h.statuses[1:]
		http.Error(w, "try later", code)
		return
	}
	h.lists = append(h.lists, l)
}

// webhookKubeconfig writes a kubeconfig naming server.
func webhookKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit-webhook.kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s
users:
- name: apiserver
  user:
    token: secret
contexts:
- name: audit
  context: {cluster: audit, user: apiserver}
current-context: audit
`, server)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// backoffWebhook is a webhook backend posting to server with a 10s
// initial backoff and no jitter, its waits appended to *slept instead of
// slept.
func backoffWebhook(t *testing.T, server string, m *Metrics, slept *[]time.Duration) *WebhookBackend {
	t.Helper()
	w, err := NewWebhookBackend(webhookKubeconfig(t, server), 10*time.Second, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.client.CloseIdleConnections)
	w.sleep = func(_ context.Context, d time.Duration) error { *slept = append(*slept, d); return nil }
	w.jitter = func() float64 { return 0 }
	return w
}

func TestWebhookBackoffSchedule(t *testing.T) {
	var got []time.Duration
	for n := range 4 {
		got = append(got, webhookBackoff(10*time.Second, n, 0))
	}
	if fmt.Sprint(got) != "[10s 15s 22.5s 33.75s]" {
		t.Errorf("waits %v, want 10s ×1.5 each retry", got)
	}
	if d := webhookBackoff(10*time.Second, 0, 0.5); d != 11*time.Second {
		t.Errorf("jitter 0.5: %v, want 11s (up to 20%% more)", d)
	}
}

// TestWebhookPostsEventListWithRetries: events go as one audit.k8s.io/v1
// EventList per call; a failing answer is retried after the backoff, up
// to 5 attempts, then the events count as plugin "webhook" errors.
func TestWebhookPostsEventListWithRetries(t *testing.T) {
	recv := &webhookReceiver{statuses: []int{500, 503}}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	m := NewMetrics()
	var slept []time.Duration
	w := backoffWebhook(t, srv.URL+"/audit", m, &slept)

	if !w.ProcessEvents(context.Background(), []*Event{{AuditID: "a", Level: LevelMetadata}, {AuditID: "b", Level: LevelMetadata}}) {
		t.Fatal("delivery after two failures reported failed")
	}
	if fmt.Sprint(slept) != "[10s 15s]" {
		t.Errorf("waited %v between attempts, want [10s 15s]", slept)
	}
	if len(recv.lists) != 1 || len(recv.lists[0].Items) != 2 || recv.lists[0].Kind != "EventList" ||
		recv.lists[0].APIVersion != "audit.k8s.io/v1" || recv.lists[0].Items[1].AuditID != "b" {
		t.Fatalf("received %+v", recv.lists)
	}
	if recv.types[0] != "application/json" {
		t.Errorf("Content-Type %q", recv.types[0])
	}

	recv.statuses = []int{500, 500, 500, 500, 500, 500}
	slept = nil
	if w.ProcessEvent(&Event{AuditID: "c"}) {
		t.Error("delivery failing 5 times reported done")
	}
	if len(slept) != 4 || len(recv.statuses) != 1 {
		t.Errorf("%d waits, %d unused failures: want 5 attempts (4 waits)", len(slept), len(recv.statuses))
	}
	if n := counterValue(t, m.errors.WithLabelValues(PluginWebhook)); n != 1 {
		t.Errorf("apiserver_audit_error_total{plugin=webhook} = %v, want 1", n)
	}
	// A cancelled context ends the retries.
	recv.statuses = []int{500, 500}
	ctx, cancel := context.WithCancel(context.Background())
	w.sleep = func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }
	if w.ProcessEvents(ctx, []*Event{{AuditID: "d"}}) {
		t.Error("delivery cancelled reported done")
	}
}

func TestWebhookBadKubeconfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(p, []byte("clusters: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWebhookBackend(p, time.Second, nil); err == nil {
		t.Error("a broken kubeconfig was accepted")
	}
	if _, err := NewWebhookBackend(filepath.Join(t.TempDir(), "missing"), time.Second, nil); err == nil {
		t.Error("a missing kubeconfig was accepted")
	}
}

// TestWebhookSuccessIsUpTo206: as client-go's REST client under
// kube-apiserver's webhook, only 200-206 answers deliver the events; a
// 207 (or any later 2xx) is a failure, retried.
func TestWebhookSuccessIsUpTo206(t *testing.T) {
	recv := &webhookReceiver{statuses: []int{http.StatusMultiStatus, http.StatusIMUsed}}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	var slept []time.Duration
	w := backoffWebhook(t, srv.URL, nil, &slept)
	if !w.ProcessEvent(&Event{AuditID: "a"}) {
		t.Fatal("delivery reported failed")
	}
	if fmt.Sprint(slept) != "[10s 15s]" || len(recv.lists) != 1 {
		t.Errorf("waits %v, %d lists kept: want the 207 and 226 answers retried", slept, len(recv.lists))
	}
}

// TestWebhookServerURL: the kubeconfig's server is read as client-go
// reads it for kube-apiserver's webhook: without a scheme it is http
// unless TLS is configured (CA, client certificate or insecure), and its
// path is the one posted to, cleaned ("/audit/" is /audit).
func TestWebhookServerURL(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	for _, server := range []string{srv.Listener.Addr().String(), srv.URL + "/audit/"} {
		w, err := NewWebhookBackend(webhookKubeconfig(t, server), time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.sleep = func(context.Context, time.Duration) error { return errors.New("no retries") }
		if !w.ProcessEvent(&Event{AuditID: "a"}) {
			t.Errorf("server %q: not delivered", server)
		}
		w.client.CloseIdleConnections()
	}
	if fmt.Sprint(paths) != "[/ /audit]" {
		t.Errorf("posted to %v, want [/ /audit]", paths)
	}
}

// TestWebhookRetryAfter: as client-go's REST client under
// kube-apiserver's webhook, a 429 or 5xx answer with a Retry-After of
// whole seconds is resent after that wait, up to 10 times, within one
// attempt of the backoff; other answers are not (a 400 with Retry-After
// goes to the backoff at once).
func TestWebhookRetryAfter(t *testing.T) {
	var mu sync.Mutex
	answers := []int{503, 429, 500, 200}
	retryAfter := "3"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		code := http.StatusOK
		if len(answers) > 0 {
			code, answers = answers[0], answers[1:]
		}
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(code)
	}))
	defer srv.Close()
	var slept []time.Duration
	w := backoffWebhook(t, srv.URL, nil, &slept)
	if !w.ProcessEvent(&Event{AuditID: "a"}) || fmt.Sprint(slept) != "[3s 3s 3s]" {
		t.Errorf("waits %v, want three Retry-After waits of 3s", slept)
	}

	mu.Lock()
	answers = []int{400, 200}
	mu.Unlock()
	slept = nil
	if !w.ProcessEvent(&Event{AuditID: "b"}) || fmt.Sprint(slept) != "[10s]" {
		t.Errorf("400 with Retry-After: waits %v, want the backoff's 10s", slept)
	}

	mu.Lock()
	answers = make([]int, 12)
	for i := range answers {
		answers[i] = 503
	}
	retryAfter = "0"
	mu.Unlock()
	slept = nil
	w.ProcessEvent(&Event{AuditID: "c"})
	// 11 requests in the first attempt (10 resent), then the backoff's
	// wait and the last 503 and 200 in the second attempt.
	if fmt.Sprint(slept) != "[0s 0s 0s 0s 0s 0s 0s 0s 0s 0s 10s 0s]" {
		t.Errorf("waits %v, want 10 Retry-After resends, then the backoff", slept)
	}
}

// TestWebhookCloseLeavesNoConnections: closing the backends on shutdown
// also closes the webhook client's kept-alive connections, so no
// connection goroutine outlives them (batch and blocking modes).
func TestWebhookCloseLeavesNoConnections(t *testing.T) {
	srv := httptest.NewServer(&webhookReceiver{})
	defer srv.Close()
	kubeconfig := webhookKubeconfig(t, srv.URL)
	for _, mode := range []string{ModeBatch, ModeBlocking, ModeBlockingStrict} {
		before := runtime.NumGoroutine()
		o := DefaultWebhookOptions()
		o.ConfigFile, o.Mode = kubeconfig, mode
		b, err := NewBackends(LogOptions{}, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.ProcessEvent(&Event{AuditID: "a"})
		if err := b.(io.Closer).Close(); err != nil {
			t.Fatal(err)
		}
		waitGoroutines(t, before)
	}
}
