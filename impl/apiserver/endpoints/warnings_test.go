package endpoints

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Warnings admission plugins add through a write's context go out as
// Warning headers when the response starts, once each, whether the request
// came through WithRequestInfo's context node or not.
func TestCollectedWarningsGoOutWithTheResponse(t *testing.T) {
	for _, node := range []bool{true, false} {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)
		if node {
			r = r.WithContext(request.NewContext(r.Context(), r))
		}
		rec := httptest.NewRecorder()
		w, r2 := collectWarnings(rec, r)
		request.AddWarning(r2.Context(), "first")
		request.AddWarning(r2.Context(), "second")
		request.AddWarning(r2.Context(), "first")
		w.WriteHeader(201)
		want := []string{`299 - "first"`, `299 - "second"`}
		if got := rec.Header().Values("Warning"); !reflect.DeepEqual(got, want) {
			t.Errorf("context node %v: Warning headers %q, want %q", node, got, want)
		}
	}
}

var (
	sinkWriter  http.ResponseWriter
	sinkRequest *http.Request
)

// Under WithRequestInfo the collector is the writer's one allocation: the
// request is not copied and no context node is added.
func TestCollectWarningsAllocatesTheWriterOnly(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)
	rec := httptest.NewRecorder()
	base := r.Context()
	node := testing.AllocsPerRun(100, func() { _ = request.NewContext(base, r) })
	n := testing.AllocsPerRun(100, func() {
		sinkWriter, sinkRequest = collectWarnings(rec, r.WithContext(request.NewContext(base, r)))
	})
	// r.WithContext above is the test's own copy (one allocation).
	if n-node-1 != 1 {
		t.Fatalf("collectWarnings allocates %v times under WithRequestInfo, want 1 (the writer)", n-node-1)
	}
}
