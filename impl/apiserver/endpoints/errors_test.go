package endpoints

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// TestStorageErrorStatus pins how storage errors become the Status a client
// sees: Kubernetes' reasons, codes and exact messages.
func TestStorageErrorStatus(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name         string
		err          *storage.Error
		code         int32
		reason       metav1.StatusReason
		message      string
		wantContinue string
	}{
		{"expired list keeps the store's wording",
			storage.NewError(storage.ErrCodeExpired, "/configmaps", 7, "The resourceVersion for the provided list is too old.", nil),
			http.StatusGone, metav1.StatusReasonExpired, "The resourceVersion for the provided list is too old.", ""},
		{"expired watch keeps the store's wording",
			storage.NewError(storage.ErrCodeExpired, "/configmaps", 5, "too old resource version: 5 (10)", nil),
			http.StatusGone, metav1.StatusReasonExpired, "too old resource version: 5 (10)", ""},
		{"bare expired gets the generic message with the revision",
			storage.NewError(storage.ErrCodeExpired, "/configmaps", 5, "", nil),
			http.StatusGone, metav1.StatusReasonExpired, "too old resource version: 5", ""},
		{"expired continue token carries the fresh token",
			&storage.Error{Code: storage.ErrCodeExpired, Key: "/configmaps", Message: "The provided continue parameter is too old", Continue: "abc"},
			http.StatusGone, metav1.StatusReasonExpired, "The provided continue parameter is too old", "abc"},
		{"invalid argument shows only the message",
			storage.NewError(storage.ErrCodeInvalidArgument, "/configmaps", 0, "continue key is not valid: bad", nil),
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "continue key is not valid: bad", ""},
		{"not found",
			storage.NewError(storage.ErrCodeKeyNotFound, "/configmaps/ns/a", 0, "", nil),
			http.StatusNotFound, metav1.StatusReasonNotFound, `configmaps "a" not found`, ""},
		{"stale write",
			storage.NewError(storage.ErrCodeResourceVersionConflicts, "/configmaps/ns/a", 0, "", nil),
			http.StatusConflict, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := ToStatusError(tc.err, gr, "a").ErrStatus
			if st.Code != tc.code || st.Reason != tc.reason || st.Message != tc.message || st.ListMeta.Continue != tc.wantContinue {
				t.Fatalf("got code %d reason %s message %q continue %q; want %d %s %q %q",
					st.Code, st.Reason, st.Message, st.ListMeta.Continue, tc.code, tc.reason, tc.message, tc.wantContinue)
			}
		})
	}
}

// A Status that suggests a delay carries it in Retry-After whatever its
// code, as kube-apiserver's: the 500 ServerTimeout of an etcd that did not
// answer too, so that client-go retries it instead of failing the request.
func TestStatusRetryAfterHeader(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		se   *apierrors.StatusError
		want string
	}{
		{"etcd did not answer: 500 ServerTimeout, retry in 2 s",
			ToStatusError(storage.NewError(storage.ErrCodeUnreachable, "/pods/ns/a", 0, "etcd create failed", nil), gr, "a"), "2"},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), "1"},
		{"no delay suggested", apierrors.NewInternalError(errors.New("boom")), ""},
		{"not found", apierrors.NewNotFound(gr, "a"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteStatusError(rec, httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/pods", nil), c, tc.se)
			if got := rec.Header().Get("Retry-After"); got != tc.want {
				t.Fatalf("code %d: Retry-After %q, want %q", rec.Code, got, tc.want)
			}
		})
	}
}
