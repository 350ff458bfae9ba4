package apiserver_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBadInput: every malformed request gets a 4xx Status and writes
// nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil)
	const cms = "/api/v1/namespaces/default/configmaps"
	big := []byte(`{"metadata":{"name":"big"},"data":{"k":"` + strings.Repeat("x", 3<<20) + `"}}`)
	cases := []struct {
		name   string
		method string
		path   string
		body   []byte
		hdr    []string
		code   int
		reason metav1.StatusReason
		msg    string
	}{
		{"malformed JSON", "POST", cms, []byte(`{"metadata":{"name":"x"`), nil, 400, metav1.StatusReasonBadRequest, ""},
		{"JSON not an object", "POST", cms, []byte(`[1,2]`), nil, 400, metav1.StatusReasonBadRequest, ""},
		{"empty body", "POST", cms, []byte{}, nil, 400, metav1.StatusReasonBadRequest, ""},
		{"malformed protobuf", "POST", cms, []byte("k8s\x00\x0a\x03garbage"), []string{"Content-Type", "application/vnd.kubernetes.protobuf"}, 400, metav1.StatusReasonBadRequest, ""},
		{"protobuf without magic", "POST", cms, []byte("\x01\x02\x03"), []string{"Content-Type", "application/vnd.kubernetes.protobuf"}, 400, metav1.StatusReasonBadRequest, ""},
		{"unknown kind", "POST", cms, []byte(`{"apiVersion":"v1","kind":"Frobnicator","metadata":{"name":"x"}}`), nil, 400, metav1.StatusReasonBadRequest, ""},
		{"kind mismatch", "POST", cms, []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`), nil, 400, metav1.StatusReasonBadRequest, `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{"version mismatch", "POST", cms, []byte(`{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`), nil, 400, metav1.StatusReasonBadRequest, ""},
		{"unknown version", "POST", cms, []byte(`{"apiVersion":"v7","kind":"ConfigMap","metadata":{"name":"x"}}`), nil, 400, metav1.StatusReasonBadRequest, ""},
		{"namespace mismatch", "POST", cms, []byte(`{"metadata":{"name":"x","namespace":"kube-system"}}`), nil, 400, metav1.StatusReasonBadRequest, "does not match the namespace"},
		{"resourceVersion on create", "POST", cms, []byte(`{"metadata":{"name":"x","resourceVersion":"5"}}`), nil, 400, metav1.StatusReasonBadRequest, "resourceVersion should not be set"},
		{"oversize body", "POST", cms, big, nil, 413, metav1.StatusReasonRequestEntityTooLarge, "limit is 3145728"},
		{"unsupported content type", "POST", cms, []byte(`x`), []string{"Content-Type", "text/plain"}, 415, metav1.StatusReasonUnsupportedMediaType, ""},
		{"not acceptable", "GET", cms, nil, []string{"Accept", "text/html"}, 406, metav1.StatusReasonNotAcceptable, "only the following media types are accepted"},
		{"bad label selector", "GET", cms + "?labelSelector=a%20in%20(", nil, nil, 400, metav1.StatusReasonBadRequest, ""},
		{"bad field selector", "GET", cms + "?fieldSelector=a%3D%3D%3Db", nil, nil, 400, metav1.StatusReasonBadRequest, ""},
		{"unsupported field label", "GET", cms + "?fieldSelector=spec.nodeName%3Dx", nil, nil, 400, metav1.StatusReasonBadRequest, "field label not supported: spec.nodeName"},
		{"bad resourceVersion list", "GET", cms + "?resourceVersion=abc", nil, nil, 400, metav1.StatusReasonBadRequest, "invalid resource version"},
		{"bad resourceVersion watch", "GET", cms + "?watch=true&resourceVersion=-3", nil, nil, 400, metav1.StatusReasonBadRequest, "invalid resource version"},
		{"bad resourceVersion get", "GET", cms + "/x?resourceVersion=x1", nil, nil, 400, metav1.StatusReasonBadRequest, "invalid resource version"},
		{"bad limit", "GET", cms + "?limit=ten", nil, nil, 400, metav1.StatusReasonBadRequest, ""},
		{"bad continue", "GET", cms + "?limit=1&continue=notatoken", nil, nil, 400, metav1.StatusReasonBadRequest, ""},
		{"match without rv", "GET", cms + "?resourceVersionMatch=Exact", nil, nil, 422, metav1.StatusReasonInvalid, "resourceVersionMatch"},
		{"name with ..", "GET", cms + "/..", nil, nil, 400, metav1.StatusReasonBadRequest, "Name parameter invalid"},
		{"name with / in body", "POST", cms, []byte(`{"metadata":{"name":"a/b"}}`), nil, 0, "", ""},
		{"name .. in body", "POST", cms, []byte(`{"metadata":{"name":".."}}`), nil, 0, "", ""},
		{"name mismatch on update", "PUT", cms + "/a", []byte(`{"metadata":{"name":"b"}}`), nil, 400, metav1.StatusReasonBadRequest, "does not match the name on the URL"},
		{"unknown resource", "GET", "/api/v1/frobs", nil, nil, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource"},
		{"unknown group", "GET", "/apis/nope.example.com/v1/things", nil, nil, 404, metav1.StatusReasonNotFound, ""},
		{"unknown version", "GET", "/api/v2/pods", nil, nil, 404, metav1.StatusReasonNotFound, ""},
		{"unknown path", "GET", "/frob", nil, nil, 404, metav1.StatusReasonNotFound, ""},
		{"unknown subresource", "GET", cms + "/a/frob", nil, nil, 404, metav1.StatusReasonNotFound, ""},
		{"method not allowed", "POST", cms + "/a", []byte(`{}`), nil, 405, metav1.StatusReasonMethodNotAllowed, ""},
		{"apply patch without fieldManager", "PATCH", cms + "/a", []byte(`{}`), []string{"Content-Type", "application/apply-patch+yaml"}, 422, metav1.StatusReasonInvalid, "fieldManager: Required value"},
		{"bad json patch", "PATCH", cms + "/a", []byte(`{"op":"add"}`), []string{"Content-Type", "application/json-patch+json"}, 400, metav1.StatusReasonBadRequest, ""},
		{"bad merge patch", "PATCH", cms + "/a", []byte(`{"data":`), []string{"Content-Type", "application/merge-patch+json"}, 400, metav1.StatusReasonBadRequest, ""},
		{"patch changes kind", "PATCH", cms + "/a", []byte(`{"kind":"Secret"}`), []string{"Content-Type", "application/merge-patch+json"}, 422, metav1.StatusReasonInvalid, "patch: Invalid value"},
		{"json patch copy bomb", "PATCH", cms + "/a", copyBomb(), []string{"Content-Type", "application/json-patch+json"}, 422, metav1.StatusReasonInvalid, ""},
		{"too many json patch ops", "PATCH", cms + "/a", manyOps(10001), []string{"Content-Type", "application/json-patch+json"}, 413, metav1.StatusReasonRequestEntityTooLarge, "maximum operations"},
		{"bad delete body", "DELETE", cms + "/a", []byte(`{"propagationPolicy":`), nil, 400, metav1.StatusReasonBadRequest, ""},
		{"bad propagation policy", "DELETE", cms + "/a", []byte(`{"propagationPolicy":"Sideways"}`), nil, 422, metav1.StatusReasonInvalid, "propagationPolicy"},
		{"bad gracePeriodSeconds", "DELETE", cms + "/a?gracePeriodSeconds=soon", nil, nil, 400, metav1.StatusReasonBadRequest, ""},
		{"invalid object", "POST", cms, []byte(`{"metadata":{"name":"UPPER"}}`), nil, 422, metav1.StatusReasonInvalid, "metadata.name"},
		{"bad includeObject", "GET", cms, nil, []string{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io", "X-Ignore", ""}, 200, "", ""},
	}
	// the object the update/patch/delete cases aim at.
	if r := e.do("POST", cms, []byte(`{"metadata":{"name":"a"},"data":{"k":"v"}}`)); r.code != 201 {
		t.Fatalf("seed: %d %s", r.code, r.body)
	}
	before := e.do("GET", cms+"/a", nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.path, c.body, c.hdr...)
			if r.code >= 500 {
				t.Fatalf("5xx: %d %s", r.code, r.body)
			}
			if c.code == 0 {
				// any 4xx Status
				if r.code < 400 {
					t.Fatalf("accepted: %d %s", r.code, r.body)
				}
				r.status(t)
				return
			}
			if c.code == 200 {
				return
			}
			expectStatus(t, r, c.code, c.reason, c.msg)
		})
	}
	// nothing was written: one configmap, unchanged.
	list := e.do("GET", cms, nil)
	if n := bytes.Count(list.body, []byte(`"name":`)); n != 1 {
		t.Fatalf("bad input wrote objects: %s", list.body)
	}
	after := e.do("GET", cms+"/a", nil)
	if !bytes.Equal(before.body, after.body) {
		t.Fatalf("object changed:\n%s\n%s", before.body, after.body)
	}
	r := e.do("GET", cms+"?includeObject=Everything", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "includeObject")
}

// copyBomb doubles a subtree with every operation.
func copyBomb() []byte {
	ops := []string{`{"op":"add","path":"/data/x","value":"` + strings.Repeat("y", 1000) + `"}`,
		`{"op":"add","path":"/metadata/annotations","value":{"a":[]}}`}
	for range 40 {
		ops = append(ops, `{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/annotations/a/-"}`)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

func manyOps(n int) []byte {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = `{"op":"test","path":"/kind","value":"ConfigMap"}`
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}
