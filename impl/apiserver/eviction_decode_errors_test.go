package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An eviction body that does not decode into an Eviction is refused as
// kube-apiserver's create handler refuses it: a 400 BadRequest saying
// `<Kind> in version "<version>" cannot be handled as a Eviction: <the
// decoder's error>` when the body names a kind (another kind of the
// scheme, which has no conversion to the Eviction; a version of Eviction
// not served; a field of the wrong type; an unknown field under Strict),
// and `the object provided is unrecognized (must be of type Eviction):
// <error> (<start of the body>)` when it is not even an object. The pod is
// not evicted.
func TestEvictionBodyDecodeErrors(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const path = "/api/v1/namespaces/default/pods/victim/eviction"
	cases := []struct {
		id, query, body string
		// message is the whole message, or its start when prefix.
		message string
		prefix  bool
	}{
		{id: "pod", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"victim"}}`,
			message: `Pod in version "v1" cannot be handled as a Eviction: converting (v1.Pod) to (policy.Eviction): unknown conversion`},
		{id: "delete options", body: `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0}`,
			message: `DeleteOptions in version "v1" cannot be handled as a Eviction: converting (v1.DeleteOptions) to (policy.Eviction): unknown conversion`},
		{id: "unserved version", body: `{"apiVersion":"policy/v2","kind":"Eviction","metadata":{"name":"victim"}}`,
			message: `Eviction in version "v2" cannot be handled as a Eviction: no kind "Eviction" is registered for version "policy/v2" in scheme `, prefix: true},
		{id: "core version", body: `{"apiVersion":"v1","kind":"Eviction","metadata":{"name":"victim"}}`,
			message: `Eviction in version "v1" cannot be handled as a Eviction: no kind "Eviction" is registered for version "v1" in scheme `, prefix: true},
		{id: "field type", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":3}}`,
			message: `Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal number into Go struct field `, prefix: true},
		{id: "unknown field, Strict", query: "?fieldValidation=Strict", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim"},"spec":{}}`,
			message: `Eviction in version "v1" cannot be handled as a Eviction: strict decoding error: unknown field "spec"`},
		{id: "garbage", body: `garbage`,
			message: `the object provided is unrecognized (must be of type Eviction): couldn't get version/kind; json parse error: invalid character 'g' looking for beginning of value (67617262616765)`},
		{id: "empty", body: ``,
			message: `the object provided is unrecognized (must be of type Eviction): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`},
		{id: "cut short", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":`,
			message: `the object provided is unrecognized (must be of type Eviction): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"policy/v1","kin ...)`},
	}
	for _, tc := range cases {
		r := e.do(http.MethodPost, path+tc.query, []byte(tc.body))
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400: %s", tc.id, r.code, r.body)
			continue
		}
		st := r.status(t)
		ok := st.Message == tc.message || tc.prefix && strings.HasPrefix(st.Message, tc.message)
		if st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || !ok {
			t.Errorf("%s: %d %s %q, want 400 BadRequest %q", tc.id, st.Code, st.Reason, st.Message, tc.message)
		}
	}
	got, err := pods.Get(c, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp != nil {
		t.Fatal("the pod was evicted")
	}
}
