package endpoints

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer: larger encode buffers are dropped rather than pooled.
const maxPooledBuffer = 256 << 10

// writeResponse writes obj, the API object a handler answers with, as
// writeRaw does, telling the audit filter first that it is one (recorded
// as the responseObject), as kube-apiserver's WriteObjectNegotiated passes
// every object it has negotiated a media type for to LogResponseObject.
func writeResponse(w http.ResponseWriter, r *http.Request, target codec.Target, code int, obj runtime.Object) {
	audit.LogResponseObject(r.Context())
	writeRaw(w, target, code, obj)
}

// writeRaw encodes obj with target's serializer and writes it with code.
// The object's kind must already be set.
func writeRaw(w http.ResponseWriter, target codec.Target, code int, obj runtime.Object) {
	// The serialization and its write are the request's
	// serialize-response-object latency, as kube-apiserver measures it.
	start := time.Now()
	defer func() { target.Latency.AddSerialize(time.Since(start)) }()
	if meta.IsListType(obj) {
		// Lists go straight to the client: no second copy of a large
		// encoding is kept.
		w.Header().Set("Content-Type", target.ContentType)
		w.WriteHeader(code)
		if err := target.Info.Serializer.Encode(obj, w); err != nil {
			slog.Debug("writing list response", "err", err)
		}
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			bufPool.Put(buf)
		}
	}()
	contentType := contentTypeValues(target.ContentType)
	if err := encodeInto(target.Info.Serializer, obj, buf); err != nil {
		// As kube-apiserver's SerializeObject: the encoder's error as a
		// Status of code 500 and no reason, in the same media type (or
		// "<reason>: <message>" as text when that fails too); the HTTP
		// status is kept when it already was an error.
		slog.Error("encoding response", "type", fmt.Sprintf("%T", obj), "err", err)
		st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: err.Error()}
		if code >= http.StatusOK && code < http.StatusBadRequest {
			code = http.StatusInternalServerError
		}
		buf.Reset()
		if err := encodeInto(target.Info.Serializer, st, buf); err != nil {
			buf.Reset()
			fmt.Fprintf(buf, "%s: %s", st.Reason, st.Message)
			contentType = []string{"text/plain"}
		}
	}
	h := w.Header()
	h["Content-Type"] = contentType
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// The Content-Type header values of the plain media types, shared by every
// response instead of a new slice per response (Header.Set's).
var (
	jsonContentType     = []string{codec.JSON}
	protobufContentType = []string{codec.Protobuf}
	yamlContentType     = []string{codec.YAML}
)

// contentTypeValues is the Content-Type header value slice for ct: for a
// plain media type one shared by every response, which nothing may modify
// (the HTTP servers copy a handler's header values when it writes its
// header; an Add appends to a copy, as the capacity is the length).
func contentTypeValues(ct string) []string {
	switch ct {
	case codec.JSON:
		return jsonContentType
	case codec.Protobuf:
		return protobufContentType
	case codec.YAML:
		return yamlContentType
	}
	return []string{ct}
}

// encodeInto encodes obj into buf; a protobuf encoding takes its scratch
// buffer from a reused allocator instead of a fresh allocation per response.
func encodeInto(enc runtime.Encoder, obj runtime.Object, buf *bytes.Buffer) error {
	if ea, ok := enc.(runtime.EncoderWithAllocator); ok {
		alloc := runtime.AllocatorPool.Get().(*runtime.Allocator)
		defer runtime.AllocatorPool.Put(alloc)
		return ea.EncodeWithAllocator(obj, buf, alloc)
	}
	return enc.Encode(obj, buf)
}

// WriteStatusError writes err as a Status in the best media type the
// client accepts (JSON when it accepts none of ours).
func WriteStatusError(w http.ResponseWriter, r *http.Request, c *codec.Codecs, se *apierrors.StatusError) {
	st := se.ErrStatus
	if st.Code < 100 || st.Code > 999 {
		// No HTTP status (0: none given; others: an admission webhook's
		// denial may say any number), which WriteHeader would panic on.
		st.Code = http.StatusInternalServerError
	}
	st.Status = metav1.StatusFailure
	st.Kind, st.APIVersion = "Status", "v1"
	target, err := c.Negotiate(r, nil, false)
	if err == nil {
		audit.LogResponseObject(r.Context())
	} else {
		// As kube-apiserver's WriteObjectNegotiated, which writes an
		// error it cannot negotiate a media type for as plain JSON
		// (WriteRawJSON) without passing it to LogResponseObject: the
		// audit records its code alone.
		target, _ = c.Negotiate(jsonOnly, nil, false)
	}
	// Any Status that suggests a delay says so in Retry-After, whatever its
	// code, as kube-apiserver does: client-go retries a 429 or 5xx that
	// carries one (a 500 ServerTimeout when etcd did not answer, retry in
	// 2 s) and gives up on one that does not.
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	writeRaw(w, target, int(st.Code), &st)
}

// WriteError writes any error as a Status about resource gr, object name;
// a storage error not interpreted where it happened is taken as one from
// the storage operation of r's verb (storageVerb).
func WriteError(w http.ResponseWriter, r *http.Request, c *codec.Codecs, err error, gr schema.GroupResource, name string) {
	verb := VerbGet
	if info := request.InfoFrom(r.Context()); info != nil {
		verb = storageVerb(info.Verb)
	}
	WriteStatusError(w, r, c, ToStatusError(err, verb, gr, name))
}

var jsonOnly = func() *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Accept", codec.JSON)
	return r
}()

// Warning headers are capped as kube-apiserver's warning recorder caps
// them: while the warnings' text together is at most warningsTotalRunes,
// each goes out whole; once a warning takes the total beyond, every
// warning is cut to warningRunes, and later ones are only added while the
// (cut) text written so far is under warningsTotalRunes.
const (
	warningsTotalRunes = 4 << 10
	warningRunes       = 256
)

// addWarnings adds Warning headers in the format client-go prints, capped
// as warningHeaders says.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, h := range warningHeaders(warnings) {
		w.Header().Add("Warning", h)
	}
}

// AddWarningHeaders adds warnings recorded outside an endpoint (the
// authenticators') to w as Warning headers, capped as addWarnings.
func AddWarningHeaders(w http.ResponseWriter, warnings []string) { addWarnings(w, warnings) }

// warningHeaders returns the Warning header values for warnings (in
// order, without repeats), capped as above. A text that is not UTF-8 or
// has a control character makes no header and counts for nothing, as
// kube-apiserver's; utilnet.NewWarningHeader quotes the text as it does.
func warningHeaders(warnings []string) []string {
	var texts []string
	written, cutting := 0, false
	for _, text := range warnings {
		if cutting && written >= warningsTotalRunes {
			break
		}
		if _, err := utilnet.NewWarningHeader(299, "", text); err != nil {
			continue
		}
		n := utf8.RuneCountInString(text)
		if !cutting && written+n > warningsTotalRunes {
			// Over the cap: from now on every warning, those already
			// taken included, is cut.
			cutting, written = true, 0
			for i, t := range texts {
				texts[i] = cutWarning(t)
				written += utf8.RuneCountInString(texts[i])
			}
		}
		if cutting {
			text = cutWarning(text)
			n = utf8.RuneCountInString(text)
		}
		texts = append(texts, text)
		written += n
	}
	headers := make([]string, 0, len(texts))
	for _, t := range texts {
		h, _ := utilnet.NewWarningHeader(299, "", t) // checked above
		headers = append(headers, h)
	}
	return headers
}

// recordWarnings records decoding's field-validation warnings in r's
// warnings, as kube-apiserver's handlers record them when the body is
// decoded: they then go out with admission's, capped and kept once with
// them, whether the write succeeds or fails.
func recordWarnings(r *http.Request, warnings []string) {
	for _, w := range warnings {
		request.AddWarning(r.Context(), w)
	}
}

// strictWarnings is the warnings one strict decoding error makes under
// fieldValidation=Warn, as kube-apiserver's: the YAML decoder's list of
// errors ("yaml: unmarshal errors:", perhaps after "error converting YAML
// to JSON: ", then a line per error) is a warning per line, trimmed; any
// other error is one warning.
func strictWarnings(msg string) []string {
	rest, ok := strings.CutPrefix(msg, "yaml: unmarshal errors:\n")
	if !ok {
		rest, ok = strings.CutPrefix(msg, "error converting YAML to JSON: yaml: unmarshal errors:\n")
	}
	if !ok {
		return []string{msg}
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}

// cutWarning cuts text to its first warningRunes runes.
func cutWarning(text string) string {
	if utf8.RuneCountInString(text) <= warningRunes {
		return text
	}
	return string([]rune(text)[:warningRunes])
}

// MethodNotAllowed is the answer to a method no route of a resource path
// serves: one outside the six verbs' methods, a verb the resource or
// subresource does not have, a POST naming an object. kube-apiserver
// registers a route per served verb, so its router answers these before
// any handler, with the generic 405 Status (no resource named in the
// message or the details).
func MethodNotAllowed() *apierrors.StatusError {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
}
