package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server-side apply or strategic merge patch body that does not parse,
// or whose result is not an object of the resource's kind, is refused in
// kube-apiserver's words (its patch handler's applyPatcher and smpPatcher,
// and apimachinery's field manager for apply):
//
//   - apply: a body that is not YAML or not a map is a 400 "error decoding
//     YAML: <error>"; a body of another kind, group or version, or naming
//     none (an empty or null body too), the field manager's 400 "invalid
//     object type: <group>/<version>, Kind=<kind>"; managed fields in the
//     body a 400; duplicate fields under fieldValidation=Strict, once the
//     apply worked, a 400 "error strict decoding YAML: <error>"; a field
//     the kind does not have or of the wrong type "failed to create typed
//     patch object (<ns>/<name>; <gvk>): <path>: <error>", which upstream
//     answers 500 and this server 400;
//   - strategic merge patch: a body that is not a JSON object is a 400 with
//     the JSON decoder's error; a malformed directive the merge library's
//     400 (or 422); a merge result whose fields do not decode, and unknown
//     or duplicate fields under Strict, a 422 on the field "patch" whose
//     value is the patch; the kind and apiVersion a patch writes are
//     ignored; the merge library's other errors (an unknown $patch
//     directive, a directive's value of the wrong type), which upstream
//     answers 500, a 400 with the library's message.
//
// No refused patch changes the object.
func TestPatchBodyDecodeErrors(t *testing.T) {
	e := newEnv(t, nil)
	const (
		cms     = "/api/v1/namespaces/default/configmaps"
		deps    = "/apis/apps/v1/namespaces/default/deployments"
		applyT  = "application/apply-patch+yaml"
		smpT    = "application/strategic-merge-patch+json"
		mergeT  = "application/merge-patch+json"
		typedCM = `failed to create typed patch object (/a; /v1, Kind=ConfigMap): `
	)
	if r := e.do("POST", cms, []byte(`{"metadata":{"name":"a"},"data":{"k":"v"}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	if r := e.do("POST", deps, []byte(`{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	before := e.do("GET", cms+"/a", nil)
	cases := []struct {
		id, path, ctype, body string
		code                  int
		reason                metav1.StatusReason
		// message is the whole message, or its start when prefix.
		message string
		prefix  bool
	}{
		// Server-side apply.
		{id: "apply empty", path: cms + "/a?fieldManager=m", ctype: applyT, body: ``,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: /, Kind=`},
		{id: "apply null", path: cms + "/a?fieldManager=m", ctype: applyT, body: `null`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: /, Kind=`},
		{id: "apply empty creates nothing", path: cms + "/missing?fieldManager=m", ctype: applyT, body: ``,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: /, Kind=`},
		{id: "apply list", path: cms + "/a?fieldManager=m", ctype: applyT, body: `[1,2]`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}`},
		{id: "apply malformed YAML", path: cms + "/a?fieldManager=m", ctype: applyT, body: "a: b: c",
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `error decoding YAML: error converting YAML to JSON: yaml: mapping values are not allowed in this context`},
		{id: "apply malformed JSON", path: cms + "/a?fieldManager=m", ctype: applyT, body: `{"apiVersion":"v1",`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `error decoding YAML: error converting YAML to JSON: yaml: line 1: did not find expected node content`},
		{id: "apply other kind", path: cms + "/a?fieldManager=m", ctype: applyT, body: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: /v1, Kind=Secret`},
		{id: "apply kind in another group", path: cms + "/a?fieldManager=m", ctype: applyT, body: "apiVersion: apps/v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: apps/v1, Kind=ConfigMap`},
		{id: "apply no apiVersion", path: cms + "/a?fieldManager=m", ctype: applyT, body: "kind: ConfigMap\nmetadata:\n  name: a\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: /, Kind=ConfigMap`},
		{id: "apply other version", path: deps + "/d?fieldManager=m", ctype: applyT, body: "apiVersion: apps/v1beta2\nkind: Deployment\nmetadata:\n  name: d\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: apps/v1beta2, Kind=Deployment`},
		{id: "apply managed fields", path: cms + "/a?fieldManager=m", ctype: applyT,
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  managedFields: []\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: `metadata.managedFields must be nil`},
		{id: "apply wrong type", path: cms + "/a?fieldManager=m", ctype: applyT, body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: 5\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: typedCM + `.data: expected map, got `, prefix: true},
		{id: "apply unknown field", path: cms + "/a?fieldManager=m&fieldValidation=Ignore", ctype: applyT, body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nspec: {}\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: typedCM + `.spec: field not declared in schema`},
		{id: "apply duplicate field, Strict", path: cms + "/a?fieldManager=m&fieldValidation=Strict", ctype: applyT,
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: v\ndata:\n  n: w\n",
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 8: key \"data\" already set in map"},
		{id: "apply duplicate field and other kind", path: cms + "/a?fieldManager=m&fieldValidation=Strict", ctype: applyT,
			body: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\nkind: Secret\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid object type: /v1, Kind=Secret`},

		// Strategic merge patch.
		{id: "smp malformed", path: cms + "/a", ctype: smpT, body: `{"data":`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `unexpected end of JSON input`},
		{id: "smp malformed, Ignore", path: cms + "/a?fieldValidation=Ignore", ctype: smpT, body: `{"data":`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `unexpected end of JSON input`},
		{id: "smp list", path: cms + "/a", ctype: smpT, body: `[1,2]`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `json: cannot unmarshal array into Go value of type map[string]interface {}`},
		{id: "smp empty", path: cms + "/a", ctype: smpT, body: ``,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `unexpected end of JSON input`},
		{id: "smp wrong type", path: cms + "/a", ctype: smpT, body: `{"data":{"k":1}}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: ` "" is invalid: patch: Invalid value: "map[data:map[k:1]]": `, prefix: true},
		{id: "smp list for a map", path: cms + "/a", ctype: smpT, body: `{"data":["x"]}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: ` "" is invalid: patch: Invalid value: "map[data:[x]]": `, prefix: true},
		{id: "smp unknown field, Strict", path: cms + "/a?fieldValidation=Strict", ctype: smpT, body: `{"spec":{"x":1}}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: ` "" is invalid: patch: Invalid value: "map[spec:map[x:1]]": strict decoding error: unknown field "spec"`},
		{id: "smp duplicate field, Strict", path: cms + "/a?fieldValidation=Strict", ctype: smpT, body: `{"data":{"k":"v"},"data":{"k":"v"}}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: ` "" is invalid: patch: Invalid value: "map[data:map[k:v]]": strict decoding error: duplicate field "data"`},
		{id: "smp unknown $patch", path: cms + "/a", ctype: smpT, body: `{"data":{"$patch":"bogus"}}`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `unknown patch type: bogus in map: map[$patch:bogus]`},
		{id: "smp bad $retainKeys", path: deps + "/d", ctype: smpT, body: `{"spec":{"strategy":{"$retainKeys":"type"}}}`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid patch format of retainKeys`},
		{id: "smp $setElementOrder not a list", path: cms + "/a", ctype: smpT, body: `{"metadata":{"$setElementOrder/finalizers":"x"}}`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `expected a []interface {}, but received a string`},

		// JSON and merge patches (see also TestBodyDecodeErrors).
		{id: "merge list", path: cms + "/a", ctype: mergeT, body: `[1]`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}`},
		{id: "merge null", path: cms + "/a", ctype: mergeT, body: `null`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `Invalid JSON Patch`},
		{id: "merge list, Ignore", path: cms + "/a?fieldValidation=Ignore", ctype: mergeT, body: `[1]`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: ` "" is invalid: patch: Invalid value: "[1]": couldn't get version/kind; json parse error: `, prefix: true},
	}
	for _, tc := range cases {
		r := e.do("PATCH", tc.path, []byte(tc.body), "Content-Type", tc.ctype)
		if r.code != tc.code {
			t.Errorf("%s: %d, want %d: %s", tc.id, r.code, tc.code, r.body)
			continue
		}
		st := r.status(t)
		ok := st.Message == tc.message || tc.prefix && strings.HasPrefix(st.Message, tc.message)
		if st.Code != int32(tc.code) || st.Reason != tc.reason || !ok {
			t.Errorf("%s: %d %s\n got %q\nwant %q", tc.id, st.Code, st.Reason, st.Message, tc.message)
		}
	}
	if r := e.do("GET", cms+"/a", nil); string(r.body) != string(before.body) {
		t.Errorf("a refused patch changed configmap a:\n%s\nwas\n%s", r.body, before.body)
	}
	if r := e.do("GET", cms+"/missing", nil); r.code != http.StatusNotFound {
		t.Errorf("a refused apply created configmap missing: %d", r.code)
	}
}

// A strategic merge patch's kind and apiVersion are ignored, as
// kube-apiserver merges into the resource's own type.
func TestStrategicPatchKindIgnored(t *testing.T) {
	e := newEnv(t, nil)
	const cms = "/api/v1/namespaces/default/configmaps"
	if r := e.do("POST", cms, []byte(`{"metadata":{"name":"a"}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	r := e.do("PATCH", cms+"/a", []byte(`{"apiVersion":"apps/v1","kind":"Secret","data":{"k":"v"}}`), "Content-Type", "application/strategic-merge-patch+json")
	if r.code != http.StatusOK {
		t.Fatalf("%d, want 200: %s", r.code, r.body)
	}
	if !strings.Contains(string(r.body), `"kind":"ConfigMap","apiVersion":"v1"`) || !strings.Contains(string(r.body), `"data":{"k":"v"}`) {
		t.Errorf("patched object: %s", r.body)
	}
}

// An applied configuration's whole numbers are read as kube-apiserver
// reads them, as int64: one beyond 2^53 is kept exactly, not rounded
// through float64.
func TestApplyKeepsLargeIntegers(t *testing.T) {
	e := newEnv(t, nil)
	body := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  terminationGracePeriodSeconds: 9007199254740993\n  containers:\n  - name: c\n    image: nginx\n"
	r := e.do("PATCH", "/api/v1/namespaces/default/pods/big?fieldManager=m", []byte(body), "Content-Type", "application/apply-patch+yaml")
	if r.code != http.StatusCreated {
		t.Fatalf("%d, want 201: %s", r.code, r.body)
	}
	if !strings.Contains(string(r.body), `"terminationGracePeriodSeconds":9007199254740993`) {
		t.Errorf("terminationGracePeriodSeconds not kept: %s", r.body)
	}
}

// A JSON or merge patch whose result names the kind in another served
// version sharing the resource's storage is converted, as kube-apiserver's
// codec converts it through the internal type: a core/v1 Event patched to
// say events.k8s.io/v1 is read as that kind (its core fields unknown to
// it: warnings, or under Strict a 422) and converted back. A version no
// served resource has (apps/v1beta2 Deployments) is refused: upstream
// converts it, this server cannot.
func TestPatchResultOtherServedVersion(t *testing.T) {
	e := newEnv(t, nil)
	const (
		evs    = "/api/v1/namespaces/default/events"
		deps   = "/apis/apps/v1/namespaces/default/deployments"
		mergeT = "application/merge-patch+json"
	)
	if r := e.do("POST", evs, []byte(`{"metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	if r := e.do("POST", deps, []byte(`{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	before := e.do("GET", evs+"/e", nil)

	r := e.do("PATCH", evs+"/e?fieldValidation=Strict", []byte(`{"apiVersion":"events.k8s.io/v1","note":"hello"}`), "Content-Type", mergeT)
	if r.code != http.StatusUnprocessableEntity {
		t.Fatalf("Strict: %d, want 422: %s", r.code, r.body)
	}
	if st := r.status(t); !strings.Contains(st.Message, `strict decoding error: `) || !strings.Contains(st.Message, `unknown field "involvedObject"`) {
		t.Errorf("Strict: message %q, want the unknown core fields", st.Message)
	}
	if r := e.do("GET", evs+"/e", nil); string(r.body) != string(before.body) {
		t.Errorf("a refused patch changed event e:\n%s", r.body)
	}

	r = e.do("PATCH", evs+"/e", []byte(`{"apiVersion":"events.k8s.io/v1","note":"hello"}`), "Content-Type", mergeT)
	if r.code != http.StatusOK {
		t.Fatalf("%d, want 200: %s", r.code, r.body)
	}
	if body := string(r.body); !strings.Contains(body, `"kind":"Event","apiVersion":"v1"`) || !strings.Contains(body, `"message":"hello"`) {
		t.Errorf("patched event: %s", body)
	}
	if w := strings.Join(r.header.Values("Warning"), "\n"); !strings.Contains(w, `unknown field \"involvedObject\"`) {
		t.Errorf("warnings %q, want the unknown core fields", w)
	}

	// The other way round: an events.k8s.io/v1 Event patched to say v1 is
	// read as a core/v1 Event, which has no note: the patch says the
	// message again, or the conversion's empty note is an immutable
	// field changed (422), as upstream's conversion through the internal
	// type loses it too.
	const evsV1 = "/apis/events.k8s.io/v1/namespaces/default/events"
	r = e.do("PATCH", evsV1+"/e", []byte(`[{"op":"replace","path":"/apiVersion","value":"v1"},{"op":"add","path":"/message","value":"hello"},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`),
		"Content-Type", "application/json-patch+json")
	if r.code != http.StatusOK {
		t.Fatalf("events.k8s.io/v1: %d, want 200: %s", r.code, r.body)
	}
	if body := string(r.body); !strings.Contains(body, `"kind":"Event","apiVersion":"events.k8s.io/v1"`) || !strings.Contains(body, `"labels":{"x":"y"}`) || !strings.Contains(body, `"note":"hello"`) {
		t.Errorf("events.k8s.io/v1: patched event: %s", body)
	}
	if w := strings.Join(r.header.Values("Warning"), "\n"); !strings.Contains(w, `unknown field \"regarding\"`) {
		t.Errorf("events.k8s.io/v1: warnings %q, want the unknown events.k8s.io fields", w)
	}

	r = e.do("PATCH", deps+"/d", []byte(`{"apiVersion":"apps/v1beta2"}`), "Content-Type", mergeT)
	if r.code != http.StatusUnprocessableEntity {
		t.Fatalf("apps/v1beta2: %d, want 422: %s", r.code, r.body)
	}
	const tail = `: the API version in the data (apps/v1beta2) does not match the expected API version (apps/v1)`
	if st := r.status(t); !strings.HasSuffix(st.Message, tail) {
		t.Errorf("apps/v1beta2: message %q, want suffix %q", st.Message, tail)
	}
}

// A converted patch result is then written as any patch of the request's
// resource: its managed fields are the field manager's for the request's
// version (only what the patch changed, seen as that version's fields),
// and it is validated by the request's resource, so through
// events.k8s.io/v1 a result that lost the core fields the other version
// lacks is refused by that API's immutable fields, naming core/v1's
// fields as kube-apiserver's validation of the internal Event does.
func TestPatchResultOtherServedVersionTracked(t *testing.T) {
	e := newEnv(t, nil)
	const (
		evs   = "/api/v1/namespaces/default/events"
		evsV1 = "/apis/events.k8s.io/v1/namespaces/default/events"
	)
	if r := e.do("POST", evs+"?fieldManager=creator", []byte(`{"metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	// The events.k8s.io/v1 form of the same event, with a reporting
	// controller added: only reportingComponent changes.
	r := e.do("PATCH", evs+"/e?fieldManager=pm", []byte(`{"apiVersion":"events.k8s.io/v1","note":"m","regarding":{"kind":"Pod","name":"p","namespace":"default"},"deprecatedSource":{"component":"c"},"reportingController":"x"}`),
		"Content-Type", "application/merge-patch+json")
	if r.code != http.StatusOK {
		t.Fatalf("%d, want 200: %s", r.code, r.body)
	}
	var ev corev1.Event
	if err := json.Unmarshal(r.body, &ev); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	if ev.APIVersion != "v1" || ev.Message != "m" || ev.InvolvedObject.Name != "p" || ev.Source.Component != "c" || ev.ReportingController != "x" {
		t.Errorf("patched event: %s", r.body)
	}
	var pm *metav1.ManagedFieldsEntry
	for i, m := range ev.ManagedFields {
		if m.Manager == "pm" {
			pm = &ev.ManagedFields[i]
		}
	}
	if pm == nil || pm.Operation != metav1.ManagedFieldsOperationUpdate || pm.APIVersion != "v1" || pm.FieldsV1 == nil || string(pm.FieldsV1.Raw) != `{"f:reportingComponent":{}}` {
		t.Errorf("managed fields of pm: %+v (all: %s)", pm, r.body)
	}

	before := e.do("GET", evsV1+"/e", nil)
	r = e.do("PATCH", evsV1+"/e", []byte(`[{"op":"replace","path":"/apiVersion","value":"v1"}]`), "Content-Type", "application/json-patch+json")
	if r.code != http.StatusUnprocessableEntity {
		t.Fatalf("events.k8s.io/v1 to v1: %d, want 422: %s", r.code, r.body)
	}
	st := r.status(t)
	var fields []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	// regarding, note, deprecatedSource and reportingController are no
	// core/v1 fields: the result has none of them.
	if got := strings.Join(fields, ","); st.Reason != metav1.StatusReasonInvalid || got != "involvedObject,message,source,reportingController" {
		t.Errorf("events.k8s.io/v1 to v1: %s, causes on %q: %s", st.Reason, got, st.Message)
	}
	if !strings.Contains(st.Message, `message: Invalid value: "": field is immutable`) {
		t.Errorf("events.k8s.io/v1 to v1: %s", st.Message)
	}
	if r := e.do("GET", evsV1+"/e", nil); string(r.body) != string(before.body) {
		t.Errorf("a refused patch changed event e:\n%s", r.body)
	}
}
