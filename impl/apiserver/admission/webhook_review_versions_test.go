package admission

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// rawHookServer is an HTTPS webhook answering each path with a fixed
// body (its uid, if any, the request's where the body says "UID"); it
// keeps the apiVersion of every review it is sent.
type rawHookServer struct {
	*hookServer
	mu          sync.Mutex
	apiVersions []string
}

func newRawHookServer(t *testing.T, answers map[string]string) *rawHookServer {
	r := &rawHookServer{hookServer: &hookServer{}}
	r.hookServer.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var rev struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		body, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(body, &rev); err != nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.apiVersions = append(r.apiVersions, rev.APIVersion)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, strings.ReplaceAll(answers[req.URL.Path], "UID", rev.Request.UID))
	}))
	r.StartTLS()
	t.Cleanup(r.Close)
	return r
}

func (r *rawHookServer) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.apiVersions...)
}

// A webhook is sent the first of its admissionReviewVersions that
// kube-apiserver speaks (v1, v1beta1), and its answer is read in that
// version: a v1beta1 answer's uid and type are not checked, a mutating
// webhook's patch is a JSONPatch whatever patchType says, a validating
// webhook's patch is dropped, and an answer in the other version does not
// decode. A list naming neither is a failed call before any request
// (kube-apiserver's CreateAdmissionObjects), its failurePolicy applying.
func TestWebhookAdmissionReviewVersions(t *testing.T) {
	const v1beta1Patch = `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"not-the-request's","allowed":true,` +
		`"patchType":"Merge","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7ImIiOiIxIn19XQ=="}}` // add labels {"b":"1"}
	srv := newRawHookServer(t, map[string]string{
		"/v1beta1-patch":   v1beta1Patch,
		"/v1beta1-noreply": `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}`,
		"/v1-allow":        `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"UID","allowed":true}}`,
		"/v1beta1-deny":    `{"response":{"allowed":false,"status":{"message":"no"},"patch":"W10="}}`,
	})
	hook := func(path string, failure admissionregistrationv1.FailurePolicyType) hookSpec {
		return hookSpec{name: "v.example.com", path: path, failure: failure}
	}
	withVersions := func(specs []admissionregistrationv1.MutatingWebhookConfiguration, versions ...string) []admissionregistrationv1.MutatingWebhookConfiguration {
		specs[0].Webhooks[0].AdmissionReviewVersions = versions
		return specs
	}
	admit := func(path string, failure admissionregistrationv1.FailurePolicyType, versions ...string) (*Attributes, error) {
		p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(withVersions(srv.mutating(hook(path, failure)), versions...)))}
		a := podCreate(newPod("p"))
		return a, p.Admit(context.Background(), a)
	}
	validate := func(path string, versions ...string) error {
		configs := srv.validating(hook(path, admissionregistrationv1.Fail))
		configs[0].Webhooks[0].AdmissionReviewVersions = versions
		return (&ValidatingWebhook{testDispatcher(validatingWebhooks(configs))}).Validate(context.Background(), podCreate(newPod("p")))
	}

	a, err := admit("/v1beta1-patch", admissionregistrationv1.Fail, "v2", "v1beta1", "v1")
	if err != nil || a.Object.(interface{ GetLabels() map[string]string }).GetLabels()["b"] != "1" {
		t.Errorf("a v1beta1 answer's patch: %v, labels %v", err, a.Object.(interface{ GetLabels() map[string]string }).GetLabels())
	}
	if got := srv.sent(); len(got) != 1 || got[0] != "admission.k8s.io/v1beta1" {
		t.Errorf("reviews sent %v, want one admission.k8s.io/v1beta1", got)
	}
	if _, err := admit("/v1-allow", admissionregistrationv1.Fail, "v2", "v1", "v1beta1"); err != nil {
		t.Errorf("v1 first: %v", err)
	}
	if got := srv.sent(); len(got) != 2 || got[1] != "admission.k8s.io/v1" {
		t.Errorf("reviews sent %v, want admission.k8s.io/v1 second", got)
	}
	if _, err := admit("/v1-allow", admissionregistrationv1.Fail, "v1beta1"); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to call webhook") {
		t.Errorf("a v1 answer to a v1beta1 review: %v, want a failed call", err)
	}
	if _, err := admit("/v1beta1-noreply", admissionregistrationv1.Fail, "v1beta1"); err == nil || !strings.Contains(err.Error(), "received invalid webhook response: webhook response was absent") {
		t.Errorf("a v1beta1 answer without response: %v", err)
	}
	err = validate("/v1beta1-deny", "v1beta1")
	if se, ok := err.(*apierrors.StatusError); !ok || se.ErrStatus.Message != `admission webhook "v.example.com" denied the request: no` {
		t.Errorf("a validating webhook's v1beta1 refusal, with a patch: %v", err)
	}

	before := len(srv.sent())
	_, err = admit("/v1-allow", admissionregistrationv1.Fail, "v2", "v3")
	want := `failed calling webhook "v.example.com": could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)`
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("no known version under Fail: %v, want a 500 %q", err, want)
	}
	if _, err := admit("/v1-allow", admissionregistrationv1.Ignore, "v2"); err != nil {
		t.Errorf("no known version under Ignore: %v", err)
	}
	if got := srv.sent(); len(got) != before {
		t.Errorf("a webhook taking no known version was called: %v", got[before:])
	}
}
