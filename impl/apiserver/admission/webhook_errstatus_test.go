package admission

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// A webhook that answers with an error status fails the call with the
// error kube-apiserver's REST client makes of it: the Status in the body
// when it is a failure Status (v1, as any API server writes it), else a
// message by HTTP code, carrying the body when it is text (for 403 and
// 5xx). The Status's kind and apiVersion are found in any letter case,
// its other fields only as spelled in the API (client-go's JSON
// serializer). Any 2xx answer up to 206 is read as the review.
func TestWebhookErrorResponses(t *testing.T) {
	const notFound = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply := func(code int, contentType, body string) {
			if contentType != "" {
				w.Header().Set("Content-Type", contentType)
			}
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		}
		switch r.URL.Path {
		case "/status-404":
			reply(404, "application/json", notFound)
		case "/status-as-text":
			reply(403, "text/plain", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"user \"x\" cannot post","code":403}`)
		case "/status-success-500":
			reply(500, "application/json", `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		case "/field-case-404":
			reply(404, "application/json", `{"kind":"Status","Status":"Failure","Message":"x"}`)
		case "/kind-case-403":
			reply(403, "application/json", `{"KIND":"Status","ApiVersion":"v1","status":"Failure","message":"kind in any case","code":403}`)
		case "/kindless-404":
			reply(404, "application/json", `{"message":"nope"}`)
		case "/text-500":
			reply(500, "text/plain; charset=utf-8", "  boom\n")
		case "/untyped-500":
			reply(500, "", "boom")
		case "/json-502":
			reply(502, "application/json", `{"error":"bad gateway"}`)
		case "/text-403":
			reply(403, "text/plain", "go away")
		case "/text-405":
			reply(405, "text/plain", "no")
		case "/created":
			rev := &admissionv1.AdmissionReview{}
			if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
				reply(400, "text/plain", "bad review")
				return
			}
			out, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: rev.TypeMeta,
				Response: &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}})
			reply(201, "application/json", string(out))
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := &hookServer{Server: srv}

	tests := []struct {
		path string
		want string // "" when allowed
	}{
		{"/status-404", `failed calling webhook "w.example.com": failed to call webhook: the server could not find the requested resource`},
		{"/status-as-text", `failed to call webhook: user "x" cannot post`},
		{"/status-success-500", `failed to call webhook: an error on the server ("unknown") has prevented the request from succeeding`},
		{"/field-case-404", `failed to call webhook: the server could not find the requested resource`},
		{"/kind-case-403", `failed to call webhook: kind in any case`},
		{"/kindless-404", `failed to call webhook: the server could not find the requested resource`},
		{"/text-500", `failed to call webhook: an error on the server ("boom") has prevented the request from succeeding`},
		{"/untyped-500", `failed to call webhook: an error on the server ("boom") has prevented the request from succeeding`},
		{"/json-502", `failed to call webhook: an error on the server ("unknown") has prevented the request from succeeding`},
		{"/text-403", `failed to call webhook: go away`},
		{"/text-405", `failed to call webhook: the server does not allow this method on the requested resource`},
		{"/created", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p := &ValidatingWebhook{testDispatcher(validatingWebhooks(h.validating(hookSpec{name: "w.example.com", path: tt.path})))}
			err := p.Validate(context.Background(), podCreate(newPod("p")))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a 500 containing %q", err, tt.want)
			}
		})
	}
}
