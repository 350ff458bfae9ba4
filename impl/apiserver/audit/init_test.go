package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWithAuditInit: as kube-apiserver's outermost filter, every request
// gets an audit ID (the client's Audit-ID or a new one) echoed in the
// response's Audit-Id header, audited or not, and the received time; the
// audit event uses both.
func TestWithAuditInit(t *testing.T) {
	received := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	// Not audited (no policy at all): the header is still there.
	h := WithAuditInit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Config{Now: func() time.Time { return received }})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api", nil))
	if rec.Header().Get("Audit-Id") == "" {
		t.Errorf("no Audit-Id header on a request no policy audits")
	}
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.Header.Set("Audit-ID", "mine")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get("Audit-Id"); got != "mine" {
		t.Errorf("Audit-Id %q, want the client's", got)
	}

	// Audited: the event has the init filter's ID and received time.
	b := &memBackend{}
	var seen string
	cfg := Config{Policy: policyAt(LevelMetadata), Backend: b, Now: func() time.Time { return received.Add(time.Second) }}
	inner := WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), cfg)
	initCfg := cfg
	initCfg.Now = func() time.Time { return received }
	h = WithAuditInit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = w.Header().Get("Audit-Id")
		inner.ServeHTTP(w, r)
	}), initCfg)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	if len(b.events) != 2 || string(b.events[0].AuditID) != seen || rec.Header().Get("Audit-Id") != seen {
		t.Fatalf("events %d, IDs %q / header %q, want the init filter's %q", len(b.events), b.events[0].AuditID, rec.Header().Get("Audit-Id"), seen)
	}
	if !b.events[1].RequestReceivedTimestamp.Time.Equal(received) {
		t.Errorf("requestReceivedTimestamp %v, want the init filter's %v", b.events[1].RequestReceivedTimestamp, received)
	}
}

// TestWithAuditInitWithoutAuditKeepsTheRequest: with no audit policy or
// backend configured nothing reads the ID and received time from the
// request's context, so the filter only answers the Audit-Id header and
// hands on the request as it came (no copy and context per request).
func TestWithAuditInitWithoutAuditKeepsTheRequest(t *testing.T) {
	for name, cfg := range map[string]Config{
		"none":       {},
		"no backend": {Policy: policyAt(LevelMetadata)},
		"no policy":  {Backend: &memBackend{}},
	} {
		var seen *http.Request
		h := WithAuditInit(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r }), cfg)
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Header().Get("Audit-Id") == "" {
			t.Errorf("%s: no Audit-Id header", name)
		}
		if seen != req {
			t.Errorf("%s: the request was copied with a context nothing reads", name)
		}
	}
}
