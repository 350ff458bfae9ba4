package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestEventAndLevelMetrics: as kube-apiserver, every request the policy
// is asked about counts once in apiserver_audit_level_total{level} (None
// too), and every event handed to the backend in
// apiserver_audit_event_total.
func TestEventAndLevelMetrics(t *testing.T) {
	m := NewMetrics()
	serve := func(level Level) {
		h := WithAudit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
			Config{Policy: policyAt(level), Backend: &memBackend{}, Metrics: m})
		req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods", nil)
		ctx := request.WithInfo(req.Context(), request.Parse(req))
		h.ServeHTTP(httptest.NewRecorder(), req.WithContext(request.WithUser(ctx, testUser)))
	}
	serve(LevelMetadata)
	serve(LevelMetadata)
	serve(LevelNone)
	if n := counterValue(t, m.levels.WithLabelValues("Metadata")); n != 2 {
		t.Errorf("apiserver_audit_level_total{level=Metadata} = %v, want 2", n)
	}
	if n := counterValue(t, m.levels.WithLabelValues("None")); n != 1 {
		t.Errorf("apiserver_audit_level_total{level=None} = %v, want 1", n)
	}
	// RequestReceived and ResponseComplete of each Metadata request.
	if n := counterValue(t, m.events); n != 4 {
		t.Errorf("apiserver_audit_event_total = %v, want 4", n)
	}
}
