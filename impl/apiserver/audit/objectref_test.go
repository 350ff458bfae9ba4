package audit

import (
	"errors"
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
		LogRequestObject(r.Context(), decoded, nil)
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
		LogRequestObject(r.Context(), &metav1.ObjectMeta{Name: "other", ResourceVersion: "7"}, nil)
	})
	want = ObjectReference{Resource: "pods", Namespace: "ns", Name: "web", APIVersion: "v1", ResourceVersion: "7", Subresource: "status"}
	if got := *events[len(events)-1].ObjectRef; got != want {
		t.Errorf("update objectRef %+v, want %+v", got, want)
	}

	// Not audited: nothing to fill, no panic.
	LogRequestObject(httptest.NewRequest(http.MethodGet, "/", nil).Context(), decoded, nil)
}

// TestLogRequestObjectEncoder: the encoder is called only at the Request
// level and above, with the policy's omitManagedFields; what it returns
// is a create's requestObject in place of the body sent, and when it
// fails neither the objectRef nor the requestObject is recorded, as
// kube-apiserver's LogRequestObject returns on an encoding error.
func TestLogRequestObjectEncoder(t *testing.T) {
	called := false
	enc := func(omit bool) ([]byte, error) {
		called = true
		if omit {
			return []byte(`{"omitted":true}`), nil
		}
		return []byte(`{"re":"encoded"}`), nil
	}
	logging := func(encode RequestObjectEncoder) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			LogRequestObject(r.Context(), &metav1.ObjectMeta{Name: "web"}, encode)
			w.WriteHeader(http.StatusCreated)
		}
	}
	events, _ := serve(t, policyAt(LevelMetadata), createPod(podJSON, "application/json"), logging(enc))
	if called || events[len(events)-1].RequestObject != nil {
		t.Errorf("Metadata level: encoder called %v, requestObject %s", called, events[len(events)-1].RequestObject)
	}
	events, _ = serve(t, policyAt(LevelRequest), createPod(podJSON, "application/json"), logging(enc))
	if got := string(events[len(events)-1].RequestObject); got != `{"re":"encoded"}` {
		t.Errorf("Request level: requestObject %s, want the encoder's", got)
	}
	omitting := policyAt(LevelRequest)
	omitting.OmitManagedFields = true
	events, _ = serve(t, omitting, createPod(podJSON, "application/json"), logging(enc))
	if got := string(events[len(events)-1].RequestObject); got != `{"omitted":true}` {
		t.Errorf("omitManagedFields: requestObject %s, want the encoder's without managed fields", got)
	}
	events, _ = serve(t, policyAt(LevelRequest), createPod(podJSON, "application/json"),
		logging(func(bool) ([]byte, error) { return nil, errors.New("boom") }))
	if ev := events[len(events)-1]; ev.RequestObject != nil || ev.ObjectRef.Name != "" {
		t.Errorf("failed encoding: requestObject %s, objectRef %+v: want neither filled", ev.RequestObject, ev.ObjectRef)
	}
}
