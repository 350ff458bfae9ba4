package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestDeleteBodyThatIsNotDeleteOptions: a delete's or deletecollection's
// body is decoded as kube-apiserver's delete handlers decode it, with the
// meta.k8s.io internal version's codecs. A body that is not DeleteOptions
// (another kind, options of another kind, garbage, a field of the wrong
// type), in a media type those codecs lack, or over the size limit is
// refused with a 4xx Status carrying the decoder's message (kube-apiserver
// passes the decoder's error on unconverted, a 500; bad input is never a
// 5xx here), and nothing is deleted. DeleteOptions being an unversioned
// kind of that scheme, a body of any group version is taken for it, its
// options honoured (here a dry run, so the object stays).
func TestDeleteBodyThatIsNotDeleteOptions(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.MaxRequestBodyBytes = 4096 })
	e.waitReady()
	const cms = "/api/v1/namespaces/default/configmaps"
	if r := e.do(http.MethodPost, cms, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","labels":{"k":"v"}}}`)); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	cases := []struct {
		id, ct, body string
		code         int
		reason       metav1.StatusReason
		// message is a part of the Status message.
		message string
	}{
		{"pod", "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"keep"}}`,
			400, metav1.StatusReasonBadRequest, `no kind "Pod" is registered for version "v1"`},
		{"pod-yaml", "application/yaml", "kind: Pod\napiVersion: v1\n",
			400, metav1.StatusReasonBadRequest, `no kind "Pod" is registered for version "v1"`},
		{"listoptions", "application/json", `{"apiVersion":"meta.k8s.io/v1","kind":"ListOptions"}`,
			400, metav1.StatusReasonBadRequest, "converting (v1.ListOptions) to (v1.DeleteOptions): unknown conversion"},
		{"createoptions", "application/json", `{"apiVersion":"v1","kind":"CreateOptions","dryRun":["All"]}`,
			400, metav1.StatusReasonBadRequest, "converting (v1.CreateOptions) to (v1.DeleteOptions): unknown conversion"},
		{"garbage", "application/json", `garbage`,
			400, metav1.StatusReasonBadRequest, "couldn't get version/kind; json parse error"},
		{"array", "application/json", `[]`,
			400, metav1.StatusReasonBadRequest, "couldn't get version/kind; json parse error"},
		{"field-type", "application/json", `{"gracePeriodSeconds":"x"}`,
			400, metav1.StatusReasonBadRequest, "cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds"},
		{"protobuf-garbage", "application/vnd.kubernetes.protobuf", "k8s\x00garbage",
			400, metav1.StatusReasonBadRequest, "proto"},
		{"protobuf-no-prefix", "application/vnd.kubernetes.protobuf", "garbage",
			400, metav1.StatusReasonBadRequest, "does not appear to be a protobuf message"},
		{"invalid", "application/json", `{"propagationPolicy":"Nope"}`,
			422, metav1.StatusReasonInvalid, `Unsupported value: "Nope"`},
		{"text", "text/plain", `{}`,
			415, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format"},
		{"cbor", "application/cbor", "\xa0",
			415, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format"},
		{"oversize", "application/json", `{"a":"` + strings.Repeat("x", 5000) + `"}`,
			413, metav1.StatusReasonRequestEntityTooLarge, "limit is 4096"},
		{"other-group-version", "application/json", `{"apiVersion":"example.com/v9","kind":"DeleteOptions","dryRun":["All"]}`,
			200, "", ""},
	}
	for _, c := range cases {
		for _, path := range []string{cms + "/keep", cms + "?labelSelector=k%3Dv"} {
			r := e.do(http.MethodDelete, path, []byte(c.body), "Content-Type", c.ct)
			if r.code != c.code {
				t.Errorf("%s: DELETE %s: %d, want %d: %s", c.id, path, r.code, c.code, r.body)
			} else if c.code >= 400 {
				st := r.status(t)
				if st.Code != int32(c.code) || st.Reason != c.reason || !strings.Contains(st.Message, c.message) {
					t.Errorf("%s: DELETE %s: %d %s %q, want %d %s and a message with %q", c.id, path, st.Code, st.Reason, st.Message, c.code, c.reason, c.message)
				}
			}
			if g := e.do(http.MethodGet, cms+"/keep", nil); g.code != http.StatusOK {
				t.Fatalf("%s: DELETE %s deleted the configmap: GET %d %s", c.id, path, g.code, g.body)
			}
		}
	}
}
