package admission

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The validating webhooks are called all at once and, as in
// kube-apiserver, the first refusal to arrive is the request's, whatever
// the configuration order. Here the webhook first in that order answers
// only once the other's refusal has been recorded (its warning, recorded
// after the refusal, is seen), so the order of arrival is fixed.
func TestValidatingWebhookFirstRefusalToArriveWins(t *testing.T) {
	ctx, warnings := request.WithWarnings(context.Background())
	srv := newHookServer(t, func(path string, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		switch path {
		case "/fast":
			return &admissionv1.AdmissionResponse{Warnings: []string{"fast answered"}, Result: &metav1.Status{Message: "fast says no"}}
		default:
			for end := time.Now().Add(9 * time.Second); !slices.Contains(warnings.List(), "fast answered") && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "slow says no"}}
		}
	})
	p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(
		hookSpec{name: "a-slow.example.com", path: "/late"},
		hookSpec{name: "b-fast.example.com", path: "/fast"},
	)))}
	err := p.Validate(ctx, podCreate(newPod("p")))
	want := `admission webhook "b-fast.example.com" denied the request: fast says no`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want the first refusal to arrive: %s", err, want)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d calls, want both webhooks called", n)
	}
}

// As kube-apiserver's validating dispatcher, a request whose context has
// already ended calls none of the webhooks it matches: it times out.
func TestValidatingWebhookRequestAlreadyEnded(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(
		hookSpec{name: "ignored.example.com", path: "/allow", failure: admissionregistrationv1.Ignore},
	)))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Validate(ctx, podCreate(newPod("p")))
	if !apierrors.IsTimeout(err) || err.Error() != "Timeout: request did not complete within requested timeout" {
		t.Fatalf("got %v, want Timeout: request did not complete within requested timeout", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d calls, want none", n)
	}
}
