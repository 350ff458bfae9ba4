package fuzz

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// webhookNamespace is where FuzzWebhook writes: its webhooks select this
// namespace only (by a label no other target sets), so they never answer
// another target's requests.
const webhookNamespace = "fuzz-webhook"

// fuzzHook is one webhook FuzzWebhook registers. Each selects objects
// carrying its label (hookLabel), so an input chooses which are called.
type fuzzHook struct {
	name     string
	mutating bool
	// fail: failurePolicy Fail, else Ignore.
	fail bool
	// reinvoke: reinvocationPolicy IfNeeded.
	reinvoke bool
}

// fuzzHooks in the order kube-apiserver calls them (one configuration
// per kind; webhooks in the configuration's order).
var fuzzHooks = []fuzzHook{
	{name: "m0.fuzz.kubeproof.io", mutating: true, fail: true, reinvoke: true},
	{name: "m1.fuzz.kubeproof.io", mutating: true, fail: false},
	{name: "m2.fuzz.kubeproof.io", mutating: true, fail: true},
	{name: "v0.fuzz.kubeproof.io", fail: true},
	{name: "v1.fuzz.kubeproof.io", fail: false},
}

func hookLabel(h fuzzHook) string { return "hook.fuzz.kubeproof.io/" + strings.Split(h.name, ".")[0] }

// hookAnswer is what one webhook answers, decided from the fuzzer's bytes.
type hookAnswer struct {
	// delay: 0 none, 1 a little below the 1 s timeout, 2 past it (the
	// handler waits until the caller gives up).
	delay int
	// status is the HTTP status code; contentType the answer's header.
	status      int
	contentType string
	// raw, when not nil, is the body as is (not JSON, truncated, empty).
	raw []byte
	// The AdmissionReview's fields.
	apiVersion, kind string
	noResponse       bool
	uid              string // "" the request's; "-" none; else this one
	allowed          bool
	allowedKey       string // "allowed" or a miscased key
	result           *metav1.Status
	patchType        *string
	patch            []byte
	warnings         []string
	auditAnnotations map[string]string
}

// hookCall is one call the webhook server answered.
type hookCall struct {
	hook   fuzzHook
	review admissionv1.AdmissionReview
	answer hookAnswer
	// body is what the server sent back (before a delay past the timeout
	// the call is failed whatever the body).
	body []byte
}

// webhookServer answers the fuzzed webhooks' calls over TLS with the
// answers of the current input and records the calls.
type webhookServer struct {
	srv *httptest.Server
	ca  []byte

	mu      sync.Mutex
	answers map[string]hookAnswer // nil: every hook allows, no patch
	calls   []hookCall
}

func (w *webhookServer) script(answers map[string]hookAnswer) []hookCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.calls
	w.answers, w.calls = answers, nil
	return calls
}

func (w *webhookServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	var hook fuzzHook
	for _, h := range fuzzHooks {
		if h.name == name {
			hook = h
		}
	}
	body, _ := io.ReadAll(r.Body)
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rev); err != nil || rev.Request == nil || hook.name == "" {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	ans, scripted := w.answers[name]
	if w.answers == nil || !scripted {
		ans = hookAnswer{status: 200, apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", allowed: true, allowedKey: "allowed"}
	}
	out := ans.body(string(rev.Request.UID))
	w.calls = append(w.calls, hookCall{hook: hook, review: rev, answer: ans, body: out})
	w.mu.Unlock()
	switch ans.delay {
	case 1:
		time.Sleep(600 * time.Millisecond)
	case 2:
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
		return
	}
	if ans.contentType != "-" {
		rw.Header().Set("Content-Type", ans.contentType)
	}
	rw.WriteHeader(ans.status)
	rw.Write(out)
}

// body is the answer's HTTP body for a request of uid.
func (a hookAnswer) body(uid string) []byte {
	if a.raw != nil {
		return a.raw
	}
	m := map[string]any{}
	if a.apiVersion != "-" {
		m["apiVersion"] = a.apiVersion
	}
	if a.kind != "-" {
		m["kind"] = a.kind
	}
	if !a.noResponse {
		resp := map[string]any{a.allowedKey: a.allowed}
		switch a.uid {
		case "":
			resp["uid"] = uid
		case "-":
		default:
			resp["uid"] = a.uid
		}
		if a.result != nil {
			resp["status"] = a.result
		}
		if a.patchType != nil {
			resp["patchType"] = *a.patchType
		}
		if a.patch != nil {
			resp["patch"] = base64.StdEncoding.EncodeToString(a.patch)
		}
		if a.warnings != nil {
			resp["warnings"] = a.warnings
		}
		if a.auditAnnotations != nil {
			resp["auditAnnotations"] = a.auditAnnotations
		}
		m["response"] = resp
	} else {
		m["response"] = nil
	}
	b, _ := json.Marshal(m)
	return b
}

var (
	hooksMu  sync.Mutex
	theHooks *webhookServer
	hooksErr error
)

// webhooks starts the webhook server and registers fuzzHooks with the
// process's API server (once per process).
func webhooks(t testing.TB, s *liveServer) *webhookServer {
	t.Helper()
	hooksMu.Lock()
	defer hooksMu.Unlock()
	if theHooks == nil && hooksErr == nil {
		theHooks, hooksErr = startWebhooks(s)
	}
	if hooksErr != nil {
		t.Fatalf("starting the webhooks: %v", hooksErr)
	}
	return theHooks
}

func startWebhooks(s *liveServer) (*webhookServer, error) {
	w := &webhookServer{}
	w.srv = httptest.NewUnstartedServer(w)
	w.srv.Config.ErrorLog = nil
	w.srv.StartTLS()
	w.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	post := func(path, doc string) error {
		code, body := s.do(ctx, http.MethodPost, path, "application/json", []byte(doc))
		if code != http.StatusCreated && code != http.StatusConflict {
			return fmt.Errorf("POST %s: %d %s", path, code, body)
		}
		return nil
	}
	if err := post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+webhookNamespace+`","labels":{"fuzz-webhook":"on"}}}`); err != nil {
		return nil, err
	}
	if err := post("/api/v1/namespaces/"+webhookNamespace+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`); err != nil {
		return nil, err
	}
	var mutating, validating []map[string]any
	for _, h := range fuzzHooks {
		policy := "Ignore"
		if h.fail {
			policy = "Fail"
		}
		url := w.srv.URL + "/" + h.name
		hook := map[string]any{
			"name":                    h.name,
			"clientConfig":            map[string]any{"url": url, "caBundle": w.ca},
			"rules":                   []any{map[string]any{"operations": []string{"CREATE", "UPDATE", "DELETE"}, "apiGroups": []string{""}, "apiVersions": []string{"v1"}, "resources": []string{"configmaps", "pods"}}},
			"failurePolicy":           policy,
			"sideEffects":             "None",
			"admissionReviewVersions": []string{"v1"},
			"timeoutSeconds":          1,
			"namespaceSelector":       map[string]any{"matchLabels": map[string]string{"fuzz-webhook": "on"}},
			"objectSelector":          map[string]any{"matchExpressions": []any{map[string]any{"key": hookLabel(h), "operator": "Exists"}}},
		}
		if h.mutating {
			if h.reinvoke {
				hook["reinvocationPolicy"] = "IfNeeded"
			}
			mutating = append(mutating, hook)
		} else {
			validating = append(validating, hook)
		}
	}
	for _, c := range []struct {
		path, kind string
		hooks      []map[string]any
	}{
		{"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "MutatingWebhookConfiguration", mutating},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "ValidatingWebhookConfiguration", validating},
	} {
		doc, _ := json.Marshal(map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": c.kind,
			"metadata": map[string]any{"name": "fuzz-webhook"}, "webhooks": c.hooks})
		if err := post(c.path, string(doc)); err != nil {
			return nil, err
		}
	}
	// The plugins read configurations from a cache: wait until a
	// configmap labelled for every hook reaches each of them.
	labels := map[string]string{}
	for _, h := range fuzzHooks {
		labels[hookLabel(h)] = ""
	}
	for i := 0; ; i++ {
		w.script(nil)
		doc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("probe-%d", i), "labels": labels}})
		if err := post("/api/v1/namespaces/"+webhookNamespace+"/configmaps", string(doc)); err != nil {
			return nil, err
		}
		called := map[string]bool{}
		for _, c := range w.script(nil) {
			called[c.hook.name] = true
		}
		if len(called) == len(fuzzHooks) {
			return w, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the webhooks were not called within a minute (called: %v)", called)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webhookPaths are the paths a webhook's patch edits, by kind.
var webhookPaths = map[string][]string{
	"ConfigMap": {"/data/a", "/data/b", "/data/k~1x", "/data", "/binaryData/b", "/immutable", "/metadata/labels/l",
		"/metadata/annotations/a", "/metadata/name", "/metadata/namespace", "/metadata/uid", "/metadata/resourceVersion",
		"/metadata/finalizers", "/metadata/finalizers/0", "/metadata/ownerReferences", "/kind", "/apiVersion", "/metadata", "/x", ""},
	"Pod": {"/spec/containers/0/image", "/spec/containers/0/name", "/spec/containers/-", "/spec/containers/1", "/spec/nodeName",
		"/spec/restartPolicy", "/spec/containers/0/resources/limits/cpu", "/spec/activeDeadlineSeconds", "/spec/tolerations/-",
		"/metadata/labels/l", "/metadata/annotations/a", "/metadata/name", "/status/phase", "/spec/serviceAccountName", "/spec", "/kind"},
}

// patchValues are the values a patch operation sets.
func patchValue(in *input) any {
	switch in.intn(12) {
	case 0:
		return "v"
	case 1:
		return "x.y-z"
	case 2:
		return 7
	case 3:
		return true
	case 4:
		return nil
	case 5:
		return map[string]any{"name": "c2", "image": "busybox"}
	case 6:
		return []any{"a", "b"}
	case 7:
		return map[string]any{}
	case 8:
		return strings.Repeat("h", 300<<10) // over the annotations' and a label's limits
	case 9:
		return "NotValid!"
	case 10:
		return json.RawMessage(in.number())
	default:
		return in.string(16)
	}
}

// buildPatch makes a JSON patch for an object of kind.
func buildPatch(in *input, kind string) []byte {
	switch in.intn(10) {
	case 0:
		return []byte("[]")
	case 1:
		return in.bytes(32) // anything
	case 2:
		return []byte(`{"op":"add","path":"/data/a","value":"v"}`) // not a list
	case 3:
		return []byte(`[{"op":"add"}]`)
	}
	var ops []map[string]any
	for range 1 + in.intn(3) {
		op := pick(in, []string{"add", "add", "replace", "replace", "remove", "test", "copy", "move", "bogus"})
		o := map[string]any{"op": op, "path": pick(in, webhookPaths[kind])}
		switch op {
		case "add", "replace", "test":
			o["value"] = patchValue(in)
		case "copy", "move":
			o["from"] = pick(in, webhookPaths[kind])
		}
		ops = append(ops, o)
	}
	b, _ := json.Marshal(ops)
	return b
}

// buildAnswer decides one webhook's answer.
func buildAnswer(in *input, kind string, mutating bool) hookAnswer {
	a := hookAnswer{status: 200, contentType: "application/json", apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", allowed: true, allowedKey: "allowed"}
	flags := in.byte()
	if flags&1 == 0 { // a well-formed answer, allowed or denied, with or without a patch
		a.allowed = in.intn(4) != 0
		if !a.allowed || in.intn(4) == 0 {
			a.result = &metav1.Status{
				Code:    int32(pick(in, []int{0, 200, 399, 400, 403, 404, 409, 422, 429, 500, 503, 599, 600, 999, 1000, -1, 1 << 30})),
				Message: pick(in, []string{"", "no", "denied: " + in.string(12), strings.Repeat("m", 64<<10)}),
				Reason:  metav1.StatusReason(pick(in, []string{"", "Forbidden", "Invalid", "Custom"})),
				Status:  pick(in, []string{"", metav1.StatusFailure, metav1.StatusSuccess, "Weird"}),
			}
			if in.intn(4) == 0 {
				a.result.Details = &metav1.StatusDetails{Name: "x", RetryAfterSeconds: int32(in.intn(3))}
			}
		}
		if mutating && in.intn(3) != 0 {
			pt := string(admissionv1.PatchTypeJSONPatch)
			a.patchType = &pt
			a.patch = buildPatch(in, kind)
		}
		if in.intn(4) == 0 {
			a.warnings = []string{pick(in, []string{"careful", "", "line\nbreak", strings.Repeat("w", 8<<10), in.string(20)})}
		}
		if in.intn(8) == 0 {
			a.auditAnnotations = map[string]string{"k": in.string(8)}
		}
		return a
	}
	// Something wrong with it.
	switch in.intn(16) {
	case 0:
		a.status = pick(in, []int{201, 202, 204, 302, 400, 404, 500, 503})
	case 1:
		a.raw = pick(in, [][]byte{nil, []byte("not json"), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{`), []byte("null"), []byte("[]")})
		if a.raw == nil {
			a.raw = []byte{}
		}
	case 2:
		a.raw = in.rest()
	case 3:
		a.apiVersion = pick(in, []string{"admission.k8s.io/v1beta1", "-", "v1", "admission.k8s.io/v2"})
	case 4:
		a.kind = pick(in, []string{"-", "Status", "admissionreview"})
	case 5:
		a.noResponse = true
	case 6:
		a.uid = pick(in, []string{"-", "wrong", " "})
	case 7:
		a.allowedKey = pick(in, []string{"Allowed", "ALLOWED"})
	case 8: // a patch without its type, a type without a patch, or another type
		switch in.intn(4) {
		case 0:
			a.patch = []byte(`[{"op":"add","path":"/metadata/labels/l","value":"v"}]`)
		case 1:
			pt := string(admissionv1.PatchTypeJSONPatch)
			a.patchType = &pt
		default:
			pt := pick(in, []string{"", "MergePatch", "jsonpatch"})
			a.patchType = &pt
			a.patch = []byte(`[{"op":"add","path":"/metadata/labels/l","value":"v"}]`)
		}
	case 9:
		a.delay = 1
	case 10:
		a.delay = 2
	case 11:
		a.contentType = pick(in, []string{"-", "text/plain", ";;;", "application/yaml"})
	default: // a patch from a validating webhook too
		pt := string(admissionv1.PatchTypeJSONPatch)
		a.patchType = &pt
		a.patch = buildPatch(in, kind)
	}
	return a
}

// webhookTemplate is the object an input writes, by kind.
func webhookTemplate(kind, name string, labels map[string]string, in *input) map[string]any {
	meta := map[string]any{"name": name, "namespace": webhookNamespace, "labels": labels}
	if kind == "ConfigMap" {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"a": "1"}}
		if in.intn(4) == 0 {
			obj["immutable"] = true
		}
		return obj
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
}

// FuzzWebhook creates, updates and deletes configmaps and pods that
// mutating and validating webhooks (failurePolicy Fail and Ignore, one
// reinvoked IfNeeded) answer from an in-process TLS server with fuzzed
// answers: allowed or denied with any status, JSON patches valid or not
// (invalid values, immutable fields, huge), wrong uid, apiVersion or
// kind, non-JSON bodies, HTTP errors, answers near or past the 1 s
// timeout, warnings. The expected outcome is worked out from the calls
// the webhooks answered, as kube-apiserver 1.37's dispatchers treat each
// answer (webhookOutcome). Properties: FuzzHTTP's (no 5xx outside
// allowed5xx, errors are Status, nothing written by a refused request),
// and:
//   - a call that fails (error, timeout, non-2xx, bad review) under
//     failurePolicy Fail is a 500 InternalError "failed calling webhook";
//     under Ignore the request goes on;
//   - a denial is the webhook's code (400 when below 400) with
//     `admission webhook "<name>" denied the request`;
//   - a patch that does not apply or makes an undecodable object is a 500,
//     whatever the failure policy; an object the patches made invalid is a
//     422 (and no validating webhook is called);
//   - the webhooks are called in order, each only when its label is set;
//   - an accepted write stores exactly the object the webhooks made.
func FuzzWebhook(f *testing.F) {
	s := server(f)
	w := webhooks(f, s)
	for _, seed := range [][]byte{
		{0, 0xff, 0}, {0, 1, 0, 0}, {0, 1, 0, 1, 0, 2, 0, 0, 1, 0}, {1, 0x1f, 0, 0, 0, 0, 0, 0, 0, 0},
		{2, 0x1f}, {3, 3, 1, 1}, {0, 4, 1, 0, 2}, {0, 1, 0, 2, 1, 3, 5, 4, 0},
		{0, 8, 0, 1, 0, 3, 3}, {1, 1, 0, 2, 1, 0, 1, 1}, {4, 2, 0, 0, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		webhookInput(t, s, w, data)
	})
}

// webhookInputs counts inputs, naming each input's object apart.
var webhookInputs int

// webhookInput runs one input of FuzzWebhook and checks its properties;
// it returns the answer.
func webhookInput(t *testing.T, s *liveServer, w *webhookServer, data []byte) (int, []byte) {
	webhookInputs++
	in := &input{data: data}
	op := in.intn(5) // 0,1 create, 2 update, 3 delete, 4 dry-run create
	kind := "ConfigMap"
	if in.intn(4) == 0 {
		kind = "Pod"
	}
	labels := map[string]string{}
	mask := in.byte()
	for i, h := range fuzzHooks {
		if mask&(1<<i) != 0 {
			labels[hookLabel(h)] = ""
		}
	}
	answers := map[string]hookAnswer{}
	for _, h := range fuzzHooks {
		if _, on := labels[hookLabel(h)]; on {
			answers[h.name] = buildAnswer(in, kind, h.mutating)
		}
	}
	name := fmt.Sprintf("w%d-%d", webhookInputs, time.Now().UnixNano()%1e6)
	obj := webhookTemplate(kind, name, labels, in)
	collection := "/api/v1/namespaces/" + webhookNamespace + "/" + strings.ToLower(kind) + "s"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doc, _ := json.Marshal(obj)
	if op == 2 || op == 3 {
		w.script(nil)
		if code, body := s.do(ctx, http.MethodPost, collection, "application/json", doc); code != http.StatusCreated {
			t.Fatalf("creating %s %s for the input: %d %s", kind, name, code, body)
		}
		if op == 2 {
			obj["metadata"].(map[string]any)["annotations"] = map[string]string{"edit": "1"}
			doc, _ = json.Marshal(obj)
		}
	}
	defer func() {
		w.script(nil)
		s.do(ctx, http.MethodDelete, collection+"/"+name+"?gracePeriodSeconds=0", "", nil)
	}()
	req := fuzzRequest{method: http.MethodPost, path: collection, query: map[string][]string{}, contentType: "application/json", body: doc}
	switch op {
	case 2:
		req.method, req.path = http.MethodPut, collection+"/"+name
	case 3:
		req.method, req.path, req.body = http.MethodDelete, collection+"/"+name, nil
	case 4:
		req.query.Set("dryRun", "All")
	}
	w.script(answers)
	rev0, err := s.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code, header, body := s.send(ctx, req)
	calls := w.script(nil)
	rev1, err := s.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkWebhookOutcome(t, s, req, kind, labels, calls, code, header, body, rev0, rev1)
	return code, body
}

// hookOutcome is what kube-apiserver answers.
type hookOutcome struct {
	// code 0: the request goes on (the webhooks let it through).
	code int
	// message, if set, is contained in the Status message.
	message string
	// maybe: the call's result depends on timing (a delayed answer); any
	// of the outcomes of its answer being taken or the call failing.
	maybe bool
}

// webhookOutcome is kube-apiserver's reading of one call: nil when the
// request goes on (obj then the object after the webhook's patch, changed
// whether the patch changed it).
func webhookOutcome(c hookCall, kind string) (out *hookOutcome, obj []byte, changed bool) {
	failed := func(why string) (*hookOutcome, []byte, bool) {
		if !c.hook.fail {
			return nil, c.review.Request.Object.Raw, false
		}
		return &hookOutcome{code: 500, message: fmt.Sprintf("failed calling webhook %q", c.hook.name)}, nil, false
	}
	a := c.answer
	if a.delay == 2 {
		return failed("timeout")
	}
	if a.status < 200 || a.status > 206 || a.status == 204 || a.contentType == ";;;" {
		return failed("status")
	}
	// client-go's JSON decoding: keys are case-sensitive.
	var rev admissionv1.AdmissionReview
	if err := utiljson.Unmarshal(c.body, &rev); err != nil {
		return failed("decode")
	}
	if rev.Response == nil || string(rev.Response.UID) != string(c.review.Request.UID) ||
		rev.APIVersion != "admission.k8s.io/v1" || rev.Kind != "AdmissionReview" {
		return failed("review")
	}
	r := rev.Response
	if c.hook.mutating {
		if len(r.Patch) > 0 && r.PatchType == nil || len(r.Patch) == 0 && r.PatchType != nil || r.PatchType != nil && *r.PatchType == "" {
			return failed("patch type")
		}
	} else if len(r.Patch) > 0 || r.PatchType != nil {
		return failed("validating patch")
	}
	if !r.Allowed {
		st := metav1.Status{}
		if r.Result != nil {
			st = *r.Result
		}
		code := int(st.Code)
		switch {
		case code < 400:
			code = 400
		case code > 999:
			// Not an HTTP status: kube-apiserver's response writer
			// panics on it and its panic filter answers 500.
			code = 500
		}
		return &hookOutcome{code: code, message: fmt.Sprintf("admission webhook %q denied the request", c.hook.name)}, nil, false
	}
	if len(r.Patch) == 0 {
		return nil, c.review.Request.Object.Raw, false
	}
	patch, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		return failed("undecodable patch")
	}
	if len(patch) == 0 {
		return nil, c.review.Request.Object.Raw, false
	}
	orig := c.review.Request.Object.Raw
	if len(orig) == 0 || string(orig) == "null" {
		return &hookOutcome{code: 500, message: "attempted to modify the object"}, nil, false
	}
	if *r.PatchType != admissionv1.PatchTypeJSONPatch {
		return failed("patch type")
	}
	patched, err := patch.Apply(orig)
	if err != nil {
		return &hookOutcome{code: 500}, nil, false
	}
	var before, after runtime.Object = &corev1.ConfigMap{}, &corev1.ConfigMap{}
	if kind == "Pod" {
		before, after = &corev1.Pod{}, &corev1.Pod{}
	}
	if err := utiljson.Unmarshal(patched, after); err != nil {
		return &hookOutcome{code: 500}, nil, false
	}
	// The decoder takes a missing apiVersion or kind as the object's; any
	// other kind (unregistered, or not convertible back) is a 500.
	var tm metav1.TypeMeta
	utiljson.Unmarshal(patched, &tm)
	if tm.Kind != "" && tm.Kind != kind || tm.APIVersion != "" && tm.APIVersion != "v1" {
		return &hookOutcome{code: 500}, nil, false
	}
	utiljson.Unmarshal(orig, before)
	return nil, patched, !apiequality.Semantic.DeepEqual(before, after)
}

// timedOutOutcome is, for an answer near the timeout (taken or failed, by
// timing), the outcome of its call failing, as a maybe; nil for other
// answers, or when the failure lets the request go on.
func timedOutOutcome(c hookCall, kind string) *hookOutcome {
	if c.answer.delay != 1 {
		return nil
	}
	c.answer.delay = 2
	out, _, _ := webhookOutcome(c, kind)
	if out != nil {
		out.maybe = true
	}
	return out
}

// checkWebhookOutcome checks an answer against the calls the webhooks
// answered.
func checkWebhookOutcome(t *testing.T, s *liveServer, req fuzzRequest, kind string, labels map[string]string, calls []hookCall,
	code int, header http.Header, body []byte, rev0, rev1 int64) {
	t.Helper()
	ctx := context.Background()
	report := func(format string, args ...any) {
		t.Helper()
		var b strings.Builder
		for _, c := range calls {
			fmt.Fprintf(&b, "  %s (fail=%v) got %s %s/%s, answered %+v\n    body %.600q\n", c.hook.name, c.hook.fail, c.review.Request.Operation,
				c.review.Request.Namespace, c.review.Request.Name, c.answer, c.body)
		}
		t.Fatalf("%s\nrequest:\n%s\nanswer %d: %.2000s\ncalls:\n%s", fmt.Sprintf(format, args...), req, code, body, b.String())
	}
	var status metav1.Status
	if code >= 400 {
		if !strings.HasPrefix(header.Get("Content-Type"), codec.JSON) {
			report("error answer is not JSON")
		}
		if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
			report("error answer is not a Status")
		}
	}
	// Warnings capped as kube-apiserver's recorder caps them: whole while
	// 4,096 runes together, else each cut to 256.
	total, longest := 0, 0
	for _, h := range header.Values("Warning") {
		text, err := strconv.Unquote(strings.TrimPrefix(h, "299 - "))
		if err != nil {
			report("Warning header %.200q is not `299 - \"text\"`", h)
		}
		n := utf8.RuneCountInString(text)
		total, longest = total+n, max(longest, n)
	}
	if total > 4096 && longest > 256 {
		report("warnings of %d runes together, the longest %d: kube-apiserver cuts each to 256 beyond 4,096", total, longest)
	}
	// Which webhooks were called, in which order: the mutating ones in
	// order (one reinvoked at most once), each only if labelled.
	seen := map[string]int{}
	for _, c := range calls {
		if _, on := labels[hookLabel(c.hook)]; !on {
			report("webhook %s called without its label", c.hook.name)
		}
		seen[c.hook.name]++
		if n := seen[c.hook.name]; n > 2 || n == 2 && !c.hook.reinvoke {
			report("webhook %s called %d times", c.hook.name, n)
		}
	}
	// The expected outcome, replaying the calls.
	var want []hookOutcome // any of these (several validating webhooks may refuse)
	var final []byte
	mutatingEnded := false
	validatingCalled := false
	for _, c := range calls {
		if !c.hook.mutating {
			validatingCalled = true
			continue
		}
		if mutatingEnded {
			report("webhook %s called after the mutating chain ended", c.hook.name)
		}
		out, obj, _ := webhookOutcome(c, kind)
		if fo := timedOutOutcome(c, kind); fo != nil {
			want = append(want, *fo)
		}
		if out != nil {
			want = append(want, *out)
			mutatingEnded = true
			continue
		}
		final = obj
	}
	if validatingCalled && mutatingEnded && len(want) > 0 && !want[len(want)-1].maybe {
		report("validating webhooks called after a mutating webhook refused")
	}
	for _, c := range calls {
		if c.hook.mutating {
			continue
		}
		if final != nil && kind == "ConfigMap" && !sameConfigMap(c.review.Request.Object.Raw, final) && req.method != http.MethodDelete {
			report("validating webhook %s got %s, not the mutating webhooks' result %s", c.hook.name, c.review.Request.Object.Raw, final)
		}
		out, _, _ := webhookOutcome(c, kind)
		if fo := timedOutOutcome(c, kind); fo != nil {
			want = append(want, *fo)
		}
		if out != nil {
			want = append(want, *out)
		}
		final = c.review.Request.Object.Raw
	}
	definite := false
	for _, o := range want {
		if !o.maybe {
			definite = true
		}
	}
	if foreignWebhook(status.Message) {
		// In `go test ./fuzz` every target shares the server: a webhook
		// configuration FuzzHTTP made (its URLs never answer) may match.
		t.Skipf("a webhook another target registered answered: %s", status.Message)
	}
	success := code >= 200 && code < 300
	fromWebhook := false
	for _, o := range want {
		fromWebhook = fromWebhook || code == o.code && strings.Contains(status.Message, o.message)
	}
	switch {
	case success && definite:
		report("accepted, but kube-apiserver would refuse it: %+v", want)
	case success, fromWebhook:
	case definite:
		report("answer %d %q, kube-apiserver's would be one of %+v", code, status.Message, want)
	case code >= 500 && !allowedServerError(code, header, body),
		strings.Contains(status.Message, "failed calling webhook"), strings.Contains(status.Message, "denied the request"):
		// Every webhook let the request through: a refusal is the
		// server's own (validation, conflicts), never a webhook's.
		report("answer %d %q, but the webhooks let the request through (%+v)", code, status.Message, want)
	case code == http.StatusUnprocessableEntity && validatingCalled:
		report("a 422 after the validating webhooks were called: validation comes before them")
	}
	// Nothing written unless accepted (and not a dry run).
	written := rev1 != rev0
	if written && (!success || req.query.Get("dryRun") == "All") {
		report("storage changed (revision %d → %d) on a %d answer", rev0, rev1, code)
	}
	if !success || req.method == http.MethodDelete || req.query.Get("dryRun") == "All" || final == nil {
		return
	}
	// An accepted write stored exactly what the webhooks made.
	stored, err := s.writtenSince(ctx, rev0)
	if err != nil {
		report("reading what was written: %v", err)
	}
	var got []byte
	for _, o := range stored {
		if cm, ok := o.obj.(*corev1.ConfigMap); ok && kind == "ConfigMap" {
			got, _ = json.Marshal(cm)
		}
		if p, ok := o.obj.(*corev1.Pod); ok && kind == "Pod" {
			got, _ = json.Marshal(p)
		}
	}
	if got == nil {
		report("accepted, but no %s was written", kind)
	}
	if kind == "ConfigMap" && !sameConfigMap(got, final) {
		report("stored %s\nbut the webhooks made %s", got, final)
	}
}

// foreignWebhook: msg is about a webhook not of fuzzHooks.
func foreignWebhook(msg string) bool {
	if !strings.Contains(msg, "failed calling webhook") && !strings.Contains(msg, "denied the request") {
		return false
	}
	for _, h := range fuzzHooks {
		if strings.Contains(msg, fmt.Sprintf("%q", h.name)) {
			return false
		}
	}
	return true
}

// sameConfigMap compares two configmaps' JSON, ignoring what the server
// sets after the mutating webhooks (uid, creation time, resourceVersion,
// generation, managed fields).
func sameConfigMap(a, b []byte) bool {
	var x, y corev1.ConfigMap
	if utiljson.Unmarshal(a, &x) != nil || utiljson.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	for _, c := range []*corev1.ConfigMap{&x, &y} {
		c.UID, c.ResourceVersion, c.Generation, c.ManagedFields = "", "", 0, nil
		c.CreationTimestamp = metav1.Time{}
		c.TypeMeta = metav1.TypeMeta{}
	}
	return apiequality.Semantic.DeepEqual(x, y)
}

// FuzzWebhook's generator is only useful if its answers reach every kind
// of outcome: over a few hundred random inputs, accepted writes, failed
// calls (500), denials, patches that do not apply (500 without "failed
// calling webhook") and objects the patches made invalid (422).
func TestWebhookInputsReachEveryOutcome(t *testing.T) {
	s := server(t)
	w := webhooks(t, s)
	rng := rand.New(rand.NewSource(2))
	seen := map[string]int{}
	for range 300 {
		data := make([]byte, 48)
		rng.Read(data)
		code, body := webhookInput(t, s, w, data)
		var st metav1.Status
		json.Unmarshal(body, &st)
		switch {
		case code < 300:
			seen["accepted"]++
		case code == 500 && strings.Contains(st.Message, "failed calling webhook"):
			seen["failed call"]++
		case strings.Contains(st.Message, "denied the request"):
			seen["denied"]++
		case code == 500:
			seen["patch error"]++
		case code == http.StatusUnprocessableEntity:
			seen["invalid"]++
		default:
			seen["other"]++
		}
	}
	t.Logf("outcomes: %v", seen)
	for _, o := range []string{"accepted", "failed call", "denied", "patch error", "invalid"} {
		if seen[o] == 0 {
			t.Errorf("no %q outcome in 300 random inputs: %v", o, seen)
		}
	}
}
