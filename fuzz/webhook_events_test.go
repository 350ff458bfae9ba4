package fuzz

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kprotobuf "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// FuzzWebhook's events inputs: webhooks registered for one of the two
// APIs serving events (core/v1 and events.k8s.io/v1, one storage), under
// matchPolicy Exact or Equivalent, and writes through either API.
//
// kube-apiserver's generic webhook matcher calls a webhook whose rules
// name the request's resource as is; when they do not and its matchPolicy
// is Equivalent, it looks through the equivalent resources (the same
// objects served elsewhere: both event APIs share their storage) and
// calls the webhook for the first its rules name, sending the object
// converted to that version, request.kind/resource the registered ones and
// requestKind/requestResource the request's. A mutating webhook's patch is
// applied to the object in the registered version, which is converted back.
// The oracle below predicts all this from its own field mapping between
// the two Event versions (eventFields), not from the server's conversion.

// eventHook is one webhook registered for events.
type eventHook struct {
	name     string
	short    string // label suffix and URL path
	mutating bool
	// group is the API group its rules name ("" core, or events.k8s.io),
	// version v1.
	group string
	// equivalent: matchPolicy Equivalent, else Exact.
	equivalent bool
}

const eventsGroup = "events.k8s.io"

// eventHooks in the order kube-apiserver calls the mutating ones (one
// configuration, the webhooks in order); all are failurePolicy Fail,
// admissionReviewVersions [v1], selected by their label
// (eventHookLabel) and by namespace fuzz-webhook.
var eventHooks = func() []eventHook {
	var out []eventHook
	for _, m := range []bool{true, false} {
		for _, g := range []string{"", eventsGroup} {
			for _, eq := range []bool{false, true} {
				short := map[bool]string{true: "m", false: "v"}[m] + map[string]string{"": "c", eventsGroup: "e"}[g] + map[bool]string{true: "q", false: "x"}[eq]
				out = append(out, eventHook{name: short + ".events.fuzz.kubeproof.io", short: short, mutating: m, group: g, equivalent: eq})
			}
		}
	}
	return out
}()

// eventHookLabel is the label (any value) selecting an event hook.
func eventHookLabel(h eventHook) string { return "ehook.fuzz.kubeproof.io/" + h.short }

// eventFields maps the fields FuzzWebhook's events carry, named in core/v1,
// to their events.k8s.io/v1 names (kube-apiserver's events.k8s.io
// conversion: note is the message, regarding the involved object,
// reportingController the reporting component, deprecatedCount the count;
// the rest keep their names).
var eventFields = map[string]string{
	"message": "note", "involvedObject": "regarding", "reportingComponent": "reportingController",
	"reportingInstance": "reportingInstance", "action": "action", "reason": "reason", "type": "type", "eventTime": "eventTime",
	"count": "deprecatedCount",
}

// fieldIn is a core/v1 field's name in group's Event.
func fieldIn(group, core string) string {
	if group == eventsGroup {
		return eventFields[core]
	}
	return core
}

// eventState is what the oracle tracks of an event, version-neutral.
type eventState struct {
	name, ns    string
	labels      map[string]string
	annotations map[string]string
	fields      map[string]any // core/v1 field name → JSON value
}

func (e eventState) clone() eventState {
	c := e
	c.labels, c.annotations, c.fields = maps.Clone(e.labels), maps.Clone(e.annotations), maps.Clone(e.fields)
	return c
}

// doc renders the event as group's Event.
func (e eventState) doc(group string) map[string]any {
	api := "v1"
	if group != "" {
		api = group + "/v1"
	}
	meta := map[string]any{"name": e.name, "namespace": e.ns}
	if len(e.labels) > 0 {
		meta["labels"] = maps.Clone(e.labels)
	}
	if len(e.annotations) > 0 {
		meta["annotations"] = maps.Clone(e.annotations)
	}
	out := map[string]any{"apiVersion": api, "kind": "Event", "metadata": meta}
	for k, v := range e.fields {
		out[fieldIn(group, k)] = v
	}
	return out
}

// sameEvent reports how obj (an Event's JSON as group's) differs from e
// in the fields e tracks ("" when it does not).
func sameEvent(obj []byte, group string, e eventState) string {
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		return fmt.Sprintf("not JSON: %v", err)
	}
	want := e.doc(group)
	if m["apiVersion"] != want["apiVersion"] || m["kind"] != "Event" {
		return fmt.Sprintf("apiVersion %v kind %v, want %v Event", m["apiVersion"], m["kind"], want["apiVersion"])
	}
	meta, _ := m["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace"} {
		if meta[k] != want["metadata"].(map[string]any)[k] {
			return fmt.Sprintf("metadata.%s %v, want %v", k, meta[k], want["metadata"].(map[string]any)[k])
		}
	}
	for _, k := range []string{"labels", "annotations"} {
		got, _ := json.Marshal(meta[k])
		w, _ := json.Marshal(want["metadata"].(map[string]any)[k])
		if string(got) != string(w) {
			return fmt.Sprintf("metadata.%s %s, want %s", k, got, w)
		}
	}
	for core := range e.fields {
		f := fieldIn(group, core)
		got, _ := json.Marshal(m[f])
		w, _ := json.Marshal(want[f])
		if f == "eventTime" {
			// A MicroTime: compare the instant.
			var a, b metav1.MicroTime
			if json.Unmarshal(got, &a) == nil && json.Unmarshal(w, &b) == nil && a.Equal(&b) {
				continue
			}
		}
		if string(got) != string(w) && !(string(got) == "null" && (string(w) == `""` || string(w) == "0")) { // empty ones are left out
			return fmt.Sprintf("%s %s, want %s", f, got, w)
		}
	}
	return ""
}

// eventAnswer is one event hook's scripted answer.
type eventAnswer struct {
	deny bool
	// note, when set (mutating only), is written to the message field
	// under its name in the hook's version; annotate adds the hook's
	// annotation; unlabel removes the label of this later hook; count,
	// when set, is written to the count (deprecatedCount in
	// events.k8s.io/v1).
	note     *string
	annotate bool
	unlabel  string
	count    *int
}

// eventCall is one call an event hook received.
type eventCall struct {
	hook eventHook
	req  admissionv1.AdmissionRequest
}

// eventHookServer answers the event hooks over TLS.
type eventHookServer struct {
	srv *httptest.Server
	// registrations counts register's calls, naming their probes apart.
	registrations int
	mu            sync.Mutex
	answers       map[string]eventAnswer
	calls         []eventCall
}

func (w *eventHookServer) script(answers map[string]eventAnswer) []eventCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.calls
	w.answers, w.calls = answers, nil
	return calls
}

// patch is the JSON patch of answer a of hook h, in h's version.
func (a eventAnswer) patch(h eventHook) []byte {
	var ops []map[string]any
	if a.note != nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/" + fieldIn(h.group, "message"), "value": *a.note})
	}
	if a.annotate {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/ehook.fuzz.kubeproof.io~1" + h.short, "value": h.group + "/v1"})
	}
	if a.unlabel != "" {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/labels/ehook.fuzz.kubeproof.io~1" + a.unlabel})
	}
	if a.count != nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/" + fieldIn(h.group, "count"), "value": *a.count})
	}
	if ops == nil {
		return nil
	}
	b, _ := json.Marshal(ops)
	return b
}

func (w *eventHookServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var hook eventHook
	for _, h := range eventHooks {
		if "/"+h.short == r.URL.Path {
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
	ans := w.answers[hook.short]
	w.calls = append(w.calls, eventCall{hook: hook, req: *rev.Request})
	w.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: !ans.deny}
	if ans.deny {
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "no " + hook.short}
	} else if p := ans.patch(hook); p != nil && hook.mutating {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = p, &pt
	}
	out, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: rev.TypeMeta, Response: resp})
	rw.Header().Set("Content-Type", "application/json")
	rw.Write(out)
}

var (
	eventHooksOnce sync.Mutex
	theEventHooks  *eventHookServer
	eventHooksErr  error
)

// eventWebhooks starts the event hooks' server and registers them (once
// per process), after FuzzWebhook's own webhooks (which create the
// namespaces).
func eventWebhooks(t testing.TB, s *liveServer) *eventHookServer {
	t.Helper()
	webhooks(t, s)
	eventHooksOnce.Lock()
	defer eventHooksOnce.Unlock()
	if theEventHooks == nil && eventHooksErr == nil {
		theEventHooks, eventHooksErr = startEventWebhooks(s)
	} else if eventHooksErr == nil && !webhookConfigurationsExist(s, eventWebhookConfiguration) {
		// Deleted by another target's request, as webhooks says.
		eventHooksErr = theEventHooks.register(s)
	}
	if eventHooksErr != nil {
		t.Fatalf("starting the event webhooks: %v", eventHooksErr)
	}
	return theEventHooks
}

func startEventWebhooks(s *liveServer) (*eventHookServer, error) {
	w := &eventHookServer{}
	w.srv = httptest.NewUnstartedServer(w)
	cert, err := webhookCert()
	if err != nil {
		return nil, fmt.Errorf("making the event webhook server's certificate: %w", err)
	}
	w.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	w.srv.StartTLS()
	if err := w.register(s); err != nil {
		return nil, err
	}
	return w, nil
}

// eventWebhookConfiguration names the mutating and the validating webhook
// configuration of eventHooks.
const eventWebhookConfiguration = "fuzz-webhook-events"

// register creates eventHooks' configurations (those already there are
// kept) and waits until the admission plugins call them.
func (w *eventHookServer) register(s *liveServer) error {
	w.registrations++
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mutating, validating []map[string]any
	for _, h := range eventHooks {
		policy := "Exact"
		if h.equivalent {
			policy = "Equivalent"
		}
		hook := map[string]any{
			"name":                    h.name,
			"clientConfig":            map[string]any{"url": w.srv.URL + "/" + h.short, "caBundle": ca},
			"rules":                   []any{map[string]any{"operations": []string{"CREATE", "UPDATE", "DELETE"}, "apiGroups": []string{h.group}, "apiVersions": []string{"v1"}, "resources": []string{"events"}}},
			"matchPolicy":             policy,
			"failurePolicy":           "Fail",
			"sideEffects":             "None",
			"admissionReviewVersions": []string{"v1"},
			"timeoutSeconds":          5,
			"namespaceSelector":       nsSel([]string{"fuzz-webhook", "on"}),
			"objectSelector":          map[string]any{"matchExpressions": []any{map[string]any{"key": eventHookLabel(h), "operator": "Exists"}}},
		}
		if h.mutating {
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
			"metadata": map[string]any{"name": eventWebhookConfiguration}, "webhooks": c.hooks})
		if code, body := s.do(ctx, http.MethodPost, c.path, "application/json", doc); code != http.StatusCreated && code != http.StatusConflict {
			return fmt.Errorf("POST %s: %d %s", c.path, code, body)
		}
	}
	// Wait until the configurations reach the plugins' caches: a core/v1
	// event labelled for every hook calls the core/v1 Exact ones (the
	// rest is the oracle's to check).
	for i := 0; ; i++ {
		e := newEventState(fmt.Sprintf("probe-%d-%d", w.registrations, i), nil)
		for _, h := range eventHooks {
			e.labels[eventHookLabel(h)] = ""
		}
		w.script(nil)
		doc, _ := json.Marshal(e.doc(""))
		if code, body := s.do(ctx, http.MethodPost, "/api/v1/namespaces/"+webhookNamespace+"/events", "application/json", doc); code != http.StatusCreated {
			return fmt.Errorf("POST a probe event: %d %s", code, body)
		}
		called := map[string]bool{}
		for _, c := range w.script(nil) {
			called[c.hook.short] = true
		}
		if called["mcx"] && called["vcx"] {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the event webhooks were not called within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newEventState is a valid event for both APIs (events.k8s.io/v1's
// validation wants eventTime, reportingController, reportingInstance,
// action, reason and a type), in FuzzWebhook's first namespace.
func newEventState(name string, labels map[string]string) eventState {
	if labels == nil {
		labels = map[string]string{}
	}
	return eventState{name: name, ns: webhookNamespace, labels: labels, annotations: map[string]string{"fuzz": "1"},
		fields: map[string]any{
			"message": "original", "reason": "Fuzzed", "action": "Testing", "type": "Normal",
			"reportingComponent": "kubeproof.io/fuzz", "reportingInstance": "fuzz-1",
			"eventTime":      metav1.NewMicroTime(time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)),
			"involvedObject": map[string]any{"kind": "Pod", "namespace": webhookNamespace, "name": "p"},
		}}
}

// eventNotes are the messages (notes) mutating hooks write.
var eventNotes = []string{"", "by a hook", "ünïcode ✓", strings.Repeat("n", 1024), strings.Repeat("n", 1025)}

// eventInput runs one events input of FuzzWebhook: op as webhookInput's
// (0,1 create, 2 update, 3 delete, 4 dry-run create), the API written
// through, the hooks labelled and their answers from the fuzzer's bytes.
func eventInput(t *testing.T, s *liveServer, op int, in *input) webhookRun {
	w := eventWebhooks(t, s)
	group := ""
	if in.bool() {
		group = eventsGroup
	}
	mask := in.byte()
	labels := map[string]string{}
	answers := map[string]eventAnswer{}
	for i, h := range eventHooks {
		if mask&(1<<i) == 0 {
			continue
		}
		labels[eventHookLabel(h)] = ""
		var a eventAnswer
		switch v := in.intn(4); v {
		case 1:
			a.deny = true
		case 2, 3:
			if h.mutating && op != 3 {
				if in.bool() {
					note := pick(in, eventNotes)
					a.note = &note
				}
				a.annotate = in.bool()
				if j := in.intn(len(eventHooks) + 2); j < len(eventHooks) && j > i {
					a.unlabel = eventHooks[j].short
				}
				if v == 3 {
					c := pick(in, []int{0, 2, 3})
					a.count = &c
				}
			}
		}
		answers[h.short] = a
	}
	// An update's stored event recorded through core/v1 with a count
	// (deprecated in events.k8s.io/v1, which still updates it), the
	// update keeping it.
	legacy := op == 2 && in.bool()
	proto := in.bool()
	name := fmt.Sprintf("e%d-%d", webhookInputs, time.Now().UnixNano()%1e6)
	return eventCase(t, s, w, op, group, name, labels, answers, proto, legacy)
}

// eventCase writes an event through group's API with the hooks answering
// answers, and checks the answer against the oracle.
func eventCase(t *testing.T, s *liveServer, w *eventHookServer, op int, group, name string, labels map[string]string,
	answers map[string]eventAnswer, proto, legacy bool) webhookRun {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := map[string]string{"": "/api/v1", eventsGroup: "/apis/events.k8s.io/v1"}
	collection := prefix[group] + "/namespaces/" + webhookNamespace + "/events"
	e := newEventState(name, labels)
	var old *eventState
	switch op {
	case 2: // the stored event unlabelled (no hook called), then updated
		pre := newEventState(name, nil)
		doc, _ := json.Marshal(pre.doc(group))
		if legacy {
			pre.fields["count"], e.fields["count"] = 3, 3
			doc, _ = json.Marshal(pre.doc(""))
			req := prefix[""] + "/namespaces/" + webhookNamespace + "/events"
			if code, body := s.do(ctx, http.MethodPost, req, "application/json", doc); code != http.StatusCreated {
				t.Fatalf("creating event %s for the input: %d %s", name, code, body)
			}
		} else if code, body := s.do(ctx, http.MethodPost, collection, "application/json", doc); code != http.StatusCreated {
			t.Fatalf("creating event %s for the input: %d %s", name, code, body)
		}
		e.annotations["edit"] = "1"
		old = &pre
	case 3: // the stored event labelled (its hooks allowing), then deleted
		w.script(nil)
		doc, _ := json.Marshal(e.doc(group))
		if code, body := s.do(ctx, http.MethodPost, collection, "application/json", doc); code != http.StatusCreated {
			t.Fatalf("creating event %s for the input: %d %s", name, code, body)
		}
		pre := e.clone()
		old = &pre
	}
	defer func() {
		w.script(nil)
		s.do(ctx, http.MethodDelete, collection+"/"+name, "", nil)
	}()
	doc, _ := json.Marshal(e.doc(group))
	req := fuzzRequest{method: http.MethodPost, path: collection, query: map[string][]string{}, contentType: "application/json", body: doc}
	switch op {
	case 2:
		req.method, req.path = http.MethodPut, collection+"/"+name
	case 3:
		req.method, req.path, req.body = http.MethodDelete, collection+"/"+name, nil
	case 4:
		req.query.Set("dryRun", "All")
	}
	if proto {
		req.accept = protobufAccept
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
	report := func(format string, args ...any) {
		t.Helper()
		var b strings.Builder
		for _, c := range calls {
			fmt.Fprintf(&b, "  %s %s kind %v resource %v requestKind %v requestResource %v\n    object %s\n    oldObject %s\n", c.hook.name, c.req.Operation,
				c.req.Kind, c.req.Resource, c.req.RequestKind, c.req.RequestResource, c.req.Object.Raw, c.req.OldObject.Raw)
		}
		t.Fatalf("%s\nrequest:\n%s\nanswers %+v\nanswer %d: %.2000s\ncalls:\n%s", fmt.Sprintf(format, args...), req, answers, code, body, b.String())
	}
	if proto {
		var err error
		if header, body, err = protobufAsJSON(header, body); err != nil {
			report("protobuf answer: %v", err)
		}
	}
	want := predictEvents(op, group, e, old, answers)
	// The calls: the mutating hooks in order, then every validating one
	// (called at once, so in any order), each seeing what it should.
	if len(calls) < len(want.mutating) {
		report("%d calls, want the mutating hooks %v at least", len(calls), want.mutating)
	}
	for i, c := range calls {
		var exp expectedCall
		if i < len(want.mutating) {
			exp = want.mutating[i]
			if c.hook.short != exp.hook.short {
				report("call %d went to %s, want %s", i, c.hook.name, exp.hook.name)
			}
		} else {
			j := slices.IndexFunc(want.validating, func(x expectedCall) bool { return x.hook.short == c.hook.short })
			if j < 0 {
				report("call %d went to %s, which should not be called (want validating %v)", i, c.hook.name, want.validating)
			}
			exp = want.validating[j]
		}
		reqGVR := metav1.GroupVersionResource{Group: group, Version: "v1", Resource: "events"}
		reqGVK := metav1.GroupVersionKind{Group: group, Version: "v1", Kind: "Event"}
		hookGVR := metav1.GroupVersionResource{Group: c.hook.group, Version: "v1", Resource: "events"}
		hookGVK := metav1.GroupVersionKind{Group: c.hook.group, Version: "v1", Kind: "Event"}
		if c.req.Resource != hookGVR || c.req.Kind != hookGVK || c.req.RequestResource == nil || *c.req.RequestResource != reqGVR ||
			c.req.RequestKind == nil || *c.req.RequestKind != reqGVK {
			report("%s was sent resource %v kind %v requestResource %v requestKind %v; want %v %v %v %v", c.hook.name, c.req.Resource, c.req.Kind,
				c.req.RequestResource, c.req.RequestKind, hookGVR, hookGVK, reqGVR, reqGVK)
		}
		if exp.object != nil {
			if d := sameEvent(c.req.Object.Raw, c.hook.group, *exp.object); d != "" {
				report("%s was sent an object that differs from the one in its version: %s", c.hook.name, d)
			}
		} else if len(c.req.Object.Raw) > 0 && string(c.req.Object.Raw) != "null" {
			report("%s was sent an object on a delete", c.hook.name)
		}
		if old != nil {
			if d := sameEvent(c.req.OldObject.Raw, c.hook.group, *old); d != "" && op == 3 {
				report("%s was sent an old object that differs from the stored one in its version: %s", c.hook.name, d)
			}
		}
	}
	if len(calls) != len(want.mutating)+len(want.validating) {
		report("%d calls, want mutating %v then validating %v", len(calls), want.mutating, want.validating)
	}
	var st metav1.Status
	if code >= 400 {
		if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
			report("error answer is not a Status")
		}
	}
	switch {
	case want.code == 0 && (code < 200 || code > 299):
		report("answer %d, want success", code)
	case want.code == http.StatusUnprocessableEntity && (code != want.code || st.Reason != metav1.StatusReasonInvalid ||
		slices.ContainsFunc(want.invalid, func(f string) bool { return !strings.Contains(st.Message, f+": Invalid value: ") })):
		report("answer %d %s %q, want 422 Invalid naming %v", code, st.Reason, st.Message, want.invalid)
	case want.code == http.StatusInternalServerError && (code != want.code || st.Reason != metav1.StatusReasonInternalError):
		report("answer %d %s, want a 500 InternalError (a patch that does not apply)", code, st.Reason)
	case want.code == http.StatusForbidden && (code != want.code || !slices.ContainsFunc(want.deniedBy, func(n string) bool {
		return strings.Contains(st.Message, fmt.Sprintf("admission webhook %q denied the request: no ", n))
	})):
		report("answer %d %q, want a 403 denial by one of %v", code, st.Message, want.deniedBy)
	}
	written := rev0 != rev1
	if written != (want.code == 0 && op != 4) {
		report("storage changed: %v (revision %d → %d)", written, rev0, rev1)
	}
	// What is stored, read through both APIs.
	for _, g := range []string{"", eventsGroup} {
		gc, gb := s.do(ctx, http.MethodGet, prefix[g]+"/namespaces/"+webhookNamespace+"/events/"+name, "", nil)
		var stored *eventState
		switch {
		case op == 3 && want.code != 0, op == 2:
			stored = old
			if op == 2 && want.code == 0 {
				stored = want.final
			}
		case op != 3 && op != 4 && want.code == 0:
			stored = want.final
		}
		if stored == nil {
			if gc != http.StatusNotFound {
				report("GET through %q after the request: %d, want 404", g, gc)
			}
			continue
		}
		if gc != http.StatusOK {
			report("GET through %q after the request: %d %s", g, gc, gb)
		}
		if d := sameEvent(gb, g, *stored); d != "" {
			report("stored event read through %q: %s\n%s", g, d, gb)
		}
		if g == group && code >= 200 && code < 300 && op != 3 && op != 4 {
			if d := sameEvent(body, g, *stored); d != "" {
				report("the answer's event differs from what is stored: %s", d)
			}
		}
	}
	return webhookRun{code: code, body: body, ns: webhookNamespace, labels: labels, eventCalls: calls, eventAnswers: answers, group: group, proto: proto}
}

// expectedCall is a call the oracle expects: the hook and the object it
// is sent (nil on a delete), version-neutral.
type expectedCall struct {
	hook   eventHook
	object *eventState
}

func (c expectedCall) String() string { return c.hook.short }

// eventPrediction is the oracle's answer for an events input.
type eventPrediction struct {
	mutating, validating []expectedCall
	// code 0: accepted; 403 denied by one of deniedBy; 422 invalid.
	code     int
	deniedBy []string
	// invalid are the fields a 422 names.
	invalid []string
	final   *eventState
}

// predictEvents works out the calls and the answer of a write through
// group's API of e (old: the stored event of an update or delete):
//   - a hook is called when its rules name the request's API, or, under
//     Equivalent, the other (both serve these events); on a write the
//     object at its turn must carry its label (an update's old object is
//     unlabelled), on a delete the stored one;
//   - mutating hooks in order, each seeing the earlier ones' patches; a
//     denial ends the request (403), as does a patch that does not apply
//     (removing a label an earlier patch removed: 500 InternalError);
//   - events.k8s.io/v1's update validation keeps the note (the message)
//     and the deprecated count as they were: a mutating hook changing
//     them makes the update a 422, before the validating hooks (a count
//     kept is fine, though a create through that API must leave it
//     unset: a 422 too); core/v1 updates of events with an eventTime are
//     validated as creates; a note over 1 KiB is a 422 for either API
//     (its validation caps the message of an event with an eventTime);
//     the errors name core/v1's fields (message, count) whichever API
//     wrote the event, as kube-apiserver validates the internal Event;
//   - every validating hook so selected is called with the final object;
//     a denial by any is a 403.
func predictEvents(op int, group string, e eventState, old *eventState, answers map[string]eventAnswer) eventPrediction {
	var p eventPrediction
	called := func(h eventHook, cur eventState) bool {
		if h.group != group && !h.equivalent {
			return false
		}
		if op == 3 {
			_, on := old.labels[eventHookLabel(h)]
			return on
		}
		_, on := cur.labels[eventHookLabel(h)]
		return on
	}
	cur := e.clone()
	for _, h := range eventHooks {
		if !h.mutating || !called(h, cur) {
			continue
		}
		c := expectedCall{hook: h}
		if op != 3 {
			o := cur.clone()
			c.object = &o
		}
		p.mutating = append(p.mutating, c)
		a := answers[h.short]
		if a.deny {
			p.code, p.deniedBy = http.StatusForbidden, []string{h.name}
			return p
		}
		if op == 3 {
			continue
		}
		if a.note != nil {
			cur.fields["message"] = *a.note
		}
		if a.count != nil {
			cur.fields["count"] = *a.count
		}
		if a.annotate {
			cur.annotations["ehook.fuzz.kubeproof.io/"+h.short] = h.group + "/v1"
		}
		if a.unlabel != "" {
			// Removing a label the object no longer has: the patch does
			// not apply, a 500 whatever the failure policy.
			if _, on := cur.labels["ehook.fuzz.kubeproof.io/"+a.unlabel]; !on {
				p.code = http.StatusInternalServerError
				return p
			}
			delete(cur.labels, "ehook.fuzz.kubeproof.io/"+a.unlabel)
		}
	}
	if op != 3 {
		// kube-apiserver validates the internal Event: errors name
		// core/v1's fields whichever API wrote it.
		msg, _ := cur.fields["message"].(string)
		count := func(e *eventState) int { n, _ := e.fields["count"].(int); return n }
		if len(msg) > 1024 || op == 2 && group == eventsGroup && msg != old.fields["message"] {
			p.invalid = append(p.invalid, "message")
		}
		if op != 2 && group == eventsGroup && count(&cur) != 0 || op == 2 && group == eventsGroup && count(&cur) != count(old) {
			p.invalid = append(p.invalid, "count")
		}
		if p.invalid != nil {
			p.code = http.StatusUnprocessableEntity
			return p
		}
	}
	for _, h := range eventHooks {
		if h.mutating || !called(h, cur) {
			continue
		}
		c := expectedCall{hook: h}
		if op != 3 {
			o := cur.clone()
			c.object = &o
		}
		p.validating = append(p.validating, c)
		if answers[h.short].deny {
			p.code = http.StatusForbidden
			p.deniedBy = append(p.deniedBy, h.name)
		}
	}
	p.final = &cur
	return p
}

// protobufAccept is the Accept header of FuzzWebhook's inputs asking for
// protobuf answers (every resource it writes is a built-in one, which
// kube-apiserver serves as protobuf, errors included).
const protobufAccept = "application/vnd.kubernetes.protobuf"

// protobufAsJSON decodes a protobuf answer (client-go's scheme and
// apimachinery's protobuf serializer, as a client does) and gives it back
// as the JSON answer would be, so the JSON oracle reads it: an answer
// that is not protobuf or does not decode is an error.
func protobufAsJSON(header http.Header, body []byte) (http.Header, []byte, error) {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, protobufAccept) {
		return header, body, fmt.Errorf("Content-Type %q, want %s", ct, protobufAccept)
	}
	obj, gvk, err := kprotobuf.NewSerializer(clientscheme.Scheme, clientscheme.Scheme).Decode(body, nil, nil)
	if err != nil {
		return header, body, fmt.Errorf("decoding: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	out, err := json.Marshal(obj)
	if err != nil {
		return header, body, fmt.Errorf("encoding %v as JSON: %w", gvk, err)
	}
	h := header.Clone()
	h.Set("Content-Type", "application/json")
	return h, out, nil
}

// sameJSONObject compares two objects' JSON as the typed objects they
// decode to (client-go's scheme): "" when semantically equal.
func sameJSONObject(a, b []byte) string {
	dec := clientscheme.Codecs.UniversalDeserializer()
	x, _, err := dec.Decode(a, nil, nil)
	if err != nil {
		return fmt.Sprintf("decoding the first: %v", err)
	}
	y, _, err := dec.Decode(b, nil, nil)
	if err != nil {
		return fmt.Sprintf("decoding the second: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(x, y) {
		return "they differ"
	}
	return ""
}

// TestWebhookEventsReachEveryOutcome: random events inputs of FuzzWebhook
// (kind byte 7) reach, through both APIs, Exact and Equivalent hooks of
// both versions called (an Equivalent one for the other API's request),
// a patch made in the other version stored, 403 denials and 422s, and
// protobuf answers, objects and Status errors.
func TestWebhookEventsReachEveryOutcome(t *testing.T) {
	s := server(t)
	eventWebhooks(t, s)
	rng := rand.New(rand.NewSource(3))
	seen := map[string]int{}
	for range 150 {
		data := make([]byte, 40)
		rng.Read(data)
		run := eventInput(t, s, int(data[0])%5, &input{data: data[1:]})
		ok := run.code >= 200 && run.code < 300
		switch {
		case ok:
			seen["accepted"]++
		case run.code == http.StatusForbidden:
			seen["denied"]++
		case run.code == http.StatusUnprocessableEntity:
			seen["invalid"]++
		case run.code == http.StatusInternalServerError:
			seen["patch error"]++
		}
		if run.proto {
			seen[fmt.Sprintf("protobuf ok=%v", ok)]++
		}
		for _, c := range run.eventCalls {
			switch {
			case c.hook.group != run.group:
				seen["equivalent hook of the other API"]++
				if c.hook.mutating && ok && run.eventAnswers[c.hook.short].note != nil {
					seen["other API's patch stored"]++
				}
				if c.hook.mutating && run.eventAnswers[c.hook.short].count != nil {
					seen[fmt.Sprintf("other API's count patch, accepted %v", ok)]++
				}
			case c.hook.equivalent:
				seen["equivalent hook of the request's API"]++
			default:
				seen["exact hook"]++
			}
		}
	}
	for _, k := range []string{"accepted", "denied", "invalid", "patch error", "protobuf ok=true", "protobuf ok=false", "equivalent hook of the other API",
		"other API's patch stored", "other API's count patch, accepted true", "other API's count patch, accepted false", "equivalent hook of the request's API", "exact hook"} {
		if seen[k] == 0 {
			t.Errorf("no input reached %q (%v)", k, seen)
		}
	}
	t.Logf("%v", seen)
}
