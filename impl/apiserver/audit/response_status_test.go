package audit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRequestReceivedStageTimestamp: as kube-apiserver, the
// RequestReceived event's stageTimestamp is the requestReceivedTimestamp.
func TestRequestReceivedStageTimestamp(t *testing.T) {
	events, _ := serve(t, policyAt(LevelMetadata), createPod(podJSON, "application/json"), created(t))
	if len(events) != 2 {
		t.Fatalf("stages %v", stagesOf(events))
	}
	if rr := events[0]; !rr.StageTimestamp.Equal(&rr.RequestReceivedTimestamp) {
		t.Errorf("RequestReceived stageTimestamp %v, want requestReceivedTimestamp %v", rr.StageTimestamp, rr.RequestReceivedTimestamp)
	}
}

// TestSuccessStatusResponse: a success Status answer (a delete of a kind
// that answers one, a binding, an eviction) gives responseStatus its
// status, message, reason and details at every level, as kube-apiserver's
// LogResponseObject copies any Status; the code is the HTTP one.
func TestSuccessStatusResponse(t *testing.T) {
	details := &metav1.StatusDetails{Name: "cm", Kind: "configmaps", UID: "u-9"}
	for _, level := range []Level{LevelMetadata, LevelRequest, LevelRequestResponse} {
		events, _ := serve(t, policyAt(level), httptest.NewRequest(http.MethodDelete, "/api/v1/namespaces/ns/configmaps/cm", nil),
			func(w http.ResponseWriter, r *http.Request) {
				LogResponseObject(r.Context())
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
					Status: metav1.StatusSuccess, Details: details})
			})
		st := events[len(events)-1].ResponseStatus
		if st == nil || st.Code != 200 || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != details.Name || st.Details.Kind != details.Kind || st.Details.UID != details.UID {
			t.Errorf("%s: responseStatus %+v, want code 200, Success and the details", level, st)
		}
	}
	// An object that is not a Status keeps only the code.
	events, _ := serve(t, policyAt(LevelMetadata), createPod(podJSON, "application/json"), created(t))
	if st := events[len(events)-1].ResponseStatus; st == nil || *st != (metav1.Status{Code: 201}) {
		t.Errorf("created object: responseStatus %+v, want only code 201", st)
	}
}

// TestNothingWrittenIsConnectionClosedEarly: a handler that writes no
// response is recorded as kube-apiserver's faked success ("Connection
// closed early"), also at ResponseStarted for a long-running request.
func TestNothingWrittenIsConnectionClosedEarly(t *testing.T) {
	want := metav1.Status{Code: 200, Status: metav1.StatusSuccess, Message: "Connection closed early"}
	events, _ := serve(t, policyAt(LevelMetadata), httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p", nil),
		func(http.ResponseWriter, *http.Request) {})
	if st := events[len(events)-1].ResponseStatus; st == nil || *st != want {
		t.Errorf("responseStatus %+v, want %+v", st, want)
	}
	events, _ = serve(t, policyAt(LevelMetadata), httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=true", nil),
		func(http.ResponseWriter, *http.Request) {})
	if len(events) != 3 || events[1].Stage != StageResponseStarted || events[1].ResponseStatus == nil || *events[1].ResponseStatus != want ||
		events[2].ResponseStatus == nil || *events[2].ResponseStatus != want {
		t.Errorf("watch that wrote nothing: stages %v, want ResponseStarted and ResponseComplete with %+v", stagesOf(events), want)
	}
}

// TestPanicStatus: the Panic event's responseStatus is kube-apiserver's.
func TestPanicStatus(t *testing.T) {
	b := &memBackend{}
	h := WithAudit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
		Config{Policy: policyAt(LevelMetadata), Backend: b, Now: func() time.Time { return time.Unix(1, 0) }})
	func() {
		defer func() { _ = recover() }()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	}()
	want := metav1.Status{Code: 500, Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Message: "APIServer panic'd: boom"}
	if len(b.events) != 2 || b.events[1].ResponseStatus == nil || *b.events[1].ResponseStatus != want {
		t.Errorf("panic events %v, responseStatus %+v, want %+v", stagesOf(b.events), b.events[len(b.events)-1].ResponseStatus, want)
	}
}

// TestFailedAuthenticationStatus: the credentials are named as
// kube-apiserver names them (basic, bearer, access_token, x509; "no
// credentials provided" without any), and the 401 Status the failed
// handler answers then replaces that message, as kube-apiserver's
// LogResponseObject does when the Unauthorized Status is written.
func TestFailedAuthenticationStatus(t *testing.T) {
	silent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	for _, tc := range []struct {
		name   string
		set    func(r *http.Request)
		target string
		want   string
	}{
		{"none", func(*http.Request) {}, "/api", "Authentication failed, no credentials provided"},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }, "/api", "Authentication failed, attempted: bearer"},
		{"basic", func(r *http.Request) { r.SetBasicAuth("u", "p") }, "/api", "Authentication failed, attempted: basic"},
		{"access_token", func(*http.Request) {}, "/api?access_token=t", "Authentication failed, attempted: access_token"},
		{"bearer without token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer") }, "/api", "Authentication failed, no credentials provided"},
	} {
		b := &memBackend{}
		req := httptest.NewRequest(http.MethodGet, tc.target, nil)
		tc.set(req)
		WithFailedAuthenticationAudit(silent, Config{Policy: policyAt(LevelMetadata), Backend: b}).ServeHTTP(httptest.NewRecorder(), req)
		if len(b.events) != 1 || b.events[0].ResponseStatus == nil || b.events[0].ResponseStatus.Message != tc.want {
			t.Errorf("%s: events %v, want one with message %q", tc.name, b.events, tc.want)
		}
	}

	b := &memBackend{}
	status := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: 401})
	})
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.Header.Set("Authorization", "Bearer x")
	WithFailedAuthenticationAudit(status, Config{Policy: policyAt(LevelMetadata), Backend: b}).ServeHTTP(httptest.NewRecorder(), req)
	want := metav1.Status{Code: 401, Status: metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized}
	if len(b.events) != 1 || b.events[0].ResponseStatus == nil || *b.events[0].ResponseStatus != want {
		t.Errorf("401 Status answer: responseStatus %+v, want %+v", b.events, want)
	}
}
