package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// auditedAnnotations runs check inside an audited request and returns the
// annotations of its ResponseComplete event.
func auditedAnnotations(t *testing.T, check func(ctx context.Context)) map[string]string {
	t.Helper()
	var buf bytes.Buffer
	h := audit.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check(r.Context())
		w.WriteHeader(http.StatusCreated)
	}), audit.Config{Policy: &audit.Policy{Rules: []audit.PolicyRule{{Level: audit.LevelMetadata}}}, Backend: audit.NewWriterBackend(&buf)})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/pods", nil))
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		last = ev
	}
	out := map[string]string{}
	if a, ok := last["annotations"].(map[string]any); ok {
		for k, v := range a {
			out[k], _ = v.(string)
		}
	}
	return out
}

func TestPodSecurityAuditAnnotations(t *testing.T) {
	priv := newPod("p")
	priv.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	p := podSecurity(map[string]string{podSecurityEnforce: "privileged", podSecurityAudit: "baseline"})
	got := auditedAnnotations(t, func(ctx context.Context) {
		if err := p.Validate(ctx, podCreate(priv)); err != nil {
			t.Fatal(err)
		}
	})
	if got[auditEnforcePolicy] != "privileged:latest" ||
		got[auditViolations] != `would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)` {
		t.Fatalf("annotations %v", got)
	}
	p.ExemptNamespaces = map[string]bool{"ns": true}
	if got := auditedAnnotations(t, func(ctx context.Context) { _ = p.Validate(ctx, podCreate(priv)) }); got[auditExempt] != "namespace" {
		t.Fatalf("exempt annotations %v", got)
	}
}

func TestWebhookAuditAnnotations(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, AuditAnnotations: map[string]string{"decision": "looked fine"}}
	})
	p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(hookSpec{name: "audit.example.com"})))}
	got := auditedAnnotations(t, func(ctx context.Context) {
		if err := p.Validate(ctx, podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
	})
	if got["audit.example.com/decision"] != "looked fine" {
		t.Fatalf("annotations %v", got)
	}
}
