package audit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceWriteObjectRef: a write to a Namespace is audited under
// the namespace kube-apiserver's audit gives it, which is not the
// admission namespace: its objectRef comes from the request info, then
// from the decoded body (LogRequestObject, as the create and update
// handlers call it), so a create (POST /api/v1/namespaces) is named by its
// body but names no namespace (a Namespace object has none), while an
// update or delete of /api/v1/namespaces/{name}[/status|/finalize] names
// the namespace itself.
func TestNamespaceWriteObjectRef(t *testing.T) {
	const body = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`
	for _, tc := range []struct {
		method, path string
		want         ObjectReference
	}{
		{http.MethodPost, "/api/v1/namespaces", ObjectReference{Resource: "namespaces", Name: "team", APIVersion: "v1"}},
		{http.MethodPut, "/api/v1/namespaces/team", ObjectReference{Resource: "namespaces", Namespace: "team", Name: "team", APIVersion: "v1"}},
		{http.MethodPut, "/api/v1/namespaces/team/status", ObjectReference{Resource: "namespaces", Namespace: "team", Name: "team", APIVersion: "v1", Subresource: "status"}},
		{http.MethodPut, "/api/v1/namespaces/team/finalize", ObjectReference{Resource: "namespaces", Namespace: "team", Name: "team", APIVersion: "v1", Subresource: "finalize"}},
		{http.MethodDelete, "/api/v1/namespaces/team", ObjectReference{Resource: "namespaces", Namespace: "team", Name: "team", APIVersion: "v1"}},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		events, _ := serve(t, policyAt(LevelMetadata), r, func(w http.ResponseWriter, r *http.Request) {
			// What the endpoints do once the body is decoded (not for a delete).
			if r.Method != http.MethodDelete {
				var ns metav1.PartialObjectMetadata
				if err := json.NewDecoder(r.Body).Decode(&ns); err != nil {
					t.Fatal(err)
				}
				LogRequestObject(r.Context(), &ns.ObjectMeta, nil)
			}
			w.WriteHeader(http.StatusOK)
		})
		if len(events) == 0 {
			t.Fatalf("%s %s: no events", tc.method, tc.path)
		}
		ev := events[len(events)-1]
		if ev.ObjectRef == nil || *ev.ObjectRef != tc.want {
			t.Errorf("%s %s: objectRef %+v, want %+v", tc.method, tc.path, ev.ObjectRef, tc.want)
		}
	}
}
