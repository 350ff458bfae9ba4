package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// annotationsAt runs check inside a request audited at level and returns
// the annotations of its last event.
func annotationsAt(t *testing.T, level audit.Level, check func(ctx context.Context)) map[string]string {
	t.Helper()
	var buf bytes.Buffer
	h := audit.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check(r.Context())
		w.WriteHeader(http.StatusCreated)
	}), audit.Config{Policy: &audit.Policy{Rules: []audit.PolicyRule{{Level: level}}}, Backend: audit.NewWriterBackend(&buf)})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/pods", nil))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var ev struct{ Annotations map[string]string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Annotations
}

// TestMutatingWebhookAuditAnnotations: as kube-apiserver's mutating
// dispatcher, each mutating webhook called records
// mutation.webhook.admission.k8s.io/round_<r>_index_<i> (i its place among
// all mutating webhooks, matched or not) with whether it changed the
// object; an applied patch is recorded under patch.webhook.admission.k8s.io/
// at the Request level and above only; a failed call ignored by
// failurePolicy Ignore adds failed-open.mutation.webhook.admission.k8s.io/
// with the webhook's name.
func TestMutatingWebhookAuditAnnotations(t *testing.T) {
	srv := newHookServer(t, func(path string, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if path == "/patch" {
			return patchResponse(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)
		}
		return allow()
	})
	cmRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
		hookSpec{name: "other.example.com", rules: cmRules},
		hookSpec{name: "patch.example.com", path: "/patch"},
		hookSpec{name: "noop.example.com"},
		hookSpec{name: "broken.example.com", path: "/fail", failure: admissionregistrationv1.Ignore},
	)))}
	admit := func(ctx context.Context) {
		if err := p.Admit(ctx, podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
	}
	const mut, patch, failedOpen = "mutation.webhook.admission.k8s.io/", "patch.webhook.admission.k8s.io/", "failed-open.mutation.webhook.admission.k8s.io/"
	want := map[string]string{
		mut + "round_0_index_1":        `{"configuration":"m","webhook":"patch.example.com","mutated":true}`,
		mut + "round_0_index_2":        `{"configuration":"m","webhook":"noop.example.com","mutated":false}`,
		mut + "round_0_index_3":        `{"configuration":"m","webhook":"broken.example.com","mutated":false}`,
		failedOpen + "round_0_index_3": "broken.example.com",
	}
	got := annotationsAt(t, audit.LevelMetadata, admit)
	if len(got) != len(want) {
		t.Errorf("Metadata level: annotations %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Metadata level: %s = %q, want %q", k, got[k], v)
		}
	}
	got = annotationsAt(t, audit.LevelRequest, admit)
	wantPatch := `{"configuration":"m","webhook":"patch.example.com","patch":[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}],"patchType":"JSONPatch"}`
	if got[patch+"round_0_index_1"] != wantPatch || len(got) != len(want)+1 {
		t.Errorf("Request level: annotations %v, want the Metadata ones and %s = %s", got, patch+"round_0_index_1", wantPatch)
	}
}

// TestValidatingWebhookFailedOpenAnnotation: as kube-apiserver's
// validating dispatcher, a failed call let through by failurePolicy
// Ignore adds failed-open.validating.webhook.admission.k8s.io/round_0_index_<i>
// = the webhook's name, i its place among the webhooks the request
// matched.
func TestValidatingWebhookFailedOpenAnnotation(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	cmRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(
		hookSpec{name: "other.example.com", rules: cmRules},
		hookSpec{name: "fine.example.com"},
		hookSpec{name: "broken.example.com", path: "/fail", failure: admissionregistrationv1.Ignore},
	)))}
	got := annotationsAt(t, audit.LevelMetadata, func(ctx context.Context) {
		if err := p.Validate(ctx, podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
	})
	if len(got) != 1 || got["failed-open.validating.webhook.admission.k8s.io/round_0_index_1"] != "broken.example.com" {
		t.Errorf("annotations %v, want only failed-open.validating.webhook.admission.k8s.io/round_0_index_1 = broken.example.com", got)
	}
}

// As kube-apiserver's mutating dispatcher, a call that fails because the
// request's context has ended is not recorded as failed open, even under
// failurePolicy Ignore, and the request stops there: it times out, the
// webhooks after it not called.
func TestMutatingWebhookRequestEnded(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
		hookSpec{name: "first.example.com", failure: admissionregistrationv1.Ignore},
		hookSpec{name: "second.example.com", failure: admissionregistrationv1.Ignore},
	)))}
	var err error
	got := annotationsAt(t, audit.LevelMetadata, func(ctx context.Context) {
		ended, cancel := context.WithCancel(ctx)
		cancel()
		err = p.Admit(ended, podCreate(newPod("p")))
	})
	if !apierrors.IsTimeout(err) || err.Error() != "Timeout: request did not complete within requested timeout" {
		t.Errorf("got %v, want Timeout: request did not complete within requested timeout", err)
	}
	want := map[string]string{"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"m","webhook":"first.example.com","mutated":false}`}
	if !maps.Equal(got, want) {
		t.Errorf("annotations %v, want %v", got, want)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d calls reached the webhooks, want none", n)
	}
}
