package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// failingBackend fails the stages listed.
type failingBackend struct {
	failAt map[Stage]bool
	seen   []Stage
}

func (b *failingBackend) ProcessEvent(ev *Event) bool {
	b.seen = append(b.seen, ev.Stage)
	return !b.failAt[ev.Stage]
}

// TestBlockingStrictFailsRequestAtRequestReceived: as kube-apiserver, a
// backend failing the RequestReceived event (blocking-strict) fails the
// request with a plain-text 500 before it is served, counted in
// apiserver_audit_requests_rejected_total; a failure at a later stage,
// or any failure in blocking mode, leaves the request alone.
func TestBlockingStrictFailsRequestAtRequestReceived(t *testing.T) {
	run := func(b Backend, m *Metrics) (*httptest.ResponseRecorder, bool) {
		served := false
		h := WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served = true
			w.WriteHeader(http.StatusOK)
		}), Config{Policy: policyAt(LevelMetadata), Backend: b, Metrics: m})
		req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods?x=<b>", nil)
		ctx := request.WithInfo(req.Context(), request.Parse(req))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(request.WithUser(ctx, testUser)))
		return rec, served
	}
	m := NewMetrics()
	strict := &failingBackend{failAt: map[Stage]bool{StageRequestReceived: true}}
	rec, served := run(strict, m)
	if served || rec.Code != http.StatusInternalServerError {
		t.Fatalf("strict failure: served %v, code %d", served, rec.Code)
	}
	want := `Internal Server Error: "/api/v1/namespaces/ns/pods?x=&lt;b&gt;": failed to store audit event`
	if got := rec.Body.String(); got != want || rec.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("answer %q (%s), want %q", got, rec.Header().Get("Content-Type"), want)
	}
	if n := counterValue(t, m.rejected); n != 1 {
		t.Errorf("apiserver_audit_requests_rejected_total = %v, want 1", n)
	}
	if len(strict.seen) != 1 {
		t.Errorf("stages sent %v, want RequestReceived only", strict.seen)
	}

	late := &failingBackend{failAt: map[Stage]bool{StageResponseComplete: true}}
	if rec, served := run(late, m); !served || rec.Code != http.StatusOK {
		t.Errorf("failure at ResponseComplete: served %v, code %d", served, rec.Code)
	}
	blocking := ignoreErrors{&failingBackend{failAt: map[Stage]bool{StageRequestReceived: true}}}
	if rec, served := run(blocking, m); !served || rec.Code != http.StatusOK {
		t.Errorf("blocking mode failure: served %v, code %d", served, rec.Code)
	}
}

// TestUnionFansOut: every backend gets every event, whatever the others
// answer; the union fails when one does.
func TestUnionFansOut(t *testing.T) {
	a, b := &failingBackend{failAt: map[Stage]bool{StagePanic: true}}, &memBackend{}
	u := Union(nil, a, nil, b)
	if !u.ProcessEvent(&Event{Stage: StageRequestReceived}) {
		t.Error("union failed with no failing backend")
	}
	if u.ProcessEvent(&Event{Stage: StagePanic}) {
		t.Error("union succeeded with a failing backend")
	}
	if len(a.seen) != 2 || len(b.events) != 2 {
		t.Errorf("events %d and %d, want 2 each", len(a.seen), len(b.events))
	}
	if Union(nil, nil) != nil || Union(b) != Backend(b) {
		t.Error("Union of none or one")
	}
}
