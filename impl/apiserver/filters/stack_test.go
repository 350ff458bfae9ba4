package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Every request, write or read, reaches the next handler unchanged.
func TestStackReservePassesEveryRequest(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead} {
		req := httptest.NewRequest(method, "/api/v1/namespaces/default/configmaps", nil)
		var seen *http.Request
		h := WithStackReserve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = r
			w.WriteHeader(http.StatusTeapot)
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if seen != req || rec.Code != http.StatusTeapot {
			t.Errorf("%s: next saw %p (want %p), code %d", method, seen, req, rec.Code)
		}
	}
}
