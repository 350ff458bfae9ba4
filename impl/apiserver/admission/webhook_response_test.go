package admission

import (
	"context"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// How kube-apiserver reads a webhook's answer (found by FuzzWebhook):
// client-go's REST client matches JSON keys case-sensitively and refuses a
// Content-Type that does not parse; a missing apiVersion and kind decode as
// v1 AdmissionReview's, so the dispatcher's checks see them empty;
// the dispatchers refuse a patch without its type (and the reverse) from
// a mutating webhook and any patch from a validating one.
func TestReadWebhookResponse(t *testing.T) {
	const uid = types.UID("u-1")
	review := func(resp string) []byte {
		return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1",` + resp + `}}`)
	}
	for _, c := range []struct {
		name        string
		status      int
		contentType string
		body        []byte
		mutating    bool
		// err is a substring of the error; "" means the answer is read,
		// allowed as wantAllowed.
		err         string
		wantAllowed bool
	}{
		{name: "200", status: 200, body: review(`"allowed":true`), wantAllowed: true},
		{name: "201 is success for client-go", status: 201, body: review(`"allowed":true`), wantAllowed: true},
		{name: "206 too", status: 206, body: review(`"allowed":false`)},
		{name: "text/plain is read as JSON", status: 200, contentType: "text/plain", body: review(`"allowed":true`), wantAllowed: true},
		{name: "a Content-Type that does not parse", status: 200, contentType: ";;;", body: review(`"allowed":true`), err: "mime: no media type"},
		{name: "empty", status: 200, body: nil, err: "0-length response"},
		{name: "keys are case-sensitive", status: 200, body: review(`"Allowed":true`)},
		{name: "uid key miscased", status: 200, body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"UID":"u-1","allowed":true}}`), err: "expected response.uid"},
		{name: "no response comes before the kind", status: 200, body: []byte(`{"apiVersion":"admission.k8s.io/v1"}`), err: "webhook response was absent"},
		{name: "the uid comes before the kind", status: 200, body: []byte(`{"response":{"uid":"x","allowed":true}}`), err: "expected response.uid"},
		{name: "wrong apiVersion", status: 200, body: []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}`), err: "converting (v1beta1.AdmissionReview) to (v1.AdmissionReview): unknown conversion"},
		{name: "a patch without its type", status: 200, mutating: true, body: review(`"allowed":true,"patch":"W10="`), err: "response.patch but not response.patchType"},
		{name: "a type without a patch", status: 200, mutating: true, body: review(`"allowed":true,"patchType":"JSONPatch"`), err: "response.patchType but not response.patch"},
		{name: "an empty type", status: 200, mutating: true, body: review(`"allowed":true,"patchType":"","patch":"W10="`), err: "invalid response.patchType"},
		{name: "another type is the dispatcher's to refuse", status: 200, mutating: true, body: review(`"allowed":true,"patchType":"Merge","patch":"W10="`), wantAllowed: true},
		{name: "a validating webhook's patch", status: 200, body: review(`"allowed":true,"patchType":"JSONPatch","patch":"W10="`), err: "validating webhook may not return response.patch"},
		{name: "a validating webhook's patch type", status: 200, body: review(`"allowed":true,"patchType":"JSONPatch"`), err: "validating webhook may not return response.patchType"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ct := c.contentType
			if ct == "" {
				ct = "application/json"
			}
			r, err := readResponse(c.status, ct, c.body, uid, c.mutating, reviewV1)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one saying %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err == "" && r.Allowed != c.wantAllowed:
				t.Fatalf("allowed %v, want %v", r.Allowed, c.wantAllowed)
			}
		})
	}
}

// A mutating webhook's patch as kube-apiserver's dispatcher applies it
// (found by FuzzWebhook): one that does not apply, or makes an object
// that does not decode or is of another kind, is a 500 whatever the
// failurePolicy (the request was 400 here); keys are case-sensitive; an
// apiVersion or kind the patch removed is the object's; an empty list of
// operations is no change whatever the patch type; a type other than
// JSONPatch is a failed call.
func TestMutatingWebhookPatchResults(t *testing.T) {
	answers := map[string]*admissionv1.AdmissionResponse{
		"/noapply":    patchResponse(`[{"op":"remove","path":"/metadata/nothere"}]`),
		"/undecoded":  patchResponse(`[{"op":"replace","path":"/spec","value":7}]`),
		"/otherkind":  patchResponse(`[{"op":"replace","path":"/kind","value":"ConfigMap"}]`),
		"/nokind":     patchResponse(`[{"op":"remove","path":"/kind"},{"op":"remove","path":"/apiVersion"},{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`),
		"/casekey":    patchResponse(`[{"op":"add","path":"/Metadata","value":{"labels":{"c":"d"}}}]`),
		"/emptymerge": {Allowed: true, PatchType: ptr(admissionv1.PatchType("Merge")), Patch: []byte(`[]`)},
		"/merge":      {Allowed: true, PatchType: ptr(admissionv1.PatchType("Merge")), Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)},
	}
	srv := newHookServer(t, func(path string, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return answers[path]
	})
	admit := func(path string, policy admissionregistrationv1.FailurePolicyType) (*Attributes, error) {
		p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(hookSpec{name: "m.example.com", path: path, failure: policy})))}
		a := podCreate(newPod("p"))
		return a, p.Admit(context.Background(), a)
	}
	for _, path := range []string{"/noapply", "/undecoded", "/otherkind"} {
		if _, err := admit(path, admissionregistrationv1.Ignore); !apierrors.IsInternalError(err) {
			t.Errorf("%s under Ignore: %v, want a 500 InternalError", path, err)
		}
	}
	a, err := admit("/nokind", admissionregistrationv1.Fail)
	if pod := a.Object.(interface{ GetLabels() map[string]string }); err != nil || pod.GetLabels()["a"] != "b" {
		t.Errorf("a patch removing apiVersion and kind: %v, labels %v", err, pod.GetLabels())
	}
	a, err = admit("/casekey", admissionregistrationv1.Fail)
	if pod := a.Object.(interface{ GetLabels() map[string]string }); err != nil || pod.GetLabels()["c"] != "" {
		t.Errorf("a patch adding /Metadata: %v, labels %v (the key is not metadata's)", err, pod.GetLabels())
	}
	if _, err := admit("/emptymerge", admissionregistrationv1.Fail); err != nil {
		t.Errorf("an empty patch of another type: %v", err)
	}
	if _, err := admit("/merge", admissionregistrationv1.Fail); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "m.example.com": unsupported patch type "Merge"`) {
		t.Errorf("a patch of another type under Fail: %v", err)
	}
	if _, err := admit("/merge", admissionregistrationv1.Ignore); err != nil {
		t.Errorf("a patch of another type under Ignore: %v", err)
	}
}

// kube-apiserver's webhook client decodes the answer with a codec that
// takes whatever media type the webhook says and recognizes the data (JSON,
// YAML, protobuf): an answer in YAML is read. An answer that does not
// decode, or is empty, or whose Content-Type does not parse, is a failed
// call in client-go's words ("failed to call webhook: ..."); a v1beta1
// review, answering a v1 request, does not decode (no conversion).
func TestReadWebhookResponseAsClientGo(t *testing.T) {
	const uid = types.UID("u-1")
	yaml := []byte("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nresponse:\n  uid: u-1\n  allowed: true\n  warnings: [w]\n")
	r, err := readResponse(200, "application/yaml", yaml, uid, false, reviewV1)
	if err != nil || !r.Allowed || len(r.Warnings) != 1 {
		t.Errorf("a YAML answer: %+v, %v", r, err)
	}
	for _, c := range []struct {
		name, contentType string
		body              []byte
		err               string
	}{
		{"empty", "", nil, "failed to call webhook: 0-length response with status code: 200 and content type: application/json"},
		{"empty, text", "text/plain; charset=utf-8", nil, "failed to call webhook: 0-length response with status code: 200 and content type: text/plain; charset=utf-8"},
		{"a Content-Type that does not parse", ";;;", []byte(`{}`), "failed to call webhook: Internal error occurred: mime: no media type"},
		{"not JSON", "application/json", []byte(`{"response":`), "failed to call webhook: "},
		{"a list", "application/json", []byte(`[]`), "failed to call webhook: "},
		{"v1beta1", "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}`), "failed to call webhook: "},
		{"another kind", "application/json", []byte(`{"apiVersion":"v1","kind":"AdmissionReview","response":{"uid":"x","allowed":true}}`), "failed to call webhook: "},
		{"no kind", "application/json", []byte(`{"response":{"uid":"u-1","allowed":true}}`), "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="},
	} {
		if _, err := readResponse(200, c.contentType, c.body, uid, false, reviewV1); err == nil || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%s: %v, want an error starting %q", c.name, err, c.err)
		}
	}
}

// client-go reads a webhook's whole answer, however long: a 4 MiB answer
// (here a warning) is read, not cut at some size and so undecodable.
func TestWebhookAnswerOverThreeMiB(t *testing.T) {
	big := strings.Repeat("w", 4<<20)
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{big}}
	})
	p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(hookSpec{name: "big.example.com"})))}
	if err := p.Validate(context.Background(), podCreate(newPod("p"))); err != nil {
		t.Fatalf("a 4 MiB answer: %.300v", err)
	}
}

// Whether a webhook's patch changed the object is decided as
// kube-apiserver decides it, on the decoded objects (semantically): a
// patch that only adds a field the kind does not have (a miscased key)
// or writes a quantity in another form changes nothing, so a webhook
// reinvoked IfNeeded is not called again; one that changes a label is.
func TestMutatingWebhookChangedIsSemantic(t *testing.T) {
	for _, c := range []struct {
		name, patch string
		calls       int
	}{
		{"a miscased key", `[{"op":"add","path":"/Metadata","value":{"labels":{"c":"d"}}}]`, 1},
		{"an unknown field", `[{"op":"add","path":"/spec/frobs","value":3}]`, 1},
		{"the same quantity", `[{"op":"add","path":"/spec/containers/0/resources","value":{"limits":{"cpu":"1000m"}}}]`, 1},
		{"a label", `[{"op":"add","path":"/metadata/labels","value":{"c":"d"}}]`, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			first := 0
			srv := newHookServer(t, func(path string, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
				if path == "/first" {
					mu.Lock()
					first++
					mu.Unlock()
					return allow()
				}
				return patchResponse(c.patch)
			})
			p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
				hookSpec{name: "first.example.com", path: "/first", reinvoke: true},
				hookSpec{name: "second.example.com", path: "/second"})))}
			pod := newPod("p")
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			if err := p.Admit(context.Background(), podCreate(pod)); err != nil {
				t.Fatal(err)
			}
			if first != c.calls {
				t.Errorf("the IfNeeded webhook was called %d times, want %d", first, c.calls)
			}
		})
	}
}
