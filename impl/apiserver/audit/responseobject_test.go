package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResponseObjectOnlyWhenLogged: the responseObject, and a Status's
// status, message, reason and details in responseStatus, are recorded
// from a body the handler said is an API object (LogResponseObject), as
// kube-apiserver records only what WriteObjectNegotiated passes to its
// LogResponseObject; any other JSON body (/version's, an OpenAPI
// document, a 406 written as plain JSON) leaves the code alone. A
// long-running request's API object (a watch refused before it
// streams) is recorded as any other; its stream is not.
func TestResponseObjectOnlyWhenLogged(t *testing.T) {
	const notFound = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"p\" not found","reason":"NotFound","code":404}`
	answer := func(logged bool, code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if logged {
				LogResponseObject(r.Context())
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}
	}
	for _, tc := range []struct {
		name, path string
		logged     bool
		code       int
		body       string
		want       string
		reason     metav1.StatusReason
	}{
		{name: "object", path: "/api/v1/namespaces/ns/pods/p", logged: true, code: 200, body: `{"kind":"Pod"}`, want: `{"kind":"Pod"}`},
		{name: "not an API object", path: "/version", code: 200, body: `{"major":"1"}`},
		{name: "error Status", path: "/api/v1/namespaces/ns/pods/p", logged: true, code: 404, body: notFound, want: notFound, reason: metav1.StatusReasonNotFound},
		{name: "unlogged Status", path: "/api/v1/namespaces/ns/pods/p", code: 404, body: notFound},
		{name: "refused watch", path: "/api/v1/pods?watch=1", logged: true, code: 404, body: notFound, want: notFound, reason: metav1.StatusReasonNotFound},
		{name: "watch stream", path: "/api/v1/pods?watch=1", code: 200, body: `{"type":"ADDED","object":{"kind":"Pod"}}`},
	} {
		for _, level := range []Level{LevelMetadata, LevelRequestResponse} {
			events, _ := serve(t, policyAt(level), httptest.NewRequest(http.MethodGet, tc.path, nil), answer(tc.logged, tc.code, tc.body))
			last := events[len(events)-1]
			want := tc.want
			if level != LevelRequestResponse {
				want = ""
			}
			if got := string(last.ResponseObject); got != want {
				t.Errorf("%s at %s: responseObject %q, want %q", tc.name, level, got, want)
			}
			if st := last.ResponseStatus; st == nil || st.Code != int32(tc.code) || st.Reason != tc.reason || (tc.reason == "" && st.Message != "") {
				t.Errorf("%s at %s: responseStatus %+v, want code %d, reason %q", tc.name, level, st, tc.code, tc.reason)
			}
		}
	}
}

// TestRefusedWatchResponseStarted: a long-running request answered with
// an API object (a watch refused before it streams) has, in its
// ResponseStarted event too, the Status and, at RequestResponse, the
// responseObject: kube-apiserver's WriteObjectNegotiated logs the object
// before its header goes out, and the audit filter sends ResponseStarted
// with the event as it then is. A watch that streams has the code alone.
func TestRefusedWatchResponseStarted(t *testing.T) {
	const gone = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`
	for _, level := range []Level{LevelMetadata, LevelRequestResponse} {
		events, _ := serve(t, policyAt(level), httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=1&resourceVersion=1", nil),
			func(w http.ResponseWriter, r *http.Request) {
				LogResponseObject(r.Context())
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusGone)
				_, _ = w.Write([]byte(gone))
			})
		if got := stageNames(stagesOf(events)); len(got) != 3 || got[1] != "ResponseStarted" || got[2] != "ResponseComplete" {
			t.Fatalf("%s: stages %v", level, got)
		}
		for _, ev := range events[1:] {
			if st := ev.ResponseStatus; st == nil || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Status != metav1.StatusFailure {
				t.Errorf("%s %s: responseStatus %+v, want the 410 Expired Status", level, ev.Stage, st)
			}
			want := ""
			if level == LevelRequestResponse {
				want = gone
			}
			if got := string(ev.ResponseObject); got != want {
				t.Errorf("%s %s: responseObject %q, want %q", level, ev.Stage, got, want)
			}
		}
	}
}
