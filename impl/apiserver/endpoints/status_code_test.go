package endpoints

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// A Status whose code is no HTTP status (an admission webhook denying with
// code 1000, which its answer may say; FuzzWebhook found it) is written as
// a 500 Status. It panicked in WriteHeader, and the panic filter, the
// response having begun, aborted the connection: the client got no answer.
// kube-apiserver panics the same way and its panic filter answers 500.
func TestStatusCodeOutsideHTTPIs500(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int32{1000, 1 << 30, 99, 1} {
		se := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: "Custom",
			Message: `admission webhook "w" denied the request: no`}}
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("code %d: panic %v", code, p)
				}
			}()
			WriteStatusError(rec, httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/configmaps", nil), c, se)
		}()
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != 500 || st.Code != 500 || st.Message != se.ErrStatus.Message {
			t.Errorf("code %d: answered %d %s (%v)", code, rec.Code, rec.Body.Bytes(), err)
		}
	}
}
