package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Media types of the protobuf encodings (gnostic's OpenAPI protobuf
// messages). Clients ask for the "@" spelling; the server answers with the
// "." one, as kube-apiserver does, and accepts both.
const (
	protobufV2Accepted = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	protobufV2Returned = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	protobufV3Accepted = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	protobufV3Returned = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// encoded is one representation of a document. The protobuf forms and the
// compressed bodies are made on first use (converting to protobuf goes
// through a YAML parse and is most of the start-up cost otherwise), then
// kept.
type encoded struct {
	contentType string
	body        func() ([]byte, error)
	gzipped     func() ([]byte, error)
}

func newEncoded(contentType string, body func() ([]byte, error)) *encoded {
	e := &encoded{contentType: contentType, body: sync.OnceValues(body)}
	e.gzipped = sync.OnceValues(func() ([]byte, error) {
		plain, err := e.body()
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(plain); err != nil {
			return nil, fmt.Errorf("compressing: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("compressing: %w", err)
		}
		return buf.Bytes(), nil
	})
	return e
}

func jsonEncoded(body []byte) *encoded {
	return newEncoded("application/json", func() ([]byte, error) { return body, nil })
}

// served is a document in its representations, sharing one ETag (the
// SHA-512 of its JSON form in upper-case hex, as kube-apiserver computes it;
// responses vary by Accept).
type served struct {
	etag           string
	representation map[string]*encoded // by accepted application/ subtype
}

// handler serves the documents built at start.
type handler struct {
	lastModified time.Time
	v2           *served
	v3Index      *served
	v3           map[string]*served // by group/version path
}

// v3IndexEntry and v3Index are the /openapi/v3 discovery document
// (handler3.OpenAPIV3Discovery's wire form).
type v3IndexEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

type v3Index struct {
	Paths map[string]v3IndexEntry `json:"paths"`
}

// NewHandler builds the OpenAPI documents of resources and returns the
// handler serving them at /openapi/v2, /openapi/v3 and /openapi/v3/<group
// version path> (e.g. /openapi/v3/apis/apps/v1). Other paths are 404.
func NewHandler(resources []*resource.Resource) (http.Handler, error) {
	docs, err := buildDocuments(resources)
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI documents: %w", err)
	}
	h := &handler{lastModified: time.Now().UTC().Truncate(time.Second), v3: map[string]*served{}}

	v2JSON, err := json.Marshal(docs.swagger)
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI v2 document: %w", err)
	}
	v2Proto := newEncoded("application/"+protobufV2Returned, func() ([]byte, error) {
		document, err := openapi_v2.ParseDocument(v2JSON)
		if err != nil {
			return nil, fmt.Errorf("converting the OpenAPI v2 document to protobuf: %w", err)
		}
		return proto.Marshal(document)
	})
	h.v2 = newServed(v2JSON, map[string]*encoded{
		"json":             jsonEncoded(v2JSON),
		protobufV2Accepted: v2Proto,
		protobufV2Returned: v2Proto,
	})

	index := v3Index{Paths: map[string]v3IndexEntry{}}
	for path, doc := range docs.v3 {
		docJSON, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encoding the OpenAPI v3 document of %s: %w", path, err)
		}
		docProto := newEncoded("application/"+protobufV3Returned, func() ([]byte, error) {
			document, err := openapi_v3.ParseDocument(docJSON)
			if err != nil {
				return nil, fmt.Errorf("converting the OpenAPI v3 document of %s to protobuf: %w", path, err)
			}
			return proto.Marshal(document)
		})
		s := newServed(docJSON, map[string]*encoded{
			"json":             jsonEncoded(docJSON),
			protobufV3Accepted: docProto,
			protobufV3Returned: docProto,
		})
		h.v3[path] = s
		index.Paths[path] = v3IndexEntry{ServerRelativeURL: v3URL(path, s.etag)}
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI v3 index: %w", err)
	}
	h.v3Index = newServed(indexJSON, map[string]*encoded{"json": jsonEncoded(indexJSON)})
	return h, nil
}

func newServed(jsonForm []byte, representations map[string]*encoded) *served {
	return &served{etag: fmt.Sprintf("%X", sha512.Sum512(jsonForm)), representation: representations}
}

// v3URL is the hash-pinned URL of a group/version's v3 document.
func v3URL(path, etag string) string {
	u := url.URL{Path: "/openapi/v3/" + path, RawQuery: url.Values{"hash": {etag}}.Encode()}
	return u.String()
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch path := r.URL.Path; {
	case path == "/openapi/v2":
		h.serve(w, r, h.v2, false)
	case path == "/openapi/v3" || path == "/openapi/v3/":
		h.serve(w, r, h.v3Index, false)
	case strings.HasPrefix(path, "/openapi/v3/"):
		gv := strings.TrimPrefix(path, "/openapi/v3/")
		doc, ok := h.v3[gv]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if hash := r.URL.Query().Get("hash"); hash != "" && hash != doc.etag {
			// A stale pinned URL: send the client to the current one.
			http.Redirect(w, r, v3URL(gv, doc.etag), http.StatusMovedPermanently)
			return
		}
		h.serve(w, r, doc, r.URL.Query().Get("hash") != "")
	default:
		http.NotFound(w, r)
	}
}

// serve writes the representation of doc the request accepts, honouring
// If-None-Match and Accept-Encoding: gzip. Documents fetched by their hash
// never change and may be cached for a year.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, doc *served, pinned bool) {
	header := w.Header()
	header.Add("Vary", "Accept")
	header.Add("Vary", "Accept-Encoding")
	rep := negotiate(r.Header.Get("Accept"), doc)
	if rep == nil {
		http.Error(w, "no acceptable representation of the OpenAPI document", http.StatusNotAcceptable)
		return
	}
	body, gzipped := rep.body, false
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body, gzipped = rep.gzipped, true
	}
	content, err := body()
	if err != nil {
		// Our own documents always convert (the tests check it); should
		// one not, say so rather than serve something else.
		slog.ErrorContext(r.Context(), "serving an OpenAPI document", "path", r.URL.Path, "contentType", rep.contentType, "err", err)
		http.Error(w, "internal error encoding the OpenAPI document", http.StatusInternalServerError)
		return
	}
	header.Set("Content-Type", rep.contentType)
	header.Set("Etag", strconv.Quote(doc.etag))
	if pinned {
		header.Set("Cache-Control", "public, immutable")
		header.Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	if gzipped {
		header.Set("Content-Encoding", "gzip")
	}
	http.ServeContent(w, r, "", h.lastModified, bytes.NewReader(content))
}

// negotiate picks the representation of doc the Accept header prefers; an
// empty header accepts anything.
func negotiate(accept string, doc *served) *encoded {
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	clauses := goautoneg.ParseAccept(accept)
	for _, c := range clauses {
		if c.Q <= 0 {
			continue
		}
		if c.Type != "application" && c.Type != "*" {
			continue
		}
		if c.SubType == "*" {
			return doc.representation["json"]
		}
		if rep, ok := doc.representation[c.SubType]; ok {
			return rep
		}
	}
	return nil
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}
