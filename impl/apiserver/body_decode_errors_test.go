package apiserver_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// A create (POST), update (PUT) or pods/binding body that does not decode
// into the resource's kind is refused in kube-apiserver's words, a 400
// BadRequest: `<Kind> in version "<version>" cannot be handled as a
// <Kind>: <decoder error>` when the body names a kind (another kind, which
// upstream's decoder fails to convert to its internal type, "converting
// (v1.Secret) to (core.ConfigMap): unknown conversion"; a kind or version
// the scheme does not know; a field of the wrong type; unknown or
// duplicate fields under fieldValidation=Strict), else `the object
// provided is unrecognized (must be of type <Kind>): <error> (<first 30
// bytes>)`. A body of the resource's kind in another version of its group
// is the API version mismatch. Bodies in JSON, YAML and protobuf.
func TestBodyDecodeErrors(t *testing.T) {
	e := newEnv(t, nil)
	const (
		cms   = "/api/v1/namespaces/default/configmaps"
		deps  = "/apis/apps/v1/namespaces/default/deployments"
		evs   = "/apis/events.k8s.io/v1/namespaces/default/events"
		crs   = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
		pcs   = "/apis/scheduling.k8s.io/v1/priorityclasses"
		yamlT = "application/yaml"
		pbT   = "application/vnd.kubernetes.protobuf"
	)
	if r := e.do("POST", cms, []byte(`{"metadata":{"name":"a"}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	if r := e.do("POST", deps, []byte(`{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/api/v1/namespaces/default/pods", []byte(`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	var secretPB bytes.Buffer
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(secret, &secretPB); err != nil {
		t.Fatal(err)
	}
	const unrecognized = `the object provided is unrecognized (must be of type ConfigMap): `
	cases := []struct {
		id, method, path, ctype, body string
		// message is the whole message, or its start when prefix.
		message string
		prefix  bool
	}{
		{id: "other kind", method: "POST", path: cms, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`,
			message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{id: "other group's kind", method: "POST", path: cms, body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}`,
			message: `Deployment in version "v1" cannot be handled as a ConfigMap: converting (v1.Deployment) to (core.ConfigMap): unknown conversion`},
		{id: "meta kind", method: "POST", path: cms, body: `{"apiVersion":"v1","kind":"Status"}`,
			message: `Status in version "v1" cannot be handled as a ConfigMap: converting (v1.Status) to (core.ConfigMap): unknown conversion`},
		{id: "unknown kind", method: "POST", path: cms, body: `{"apiVersion":"v1","kind":"Frobnicator","metadata":{"name":"x"}}`,
			message: `Frobnicator in version "v1" cannot be handled as a ConfigMap: no kind "Frobnicator" is registered for version "v1" in scheme "`, prefix: true},
		{id: "kind in another group", method: "POST", path: cms, body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "`, prefix: true},
		{id: "unknown version", method: "POST", path: cms, body: `{"apiVersion":"v7","kind":"ConfigMap","metadata":{"name":"x"}}`,
			message: `ConfigMap in version "v7" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v7" in scheme "`, prefix: true},
		{id: "field type", method: "POST", path: cms, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":3}}`,
			message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string`},
		{id: "strict", method: "POST", path: cms + "?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"spec":{"x":1},"data":{},"data":{}}`,
			message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec", duplicate field "data"`},
		{id: "other kind beats strict", method: "POST", path: cms + "?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"bogus":1}`,
			message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{id: "eviction: other kind beats strict", method: "POST", path: "/api/v1/namespaces/default/pods/p/eviction?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"bogus":1}`,
			message: `Pod in version "v1" cannot be handled as a Eviction: converting (v1.Pod) to (policy.Eviction): unknown conversion`},
		{id: "malformed", method: "POST", path: cms, body: `{"metadata":{"name":"x"`,
			message: unrecognized + `couldn't get version/kind; json parse error: unexpected end of JSON input ({"metadata":{"name":"x")`},
		{id: "cut short", method: "POST", path: cms, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":`,
			message: unrecognized + `couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)`},
		{id: "not an object", method: "POST", path: cms, body: `[1,2]`,
			message: unrecognized + `couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct`, prefix: true},
		{id: "empty", method: "POST", path: cms, body: ``,
			message: unrecognized + `couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`},
		{id: "yaml other kind", method: "POST", path: cms, ctype: yamlT, body: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n",
			message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{id: "yaml malformed", method: "POST", path: cms, ctype: yamlT, body: "a: b: c",
			message: unrecognized + `yaml: mapping values are not allowed in this context (613a20623a2063)`},
		{id: "protobuf other kind", method: "POST", path: cms, ctype: pbT, body: secretPB.String(),
			message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{id: "protobuf without magic", method: "POST", path: cms, ctype: pbT, body: "\x01\x02\x03",
			message: unrecognized + `provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (010203)`},
		{id: "protobuf bad envelope", method: "POST", path: cms, ctype: pbT, body: "k8s\x00\x0a\x03garbage",
			message: unrecognized + `proto: illegal wireType 7 (6b3873000a0367617262616765)`},
		{id: "update other kind", method: "PUT", path: cms + "/a", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`,
			message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{id: "update malformed", method: "PUT", path: cms + "/a", body: `{`,
			message: unrecognized + `couldn't get version/kind; json parse error: unexpected end of JSON input ({)`},
		{id: "deployment other kind", method: "POST", path: deps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			message: `ConfigMap in version "v1" cannot be handled as a Deployment: converting (v1.ConfigMap) to (apps.Deployment): unknown conversion`},
		{id: "deployment other version", method: "POST", path: deps, body: `{"apiVersion":"apps/v1beta2","kind":"Deployment","metadata":{"name":"x"}}`,
			message: `the API version in the data (apps/v1beta2) does not match the expected API version (apps/v1)`},
		{id: "scale other kind", method: "PUT", path: deps + "/d/scale", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}`,
			message: `ConfigMap in version "v1" cannot be handled as a Scale: converting (v1.ConfigMap) to (autoscaling.Scale): unknown conversion`},
		{id: "binding other kind", method: "POST", path: "/api/v1/namespaces/default/pods/p/binding", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
			message: `Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to (core.Binding): unknown conversion`},
		{id: "core event to events.k8s.io", method: "POST", path: evs, body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"}}`,
			message: `the API version in the data (v1) does not match the expected API version (events.k8s.io/v1)`},
		{id: "role to clusterroles", method: "POST", path: crs, body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"x"}}`,
			message: `Role in version "v1" cannot be handled as a ClusterRole: converting (v1.Role) to (rbac.ClusterRole): unknown conversion`},
		{id: "lease to priorityclasses", method: "POST", path: pcs, body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"x"}}`,
			message: `Lease in version "v1" cannot be handled as a PriorityClass: converting (v1.Lease) to (scheduling.PriorityClass): unknown conversion`},
	}
	for _, tc := range cases {
		ctype := tc.ctype
		if ctype == "" {
			ctype = "application/json"
		}
		r := e.do(tc.method, tc.path, []byte(tc.body), "Content-Type", ctype)
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400: %s", tc.id, r.code, r.body)
			continue
		}
		st := r.status(t)
		ok := st.Message == tc.message || tc.prefix && strings.HasPrefix(st.Message, tc.message)
		if st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || !ok {
			t.Errorf("%s: %d %s\n got %q\nwant %q", tc.id, st.Code, st.Reason, st.Message, tc.message)
		}
	}
	if r := e.do("GET", cms+"/x", nil); r.code != http.StatusNotFound {
		t.Errorf("a refused create wrote configmap x: %d", r.code)
	}
}

// A JSON or merge patch whose result is another kind is kube-apiserver's
// 422 on the patched object, carrying the decoder's own error: upstream's
// codec cannot convert the result to the resource's internal type.
func TestPatchResultOtherKind(t *testing.T) {
	e := newEnv(t, nil)
	const cms = "/api/v1/namespaces/default/configmaps"
	if r := e.do("POST", cms, []byte(`{"metadata":{"name":"a"}}`)); r.code != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	r := e.do("PATCH", cms+"/a", []byte(`{"kind":"Secret"}`), "Content-Type", "application/merge-patch+json")
	if r.code != http.StatusUnprocessableEntity {
		t.Fatalf("%d, want 422: %s", r.code, r.body)
	}
	st := r.status(t)
	const tail = `: converting (v1.Secret) to (core.ConfigMap): unknown conversion`
	if !strings.HasPrefix(st.Message, ` "" is invalid: patch: Invalid value: "{`) || !strings.HasSuffix(st.Message, tail) {
		t.Errorf("message %q, want the patched object and %q", st.Message, tail)
	}
}

// The create-only review resources (TokenReview, SubjectAccessReview,
// SelfSubjectReview, ...) go through kube-apiserver's create handler too:
// a body that does not decode into the review is refused in the same
// words, the internal type in the authentication or authorization package.
func TestReviewBodyDecodeErrors(t *testing.T) {
	e := newEnv(t, nil)
	const (
		trs  = "/apis/authentication.k8s.io/v1/tokenreviews"
		sars = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
		ssrs = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	)
	cases := []struct{ id, path, body, message string }{
		{"other kind", trs, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}`,
			`Pod in version "v1" cannot be handled as a TokenReview: converting (v1.Pod) to (authentication.TokenReview): unknown conversion`},
		{"other review", sars, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview"}`,
			`SelfSubjectAccessReview in version "v1" cannot be handled as a SubjectAccessReview: converting (v1.SelfSubjectAccessReview) to (authorization.SubjectAccessReview): unknown conversion`},
		{"empty", ssrs, ``,
			`the object provided is unrecognized (must be of type SelfSubjectReview): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`},
		{"not an object", trs, `"token"`,
			`the object provided is unrecognized (must be of type TokenReview): couldn't get version/kind; json parse error: json: cannot unmarshal string into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (22746f6b656e22)`},
	}
	for _, tc := range cases {
		r := e.do("POST", tc.path, []byte(tc.body), "Content-Type", "application/json")
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400: %s", tc.id, r.code, r.body)
			continue
		}
		if st := r.status(t); st.Reason != metav1.StatusReasonBadRequest || st.Message != tc.message {
			t.Errorf("%s: %s\n got %q\nwant %q", tc.id, st.Reason, st.Message, tc.message)
		}
	}
}
