package audit

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// answering answers 200 with body as JSON, an API object
// (LogResponseObject).
func answering(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		LogResponseObject(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(body))
	}
}

// compacted is js without insignificant white space.
func compacted(t *testing.T, js string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(js)); err != nil {
		t.Fatalf("compacting %s: %v", js, err)
	}
	return b.String()
}

// A managedFields entry as a response carries it.
const managed = `[{"manager":"kubectl","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]`

// TestOmitManagedFieldsResponseObject: under omitManagedFields the
// responseObject loses the managedFields kube-apiserver's
// copyWithoutManagedFields drops (k8s.io/apiserver pkg/audit/request.go):
// an object's own, every item's of a list (PartialObjectMetadataList
// too), every row object's of a meta.k8s.io Table; nothing else moves
// (members keep their order, numbers their digits). A list with an item
// that is not an object fails that removal, and kube-apiserver then
// records the object as answered, managedFields and all; a Table of
// another group is an object like any other. Without omitManagedFields
// everything is recorded.
func TestOmitManagedFieldsResponseObject(t *testing.T) {
	omitting := policyAt(LevelRequestResponse)
	omitting.OmitManagedFields = true
	for _, tc := range []struct {
		name, path, body, want string
	}{{
		name: "object",
		path: "/api/v1/namespaces/ns/pods/web",
		body: `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"ns","uid":"u-1","managedFields":` + managed +
			`,"labels":{"app":"web"}},"spec":{"activeDeadlineSeconds":9007199254740993,"priority":1e3}}`,
		want: `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"ns","uid":"u-1","labels":{"app":"web"}},` +
			`"spec":{"activeDeadlineSeconds":9007199254740993,"priority":1e3}}`,
	}, {
		name: "list",
		path: "/api/v1/namespaces/ns/pods",
		body: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[` +
			`{"metadata":{"name":"a","managedFields":` + managed + `,"uid":"u-a"},"spec":{}},` +
			`{"metadata":{"name":"b"}},` +
			`{"metadata":{"name":"c","managedFields":` + managed + `}}]}`,
		want: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[` +
			`{"metadata":{"name":"a","uid":"u-a"},"spec":{}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}`,
	}, {
		name: "metadata list",
		path: "/api/v1/namespaces/ns/pods",
		body: `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[` +
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","managedFields":` + managed + `}}]}`,
		want: `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[` +
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}]}`,
	}, {
		name: "table",
		path: "/api/v1/namespaces/ns/pods",
		body: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"columnDefinitions":[],"rows":[` +
			`{"cells":["a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","managedFields":` + managed + `}}},` +
			`{"cells":["b"],"object":null},{"cells":["c"]}]}`,
		want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"columnDefinitions":[],"rows":[` +
			`{"cells":["a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}},` +
			`{"cells":["b"],"object":null},{"cells":["c"]}]}`,
	}, {
		name: "v1beta1 table",
		path: "/api/v1/namespaces/ns/pods",
		body: `{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{},"rows":[{"cells":[],"object":{"metadata":{"name":"a","managedFields":` + managed + `}}}]}`,
		want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{},"rows":[{"cells":[],"object":{"metadata":{"name":"a"}}}]}`,
	}, {
		name: "table of another group",
		path: "/apis/example.com/v1/namespaces/ns/tables/t",
		body: `{"kind":"Table","apiVersion":"example.com/v1","metadata":{"name":"t","managedFields":` + managed +
			`},"rows":[{"object":{"metadata":{"name":"a","managedFields":` + managed + `}}}]}`,
		want: `{"kind":"Table","apiVersion":"example.com/v1","metadata":{"name":"t"},"rows":[{"object":{"metadata":{"name":"a","managedFields":` + managed + `}}}]}`,
	}, {
		name: "list with an item that is no object",
		path: "/apis/example.com/v1/namespaces/ns/widgets/w",
		body: `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","managedFields":` + managed +
			`},"items":[{"metadata":{"name":"a","managedFields":` + managed + `}},7]}`,
		want: `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","managedFields":` + managed +
			`},"items":[{"metadata":{"name":"a","managedFields":` + managed + `}},7]}`,
	}, {
		name: "not an object",
		path: "/api/v1/namespaces/ns/pods",
		body: `[{"metadata":{"managedFields":[]}}]`,
		want: `[{"metadata":{"managedFields":[]}}]`,
	}} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		events, _ := serve(t, omitting, req, answering(tc.body))
		if got, want := string(events[len(events)-1].ResponseObject), compacted(t, tc.want); got != want {
			t.Errorf("%s: responseObject\n%s\nwant\n%s", tc.name, got, want)
		}
		events, _ = serve(t, policyAt(LevelRequestResponse), httptest.NewRequest(http.MethodGet, tc.path, nil), answering(tc.body))
		if got, want := string(events[len(events)-1].ResponseObject), compacted(t, tc.body); got != want {
			t.Errorf("%s without omitManagedFields: responseObject\n%s\nwant it as answered\n%s", tc.name, got, want)
		}
	}
}

// TestOmitManagedFieldsKeepsThePatch: a patch's requestObject is the
// patch as sent even under omitManagedFields, as kube-apiserver's
// LogRequestPatch records the body without looking into it (a merge
// patch clearing managedFields says so in the audit log).
func TestOmitManagedFieldsKeepsThePatch(t *testing.T) {
	omitting := policyAt(LevelRequest)
	omitting.OmitManagedFields = true
	const patch = `{"metadata":{"managedFields":[{}],"labels":{"a":"b"}}}`
	req := httptest.NewRequest(http.MethodPatch, "/api/v1/namespaces/ns/pods/web", strings.NewReader(patch))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	events, _ := serve(t, omitting, req, answering(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"}}`))
	if got := string(events[len(events)-1].RequestObject); got != patch {
		t.Errorf("patch requestObject %s, want it as sent: %s", got, patch)
	}
}
