package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

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
			st := ToStatusError(tc.err, VerbGet, gr, "a").ErrStatus
			if st.Code != tc.code || st.Reason != tc.reason || st.Message != tc.message || st.ListMeta.Continue != tc.wantContinue {
				t.Fatalf("got code %d reason %s message %q continue %q; want %d %s %q %q",
					st.Code, st.Reason, st.Message, st.ListMeta.Continue, tc.code, tc.reason, tc.message, tc.wantContinue)
			}
		})
	}
}

// TestStorageErrorNamesTheOperation pins kube-apiserver's interpretation of
// a storage error per operation: an unreachable store is a 500 ServerTimeout
// naming the operation that failed (not always "get"), retry in 2 s; a
// watch cache that is not ready refuses a watch with 429, retry in 1 s; an
// object the store cannot read or write is a 500 InternalError whatever the
// operation.
func TestStorageErrorNamesTheOperation(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	unreachable := storage.NewError(storage.ErrCodeUnreachable, "/pods/ns/a", 0, "etcd txn failed", nil)
	for _, tc := range []struct {
		verb    string
		err     *storage.Error
		code    int32
		reason  metav1.StatusReason
		message string
		retry   int32
	}{
		{VerbGet, unreachable, http.StatusInternalServerError, metav1.StatusReasonServerTimeout,
			"The get operation against pods could not be completed at this time, please try again.", 2},
		{VerbList, unreachable, http.StatusInternalServerError, metav1.StatusReasonServerTimeout,
			"The list operation against pods could not be completed at this time, please try again.", 2},
		{VerbCreate, unreachable, http.StatusInternalServerError, metav1.StatusReasonServerTimeout,
			"The create operation against pods could not be completed at this time, please try again.", 2},
		{VerbUpdate, unreachable, http.StatusInternalServerError, metav1.StatusReasonServerTimeout,
			"The update operation against pods could not be completed at this time, please try again.", 2},
		{VerbDelete, unreachable, http.StatusInternalServerError, metav1.StatusReasonServerTimeout,
			"The delete operation against pods could not be completed at this time, please try again.", 2},
		{VerbWatch, storage.NewError(storage.ErrCodeUnreachable, "/pods", 0, "storage is (re)initializing", nil),
			http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "storage is (re)initializing", 1},
		{VerbWatch, storage.NewError(storage.ErrCodeUnreachable, "/pods", 0, "", nil),
			http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "storage is (re)initializing", 1},
		{VerbCreate, storage.NewError(storage.ErrCodeInvalidObj, "/pods/ns/a", 0, "object too large for etcd", nil),
			http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`Internal error occurred: object too large for etcd, key: "/pods/ns/a", resourceVersion: 0`, 0},
		{VerbUpdate, storage.NewError(storage.ErrCodeInvalidObj, "/pods/ns/a", 3, "decoding stored object", nil),
			http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`Internal error occurred: decoding stored object, key: "/pods/ns/a", resourceVersion: 3`, 0},
	} {
		t.Run(tc.verb+" "+tc.err.Message, func(t *testing.T) {
			st := ToStatusError(tc.err, tc.verb, gr, "a").ErrStatus
			var retry int32
			if st.Details != nil {
				retry = st.Details.RetryAfterSeconds
			}
			if st.Code != tc.code || st.Reason != tc.reason || st.Message != tc.message || retry != tc.retry {
				t.Fatalf("got code %d reason %s message %q retry %d; want %d %s %q %d",
					st.Code, st.Reason, st.Message, retry, tc.code, tc.reason, tc.message, tc.retry)
			}
		})
	}
}

// A request's verb names the storage operation of an error its handler did
// not interpret where it happened: a patch is an update, a
// deletecollection's own storage call is its list.
func TestStorageVerbOfRequest(t *testing.T) {
	for verb, want := range map[string]string{
		"get": VerbGet, "list": VerbList, "watch": VerbWatch, "create": VerbCreate,
		"update": VerbUpdate, "patch": VerbUpdate, "delete": VerbDelete,
		"deletecollection": VerbList, "": VerbGet,
	} {
		if got := storageVerb(verb); got != want {
			t.Errorf("storageVerb(%q) = %q, want %q", verb, got, want)
		}
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
			ToStatusError(storage.NewError(storage.ErrCodeUnreachable, "/pods/ns/a", 0, "etcd create failed", nil), VerbCreate, gr, "a"), "2"},
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

// unreachableStore is a store whose etcd never answers.
type unreachableStore struct{ storage.Interface }

func (unreachableStore) fail(key string) error {
	return storage.NewError(storage.ErrCodeUnreachable, key, 0, "etcd failed", nil)
}
func (s unreachableStore) Get(_ context.Context, key string, _ storage.GetOptions, _ runtime.Object) error {
	return s.fail(key)
}
func (s unreachableStore) GetList(_ context.Context, key string, _ storage.ListOptions, _ runtime.Object) error {
	return s.fail(key)
}
func (s unreachableStore) Create(_ context.Context, key string, _, _ runtime.Object) error {
	return s.fail(key)
}
func (unreachableStore) Watch(_ context.Context, key string, _ storage.ListOptions) (watch.Interface, error) {
	return nil, storage.NewError(storage.ErrCodeUnreachable, key, 0, "storage is (re)initializing", nil)
}
func (s unreachableStore) GuaranteedUpdate(_ context.Context, key string, _ runtime.Object, _ bool, _ *storage.Preconditions, _ storage.UpdateFunc) error {
	return s.fail(key)
}

// Through the handler, each request's ServerTimeout names the storage
// operation that failed, as kube-apiserver's: a DELETE fails at its read.
func TestUnreachableStoreServerTimeoutVerb(t *testing.T) {
	h := configMapHandler(t, unreachableStore{})
	h.res.Verbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	const obj = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`
	for _, tc := range []struct {
		method, path, body, contentType, verb string
	}{
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps/a", "", "", "get"},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps", "", "", "list"},
		{http.MethodPost, "/api/v1/namespaces/ns/configmaps", obj, "application/json", "create"},
		{http.MethodPut, "/api/v1/namespaces/ns/configmaps/a", obj, "application/json", "update"},
		{http.MethodPatch, "/api/v1/namespaces/ns/configmaps/a", `{"data":{"k":"v"}}`, "application/merge-patch+json", "update"},
		{http.MethodDelete, "/api/v1/namespaces/ns/configmaps/a", "", "", "get"},
		{http.MethodDelete, "/api/v1/namespaces/ns/configmaps", "", "", "list"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
				t.Fatalf("%d %s: %v", w.Code, w.Body, err)
			}
			want := "The " + tc.verb + " operation against configmaps could not be completed at this time, please try again."
			if w.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonServerTimeout || st.Message != want ||
				w.Header().Get("Retry-After") != "2" {
				t.Fatalf("got %d %s %q (Retry-After %q), want 500 ServerTimeout %q", w.Code, st.Reason, st.Message,
					w.Header().Get("Retry-After"), want)
			}
		})
	}
	t.Run("watch on a cache not ready", func(t *testing.T) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps?watch=true", nil))
		var st metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatalf("%d %s: %v", w.Code, w.Body, err)
		}
		if w.Code != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests ||
			st.Message != "storage is (re)initializing" || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("got %d %s %q (Retry-After %q), want 429 TooManyRequests, retry in 1 s", w.Code, st.Reason, st.Message,
				w.Header().Get("Retry-After"))
		}
	})
}
