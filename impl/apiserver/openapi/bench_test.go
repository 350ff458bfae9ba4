package openapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkBuildDocuments measures deriving every document by reflection
// (before encoding).
func BenchmarkBuildDocuments(b *testing.B) {
	resources := issueResources()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildDocuments(resources); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewHandler measures the whole start-up cost: building, encoding
// as JSON and protobuf, hashing and compressing.
func BenchmarkNewHandler(b *testing.B) {
	resources := issueResources()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewHandler(resources); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServe measures serving the documents from memory.
func BenchmarkServe(b *testing.B) {
	h, err := NewHandler(issueResources())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, target, accept, encoding string
	}{
		{"v2-protobuf", "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", ""},
		{"v2-json-gzip", "/openapi/v2", "application/json", "gzip"},
		{"v3-index", "/openapi/v3", "application/json", ""},
		{"v3-apps-json", "/openapi/v3/apis/apps/v1", "application/json", ""},
		{"v3-apps-json-gzip", "/openapi/v3/apis/apps/v1", "application/json", "gzip"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			req.Header.Set("Accept", bc.accept)
			if bc.encoding != "" {
				req.Header.Set("Accept-Encoding", bc.encoding)
			}
			b.ReportAllocs()
			for b.Loop() {
				rec := &discardingRecorder{header: http.Header{}}
				h.ServeHTTP(rec, req)
				if rec.code != http.StatusOK {
					b.Fatalf("status %d", rec.code)
				}
				b.SetBytes(int64(rec.written))
			}
		})
	}
}

// discardingRecorder is a ResponseWriter that counts the body instead of
// keeping it.
type discardingRecorder struct {
	header  http.Header
	code    int
	written int
}

func (r *discardingRecorder) Header() http.Header { return r.header }
func (r *discardingRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *discardingRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	r.written += len(p)
	return len(p), nil
}
