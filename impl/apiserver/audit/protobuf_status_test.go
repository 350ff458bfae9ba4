package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufStatus is st as kube-apiserver writes it to a protobuf client:
// the "k8s\x00" magic, then a runtime.Unknown envelope holding the
// Status's protobuf bytes.
func protobufStatus(t *testing.T, st *metav1.Status) []byte {
	t.Helper()
	raw, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	env := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: raw}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), b...)
}

// TestProtobufStatusResponse: a Status answered in protobuf gives
// responseStatus its status, reason, message and details, as a JSON one:
// kube-apiserver's LogResponseObject copies the Status object whatever the
// media type it is written in.
func TestProtobufStatusResponse(t *testing.T) {
	sent := &metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: `pods "p" not found`, Details: &metav1.StatusDetails{Name: "p", Kind: "pods"}}
	body := protobufStatus(t, sent)
	for _, level := range []Level{LevelMetadata, LevelRequestResponse} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p", nil)
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
		events, _ := serve(t, policyAt(level), req, func(w http.ResponseWriter, r *http.Request) {
			LogResponseObject(r.Context())
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.WriteHeader(http.StatusNotFound)
			w.Write(body)
		})
		st := events[len(events)-1].ResponseStatus
		if st == nil || st.Code != 404 || st.Status != metav1.StatusFailure || st.Reason != metav1.StatusReasonNotFound ||
			st.Message != sent.Message || st.Details == nil || st.Details.Name != "p" || st.Details.Kind != "pods" {
			t.Errorf("%s: responseStatus %+v, want %+v", level, st, sent)
		}
	}
	// A protobuf object that is not a Status keeps only the code.
	pod := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: []byte{0x0a, 0x00}}
	pb, _ := pod.Marshal()
	events, _ := serve(t, policyAt(LevelMetadata), httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p", nil),
		func(w http.ResponseWriter, r *http.Request) {
			LogResponseObject(r.Context())
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.Write(append([]byte("k8s\x00"), pb...))
		})
	if st := events[len(events)-1].ResponseStatus; st == nil || *st != (metav1.Status{Code: 200}) {
		t.Errorf("protobuf Pod: responseStatus %+v, want only code 200", st)
	}
}
