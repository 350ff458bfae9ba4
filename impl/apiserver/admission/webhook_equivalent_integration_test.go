package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// matchPolicy Equivalent (the v1 default), as kube-apiserver: webhooks
// registered for core/v1 events are called for an events.k8s.io/v1 create
// (the same stored objects), with the object converted to a core/v1 Event,
// resource and kind core/v1's and requestResource and requestKind
// events.k8s.io/v1's; a mutating webhook's patch of the core/v1 Event
// (message) comes back as the events.k8s.io/v1 Event's note. A webhook
// with matchPolicy Exact is not called.
func TestWebhookMatchPolicyEquivalent(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string][]*admissionv1.AdmissionRequest{}
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], rev.Request)
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}
		switch r.URL.Path {
		case "/mutate":
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType = &pt
			resp.Patch = []byte(`[{"op":"add","path":"/metadata/labels","value":{"seen-as":"core-v1"}},{"op":"replace","path":"/message","value":"patched as core/v1"}]`)
		case "/exact":
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "the Exact webhook was called"}
		}
		rev.Request, rev.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rev)
	}))
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	t.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	cc := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := hook.URL + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca}
	}
	coreEvents := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"events"}},
	}}
	none := admissionregistrationv1.SideEffectClassNone
	exact := admissionregistrationv1.Exact
	created(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "core-events"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: cc("/mutate"), Rules: coreEvents}},
	}, metav1.CreateOptions{})).must(t, "mutating webhook configuration")
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "core-events"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "validate.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, ClientConfig: cc("/validate"), Rules: coreEvents},
			{Name: "exact.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, ClientConfig: cc("/exact"), Rules: coreEvents, MatchPolicy: &exact},
		},
	}, metav1.CreateOptions{})).must(t, "validating webhook configuration")

	called := func(path string) []*admissionv1.AdmissionRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]*admissionv1.AdmissionRequest(nil), seen[path]...)
	}
	n := 0
	var ev *eventsv1.Event
	eventually(t, "an events.k8s.io/v1 event patched by the core/v1 webhook, the validating one called", func() error {
		n++
		e, err := cs.EventsV1().Events("default").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", n)},
			EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "example.com/tester", ReportingInstance: "tester-1",
			Action: "Testing", Reason: "Tested", Type: corev1.EventTypeNormal, Note: "original",
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}}, metav1.CreateOptions{})
		if apierrors.IsBadRequest(err) {
			t.Fatalf("the Exact webhook was called for events.k8s.io/v1: %v", err)
		}
		if err != nil {
			return err
		}
		if e.Labels["seen-as"] != "core-v1" || len(called("/validate")) == 0 {
			return errors.New("webhooks not called yet")
		}
		ev = e
		return nil
	})
	if ev.Note != "patched as core/v1" {
		t.Fatalf("note %q: the core/v1 webhook's message patch did not come back as the note", ev.Note)
	}
	for _, path := range []string{"/mutate", "/validate"} {
		reqs := called(path)
		r := reqs[len(reqs)-1]
		if r.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "events"}) || r.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "Event"}) ||
			r.RequestResource == nil || *r.RequestResource != (metav1.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}) ||
			r.RequestKind == nil || *r.RequestKind != (metav1.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}) {
			t.Fatalf("%s: resource %v kind %v requestResource %v requestKind %v", path, r.Resource, r.Kind, r.RequestResource, r.RequestKind)
		}
		var sent corev1.Event
		if err := json.Unmarshal(r.Object.Raw, &sent); err != nil || sent.APIVersion != "v1" || sent.Kind != "Event" || sent.InvolvedObject.Name != "p" {
			t.Fatalf("%s: object sent %s (%v)", path, r.Object.Raw, err)
		}
		if path == "/mutate" && sent.Message != "original" {
			t.Fatalf("mutating webhook saw message %q", sent.Message)
		}
		if path == "/validate" && (sent.Message != "patched as core/v1" || sent.Labels["seen-as"] != "core-v1") {
			t.Fatalf("validating webhook saw %q %v, not the patched event", sent.Message, sent.Labels)
		}
	}
	if got := called("/exact"); len(got) != 0 {
		t.Fatalf("the Exact webhook was called %d times", len(got))
	}
}
