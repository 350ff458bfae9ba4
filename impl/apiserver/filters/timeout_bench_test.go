package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkInfoAndTimeout is the request info and timeout filters around
// a handler that does nothing: what they allocate per request.
func BenchmarkInfoAndTimeout(b *testing.B) {
	h := WithRequestInfo(WithRequestTimeout(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), time.Minute))
	r := httptest.NewRequest("PUT", "/api/v1/namespaces/default/pods/startup-1/status", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
