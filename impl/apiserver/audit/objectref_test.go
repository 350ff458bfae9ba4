package audit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLogRequestObjectFillsObjectRef: as kube-apiserver's
// LogRequestObject, the decoded body's namespace, name, uid and
// resourceVersion fill what the path left empty, in the events after the
// call only; the path's values win.
func TestLogRequestObjectFillsObjectRef(t *testing.T) {
	decoded := &metav1.ObjectMeta{Name: "web", Namespace: "other", UID: "u-1", ResourceVersion: "42"}
	events, _ := serve(t, policyAt(LevelMetadata), createPod(podJSON, "application/json"), func(w http.ResponseWriter, r *http.Request) {
		LogRequestObject(r.Context(), decoded)
		w.WriteHeader(http.StatusCreated)
	})
	if len(events) != 2 {
		t.Fatalf("stages %v", stagesOf(events))
	}
	if want := (ObjectReference{Resource: "pods", Namespace: "ns", APIVersion: "v1"}); *events[0].ObjectRef != want {
		t.Errorf("RequestReceived objectRef %+v, want the path's %+v", *events[0].ObjectRef, want)
	}
	want := ObjectReference{Resource: "pods", Namespace: "ns", Name: "web", UID: "u-1", APIVersion: "v1", ResourceVersion: "42"}
	if *events[1].ObjectRef != want {
		t.Errorf("ResponseComplete objectRef %+v, want %+v", *events[1].ObjectRef, want)
	}

	// The path's name is kept over the body's.
	put := httptest.NewRequest(http.MethodPut, "/api/v1/namespaces/ns/pods/web/status", strings.NewReader(podJSON))
	events, _ = serve(t, policyAt(LevelMetadata), put, func(w http.ResponseWriter, r *http.Request) {
		LogRequestObject(r.Context(), &metav1.ObjectMeta{Name: "other", ResourceVersion: "7"})
	})
	want = ObjectReference{Resource: "pods", Namespace: "ns", Name: "web", APIVersion: "v1", ResourceVersion: "7", Subresource: "status"}
	if got := *events[len(events)-1].ObjectRef; got != want {
		t.Errorf("update objectRef %+v, want %+v", got, want)
	}

	// Not audited: nothing to fill, no panic.
	LogRequestObject(httptest.NewRequest(http.MethodGet, "/", nil).Context(), decoded)
}
