package openapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// get sends one request straight to h and returns the recorded response.
func get(t *testing.T, h http.Handler, target string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// sharedHandler is built once for the tests that only read from it (a
// handler never changes after NewHandler).
var sharedHandler = sync.OnceValues(func() (http.Handler, error) { return NewHandler(issueResources()) })

func newTestHandler(t *testing.T) http.Handler {
	t.Helper()
	h, err := sharedHandler()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestServeV2(t *testing.T) {
	h := newTestHandler(t)

	js := get(t, h, "/openapi/v2", "Accept", "application/json")
	if js.Code != http.StatusOK || js.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("json: %d %q", js.Code, js.Header().Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Body.Bytes(), &doc); err != nil || doc["swagger"] != "2.0" {
		t.Fatalf("json body: %v, swagger %v", err, doc["swagger"])
	}
	etag := js.Header().Get("Etag")
	if unquoted, err := strconv.Unquote(etag); err != nil || len(unquoted) != 128 || strings.ToUpper(unquoted) != unquoted {
		t.Errorf("Etag %q, want a quoted upper-case SHA-512", etag)
	}

	// kubectl's request, and the spelling kube-apiserver answers with.
	for _, accept := range []string{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
		"application/com.github.proto-openapi.spec.v2.v1.0+protobuf"} {
		pb := get(t, h, "/openapi/v2", "Accept", accept)
		if pb.Code != http.StatusOK || pb.Header().Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
			t.Fatalf("protobuf for %s: %d %q", accept, pb.Code, pb.Header().Get("Content-Type"))
		}
		var d openapi_v2.Document
		if err := proto.Unmarshal(pb.Body.Bytes(), &d); err != nil || len(d.GetDefinitions().GetAdditionalProperties()) == 0 {
			t.Fatalf("protobuf body: %v", err)
		}
		if pb.Header().Get("Etag") != etag {
			t.Errorf("protobuf Etag %q differs from the JSON one", pb.Header().Get("Etag"))
		}
	}

	// Preference order and wildcards.
	if got := get(t, h, "/openapi/v2", "Accept", "application/xml;q=1, application/json;q=0.5").Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("xml then json: %q", got)
	}
	if got := get(t, h, "/openapi/v2").Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("no Accept: %q", got)
	}
	if got := get(t, h, "/openapi/v2", "Accept", "*/*").Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("*/*: %q", got)
	}
	if rec := get(t, h, "/openapi/v2", "Accept", "text/html"); rec.Code != http.StatusNotAcceptable {
		t.Errorf("text/html: %d", rec.Code)
	}

	// Conditional requests.
	if rec := get(t, h, "/openapi/v2", "Accept", "application/json", "If-None-Match", etag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("If-None-Match current: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if rec := get(t, h, "/openapi/v2", "Accept", "application/json", "If-None-Match", `"stale"`); rec.Code != http.StatusOK {
		t.Errorf("If-None-Match stale: %d", rec.Code)
	}

	// gzip.
	gz := get(t, h, "/openapi/v2", "Accept", "application/json", "Accept-Encoding", "gzip, deflate")
	if gz.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(strings.Join(gz.Header().Values("Vary"), ","), "Accept-Encoding") {
		t.Fatalf("gzip headers: %v", gz.Header())
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, js.Body.Bytes()) {
		t.Errorf("gunzipped body differs from the plain one (err %v)", err)
	}
	if gz.Body.Len() >= js.Body.Len()/4 {
		t.Errorf("gzip saves little: %d of %d bytes", gz.Body.Len(), js.Body.Len())
	}
	if rec := get(t, h, "/openapi/v2", "Accept-Encoding", "gzip;q=0"); rec.Header().Get("Content-Encoding") != "" {
		t.Error("gzip sent though refused with q=0")
	}
}

func TestServeV3(t *testing.T) {
	h := newTestHandler(t)

	idx := get(t, h, "/openapi/v3")
	if idx.Code != http.StatusOK || idx.Header().Get("Content-Type") != "application/json" || idx.Header().Get("Etag") == "" {
		t.Fatalf("index: %d %v", idx.Code, idx.Header())
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(idx.Body.Bytes(), &index); err != nil {
		t.Fatal(err)
	}
	apps, ok := index.Paths["apis/apps/v1"]
	if !ok || !strings.HasPrefix(apps.ServerRelativeURL, "/openapi/v3/apis/apps/v1?hash=") {
		t.Fatalf("index entry for apps/v1: %+v", index.Paths)
	}
	hash := strings.TrimPrefix(apps.ServerRelativeURL, "/openapi/v3/apis/apps/v1?hash=")

	pinned := get(t, h, apps.ServerRelativeURL, "Accept", "application/json")
	if pinned.Code != http.StatusOK || pinned.Header().Get("Etag") != strconv.Quote(hash) ||
		pinned.Header().Get("Cache-Control") != "public, immutable" || pinned.Header().Get("Expires") == "" {
		t.Fatalf("pinned document: %d %v", pinned.Code, pinned.Header())
	}
	var doc map[string]any
	if err := json.Unmarshal(pinned.Body.Bytes(), &doc); err != nil || doc["openapi"] != "3.0.0" {
		t.Fatalf("document: %v, openapi %v", err, doc["openapi"])
	}

	unpinned := get(t, h, "/openapi/v3/apis/apps/v1", "Accept", "application/json")
	if unpinned.Code != http.StatusOK || unpinned.Header().Get("Cache-Control") != "" || !bytes.Equal(unpinned.Body.Bytes(), pinned.Body.Bytes()) {
		t.Errorf("unpinned document: %d %v", unpinned.Code, unpinned.Header())
	}

	stale := get(t, h, "/openapi/v3/apis/apps/v1?hash=0123", "Accept", "application/json")
	if stale.Code != http.StatusMovedPermanently || stale.Header().Get("Location") != apps.ServerRelativeURL {
		t.Errorf("stale hash: %d to %q", stale.Code, stale.Header().Get("Location"))
	}

	pb := get(t, h, apps.ServerRelativeURL, "Accept", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf")
	if pb.Code != http.StatusOK || pb.Header().Get("Content-Type") != "application/com.github.proto-openapi.spec.v3.v1.0+protobuf" {
		t.Errorf("protobuf: %d %q", pb.Code, pb.Header().Get("Content-Type"))
	}

	if rec := get(t, h, apps.ServerRelativeURL, "If-None-Match", strconv.Quote(hash)); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", rec.Code)
	}
}

func TestServeErrors(t *testing.T) {
	h := newTestHandler(t)
	for _, target := range []string{"/openapi/v3/apis/batch/v1", "/openapi/v3/apis/apps", "/openapi/v4", "/openapi", "/api/v1"} {
		if rec := get(t, h, target); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", target, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/openapi/v2", strings.NewReader("{}")))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/openapi/v2", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
}

func TestNewHandlerRejectsBadResources(t *testing.T) {
	resources := issueResources()
	if _, err := NewHandler(append(resources, resources[0])); err == nil {
		t.Error("a resource registered twice was accepted")
	}
	broken := *resources[0]
	broken.NewList = nil
	if _, err := NewHandler([]*resource.Resource{&broken}); err == nil {
		t.Error("a resource without NewList was accepted")
	}
}

// TestConcurrentFirstRequests makes the lazy protobuf and gzip forms from
// many requests at once; all must get the same bytes.
func TestConcurrentFirstRequests(t *testing.T) {
	h, err := NewHandler(issueResources())
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, "/openapi/v2", nil)
			req.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
			if i%2 == 1 {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body := rec.Body.Bytes()
			if i%2 == 1 {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Error(err)
					return
				}
			}
			bodies[i] = body
		})
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if len(bodies[i]) == 0 || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("response %d differs from response 0 (%d vs %d bytes)", i, len(bodies[i]), len(bodies[0]))
		}
	}
}
