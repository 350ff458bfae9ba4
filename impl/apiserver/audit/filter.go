package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	netutils "k8s.io/utils/net"
	"sigs.k8s.io/yaml"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
)

// HeaderAuditID is the request header a client may set to choose the
// audit ID, and the response header the ID is returned in.
const HeaderAuditID = "Audit-ID"

// DefaultMaxBodyBytes caps the request and response bodies recorded in
// an event (kube-apiserver's request body limit).
const DefaultMaxBodyBytes = 3 << 20

// Config configures WithAudit.
type Config struct {
	Policy  *Policy
	Backend Backend
	// MaxBodyBytes caps recorded bodies; a larger body is not recorded
	// (the request itself is unaffected). 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Metrics counts the requests failed because the backend failed
	// (apiserver_audit_requests_rejected_total); nil counts nothing.
	Metrics *Metrics
	// ProtobufJSON converts a Kubernetes protobuf response body to JSON,
	// for the responseObject at the RequestResponse level (kube-apiserver
	// records the response object as JSON whatever the wire format); nil:
	// a protobuf response object is not recorded.
	ProtobufJSON func(body []byte) ([]byte, error)
}

// WithAudit records the requests next serves, as cfg.Policy says. It must
// run after authentication. With a nil Policy or Backend it returns next.
func WithAudit(next http.Handler, cfg Config) http.Handler {
	if cfg.Policy == nil || cfg.Backend == nil {
		return next
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, received := requestIdentity(r, cfg.Now)
		info := request.InfoFrom(r.Context())
		if info == nil {
			info = request.Parse(r)
		}
		user := request.UserFrom(r.Context())
		// As kube-apiserver's, the policy's resourceNames and the
		// objectRef read the request's name as its request info has it:
		// a list or watch by a metadata.name field selector is named by it.
		named := info.Named()
		d := cfg.Policy.Evaluate(user, named)
		cfg.Metrics.policyLevel(d.Level)
		if d.Level == LevelNone {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{cfg: cfg, decision: d, ev: newEvent(r, id, named, user, d.Level, received)}
		w.Header().Set(HeaderAuditID, string(rec.ev.AuditID))
		// Only a patch records its body as sent; the other verbs record
		// what their handler decoded (LogRequestObject, LogRequestOptions).
		// A PATCH through a connect subresource (pods/proxy) is no patch
		// of an object: its body is streamed to the backend unread, as
		// kube-apiserver's audit filter never reads a body.
		if !d.Level.Less(LevelRequest) && rec.ev.Verb == "patch" && !connectSubresources[info.Subresource] &&
			r.Body != nil && r.Body != http.NoBody {
			rec.captureRequest(r)
		}
		if !rec.emit(StageRequestReceived, nil) {
			// A blocking-strict backend failed: as kube-apiserver, the
			// request is not served.
			cfg.Metrics.requestRejected()
			internalError(w, r, "failed to store audit event")
			return
		}

		rw := &responseWriter{ResponseWriter: w, rec: rec, longRunning: info.IsLongRunning(),
			captureAll: !d.Level.Less(LevelRequestResponse), limit: cfg.MaxBodyBytes}
		defer func() {
			if p := recover(); p != nil {
				rec.finishPanic(p)
				panic(p)
			}
		}()
		ctx := context.WithValue(r.Context(), eventKey{}, rec)
		// As kube-apiserver's latency trackers: every request but a
		// watch accumulates its layers' latencies.
		if info.Verb != "watch" {
			ctx, rec.latency = reqlatency.With(ctx)
			rec.excluded = request.ExcludedLatencyFrom(ctx)
		}
		next.ServeHTTP(rw, r.WithContext(ctx))
		rec.finish(rw)
	})
}

func newEvent(r *http.Request, id string, info *request.Info, user *request.User, level Level, received time.Time) *Event {
	ev := &Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: EventKind},
		Level:      level,
		AuditID:    types.UID(id),
		RequestURI: r.URL.RequestURI(),
		Verb:       info.Verb,
		User:       userInfo(user),
		SourceIPs:  sourceIPs(r),
		UserAgent:  userAgent(r),

		RequestReceivedTimestamp: metav1.NewMicroTime(received),
		Annotations:              earlyAnnotationsOf(r.Context()),
	}
	if info.IsResourceRequest {
		ev.ObjectRef = &ObjectReference{Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
			APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource}
	}
	return ev
}

func userInfo(u *request.User) authnv1.UserInfo {
	if u == nil {
		return authnv1.UserInfo{}
	}
	ui := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	if len(u.Extra) > 0 {
		ui.Extra = map[string]authnv1.ExtraValue{}
		for k, v := range u.Extra {
			ui.Extra[k] = append(authnv1.ExtraValue(nil), v...)
		}
	}
	return ui
}

// sourceIPs lists, as kube-apiserver does, every address of
// X-Forwarded-For (repeats too), then X-Real-Ip unless it is among them,
// then the connection's peer unless it is the last one so far; each in
// its canonical form (leading zeros accepted, IPv4-mapped addresses as
// IPv4).
func sourceIPs(r *http.Request) []string {
	var ips []net.IP
	for _, s := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		if ip := netutils.ParseIPSloppy(strings.TrimSpace(s)); ip != nil {
			ips = append(ips, ip)
		}
	}
	if ip := netutils.ParseIPSloppy(r.Header.Get("X-Real-Ip")); ip != nil && !slices.ContainsFunc(ips, ip.Equal) {
		ips = append(ips, ip)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := netutils.ParseIPSloppy(host); ip != nil && (len(ips) == 0 || !ips[len(ips)-1].Equal(ip)) {
		ips = append(ips, ip)
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// maxUserAgent is the longest user agent recorded whole; a longer one is
// cut and marked, as kube-apiserver does.
const maxUserAgent = 1024

func userAgent(r *http.Request) string {
	ua := r.UserAgent()
	if len(ua) > maxUserAgent {
		return ua[:maxUserAgent] + "...TRUNCATED"
	}
	return ua
}

// recorder builds one request's events.
type recorder struct {
	cfg      Config
	decision Decision

	mu          sync.Mutex
	ev          *Event
	requestBody json.RawMessage
	// objectLogged: the handler decoded the body (LogRequestObject,
	// LogRequestOptions).
	objectLogged bool
	// requestObject is the decoded object encoded again
	// (LogRequestObject, LogRequestOptions): the requestObject of every
	// verb but patch, which records requestBody.
	requestObject json.RawMessage
	finished      bool
	// responseLogged: the handler answered with an API object
	// (LogResponseObject), the only body the event records.
	responseLogged atomic.Bool
	// startedCode is the code of a long-running request's ResponseStarted
	// event held back until its body is read (an API object's), 0 when
	// none is held.
	startedCode atomic.Int32
	// latency accumulates the request's layer latencies, and excluded
	// holds its webhook calls and queue wait; nil for a watch.
	latency  *reqlatency.Trackers
	excluded *request.ExcludedLatency
}

type eventKey struct{}

func recorderFrom(ctx context.Context) *recorder {
	r, _ := ctx.Value(eventKey{}).(*recorder)
	return r
}

// AddAnnotation adds key=value to the audit events of the request ctx
// belongs to (from the next stage on; added during authentication, from
// the first); it does nothing when the request is not audited. An existing key keeps its first value.
func AddAnnotation(ctx context.Context, key, value string) {
	rec := recorderFrom(ctx)
	if rec == nil {
		// Before the event: authentication.
		if e, _ := ctx.Value(earlyKey{}).(*earlyAnnotations); e != nil {
			e.add(key, value)
		}
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ev.Annotations == nil {
		rec.ev.Annotations = map[string]string{}
	}
	if _, ok := rec.ev.Annotations[key]; !ok {
		rec.ev.Annotations[key] = value
	}
}

// AddAnnotationAtLevel is AddAnnotation for an annotation recorded only
// when the request is audited at min or above (as kube-apiserver's
// AddAnnotationWithLevel: a webhook's patch is recorded from the Request
// level on).
func AddAnnotationAtLevel(ctx context.Context, key, value string, min Level) {
	rec := recorderFrom(ctx)
	if rec == nil || rec.decision.Level.Less(min) {
		return
	}
	AddAnnotation(ctx, key, value)
}

// SetImpersonatedUser records, for the request ctx belongs to, the user
// an impersonating request acts as.
func SetImpersonatedUser(ctx context.Context, u *request.User) {
	rec := recorderFrom(ctx)
	if rec == nil || u == nil {
		return
	}
	ui := userInfo(u)
	rec.mu.Lock()
	rec.ev.ImpersonatedUser = &ui
	rec.mu.Unlock()
}

// captureRequest reads up to the body limit (restoring the body for the
// handler) and keeps it when it is JSON, or YAML it converts to JSON.
func (rec *recorder) captureRequest(r *http.Request) {
	buf, err := io.ReadAll(io.LimitReader(r.Body, int64(rec.cfg.MaxBodyBytes)+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
	if err != nil || len(buf) > rec.cfg.MaxBodyBytes || len(buf) == 0 {
		return
	}
	// As kube-apiserver's LogRequestPatch, the patch is recorded as sent,
	// omitManagedFields or not: it is no object to drop fields from.
	rec.requestBody = toJSON(r.Header.Get("Content-Type"), buf)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// toJSON returns body, compacted, when the content type is a JSON one,
// or converted when it is a YAML one; otherwise nil.
func toJSON(contentType string, body []byte) json.RawMessage {
	mt, _, _ := mime.ParseMediaType(contentType)
	var js []byte
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		if !json.Valid(body) {
			return nil
		}
		js = body
	case mt == "application/yaml" || strings.HasSuffix(mt, "+yaml"):
		var err error
		if js, err = yaml.YAMLToJSON(body); err != nil {
			return nil
		}
	default:
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, js); err != nil {
		return nil
	}
	return compact.Bytes()
}

func (rec *recorder) omitted(s Stage) bool {
	for _, o := range rec.decision.OmitStages {
		if o == s {
			return true
		}
	}
	return false
}

// connectSubresources are served by kube-apiserver's connect handlers,
// which record no request object.
var connectSubresources = map[string]bool{"proxy": true, "exec": true, "attach": true, "portforward": true}

// bodyRecorded says whether ev's request body is recorded, as
// kube-apiserver's handlers record it: a create's or an update's once it
// has been decoded (LogRequestObject: the decoded object encoded again),
// a delete's or deletecollection's once it has been decoded to
// DeleteOptions (LogRequestOptions: the options encoded again),
// a patch's as sent, nothing of connect requests or of other verbs.
// The RequestReceived event, before any handler, has none. decoded says
// the handler logged the decoded body.
func bodyRecorded(ev *Event, decoded bool) bool {
	if ev.ObjectRef == nil || connectSubresources[ev.ObjectRef.Subresource] {
		return false
	}
	switch ev.Verb {
	case "create", "update", "delete", "deletecollection":
		return decoded
	case "patch":
		return true
	}
	return false
}

// emit sends a copy of the event at stage s; status, when set, is its
// responseStatus. It reports whether the backend handled it (an omitted
// stage counts as handled).
func (rec *recorder) emit(s Stage, fill func(ev *Event)) bool {
	if rec.omitted(s) {
		return true
	}
	rec.mu.Lock()
	ev := *rec.ev
	decoded := rec.objectLogged
	body := rec.requestBody
	if ev.Verb != "patch" {
		body = rec.requestObject
	}
	if rec.ev.Annotations != nil {
		ev.Annotations = make(map[string]string, len(rec.ev.Annotations))
		for k, v := range rec.ev.Annotations {
			ev.Annotations[k] = v
		}
	}
	rec.mu.Unlock()
	ev.Stage = s
	// As kube-apiserver: the RequestReceived event is stamped with the
	// time the request was received.
	if s == StageRequestReceived {
		ev.StageTimestamp = ev.RequestReceivedTimestamp
	} else {
		ev.StageTimestamp = metav1.NewMicroTime(rec.cfg.Now())
	}
	if !ev.Level.Less(LevelRequest) && s != StageRequestReceived && bodyRecorded(&ev, decoded) {
		ev.RequestObject = body
	}
	if fill != nil {
		fill(&ev)
	}
	rec.cfg.Metrics.eventSent()
	return rec.cfg.Backend.ProcessEvent(&ev)
}

// htmlEscaper keeps an error text from reading as HTML.
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// internalError is kube-apiserver's plain-text 500 for a request it
// cannot serve: Internal Server Error: "<request URI>": <msg>.
func internalError(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, "Internal Server Error: %q: %s", htmlEscaper.Replace(r.RequestURI), msg)
}

// claimFinish reports whether the caller is the first to finish.
func (rec *recorder) claimFinish() bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.finished {
		return false
	}
	rec.finished = true
	return true
}

// connectionClosedEarly is kube-apiserver's status for a request whose
// handler wrote no response.
func connectionClosedEarly() *metav1.Status {
	return &metav1.Status{Code: http.StatusOK, Status: metav1.StatusSuccess, Message: "Connection closed early"}
}

// finish emits the ResponseComplete event once. A long-running request
// whose handler wrote nothing gets its ResponseStarted first; both then
// carry the "Connection closed early" success kube-apiserver fakes.
func (rec *recorder) finish(rw *responseWriter) {
	if !rec.claimFinish() {
		return
	}
	code, body, contentType, wrote := rw.result()
	if !wrote {
		if rw.longRunning {
			rec.emit(StageResponseStarted, func(ev *Event) { ev.ResponseStatus = connectionClosedEarly() })
		}
		rec.emit(StageResponseComplete, func(ev *Event) {
			ev.ResponseStatus = connectionClosedEarly()
			rec.addLatencyAnnotations(ev)
		})
		return
	}
	if !rec.responseLogged.Load() {
		// No API object (LogResponseObject): the code alone.
		body = nil
	}
	status := responseStatus(code, contentType, body)
	var object json.RawMessage
	if !rec.decision.Level.Less(LevelRequestResponse) && body != nil {
		object = rec.responseObject(contentType, body)
	}
	if rec.startedCode.Swap(0) != 0 {
		// A long-running request's API object: its ResponseStarted
		// event, held back until now, has what kube-apiserver's has,
		// the object being logged before the header goes out.
		started := *status
		rec.emit(StageResponseStarted, func(ev *Event) { ev.ResponseStatus, ev.ResponseObject = &started, object })
	}
	rec.emit(StageResponseComplete, func(ev *Event) {
		ev.ResponseStatus = status
		rec.addLatencyAnnotations(ev)
		ev.ResponseObject = object
	})
}

// responseObject is a response body as the event's responseObject: JSON
// or YAML as JSON, protobuf decoded and encoded as JSON (when the
// configuration can), anything else nothing. Under omitManagedFields it
// lacks the managedFields kube-apiserver drops (omitManagedFields: an
// object's, a list's items', a Table's row objects'); when they cannot be
// dropped the error is logged and the object recorded as it is, as
// kube-apiserver does.
func (rec *recorder) responseObject(contentType string, body []byte) json.RawMessage {
	var js json.RawMessage
	if mt, _, _ := mime.ParseMediaType(contentType); mt != protobufMediaType || rec.cfg.ProtobufJSON == nil {
		js = toJSON(contentType, body)
	} else {
		converted, err := rec.cfg.ProtobufJSON(body)
		if err != nil {
			slog.Error("encoding the audited response object", "auditID", rec.ev.AuditID, "err", err)
			return nil
		}
		js = toJSON(runtime.ContentTypeJSON, converted)
	}
	if js == nil || !rec.decision.OmitManagedFields {
		return js
	}
	omitted, err := omitManagedFields(js)
	if err != nil {
		slog.Error("dropping managed fields from the audited response object", "auditID", rec.ev.AuditID, "err", err)
	}
	return omitted
}

// The annotation keys of the webhook calls and the queue wait, as
// kube-apiserver's.
const (
	mutatingWebhookKey   = "apiserver.latency.k8s.io/mutating-webhook"
	validatingWebhookKey = "apiserver.latency.k8s.io/validating-webhook"
	apfQueueWaitKey      = "apiserver.latency.k8s.io/apf-queue-wait"
)

// latencyThreshold: a request that took longer, from its receipt to its
// ResponseComplete event, has its layers' latencies annotated, as
// kube-apiserver's audit filter does.
const latencyThreshold = 500 * time.Millisecond

// addLatencyAnnotations adds to ev, a ResponseComplete event, the
// apiserver.latency.k8s.io/* annotations of the layers that took time and
// the total, when the request took more than latencyThreshold; nothing
// when no layer took time. A key already set keeps its value.
func (rec *recorder) addLatencyAnnotations(ev *Event) {
	total := ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp.Time)
	if total <= latencyThreshold {
		return
	}
	ann := rec.latency.Annotations()
	for k, d := range map[string]time.Duration{
		mutatingWebhookKey:   rec.excluded.MutatingWebhooks(),
		validatingWebhookKey: rec.excluded.ValidatingWebhooks(),
		apfQueueWaitKey:      rec.excluded.QueueWait(),
	} {
		if d != 0 {
			ann[k] = d.String()
		}
	}
	if len(ann) == 0 {
		return
	}
	ann[reqlatency.TotalKey] = total.String()
	if ev.Annotations == nil {
		ev.Annotations = make(map[string]string, len(ann))
	}
	for k, v := range ann {
		if _, ok := ev.Annotations[k]; !ok {
			ev.Annotations[k] = v
		}
	}
}

// finishPanic emits the Panic event once, with kube-apiserver's status.
func (rec *recorder) finishPanic(p any) {
	if !rec.claimFinish() {
		return
	}
	if code := rec.startedCode.Swap(0); code != 0 {
		rec.emit(StageResponseStarted, func(ev *Event) { ev.ResponseStatus = &metav1.Status{Code: code} })
	}
	rec.emit(StagePanic, func(ev *Event) {
		ev.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("APIServer panic'd: %v", p)}
	})
}

// statusProbeBytes bounds the success bodies kept below the
// RequestResponse level, to find a Status among them: a success Status
// (a delete's, a binding's) is far smaller.
const statusProbeBytes = 4 << 10

// responseStatus is the code, with the status, message, reason and
// details of a Status answer (of any code, as kube-apiserver's
// LogResponseObject copies every Status it writes).
func responseStatus(code int, contentType string, body []byte) *metav1.Status {
	st := &metav1.Status{Code: int32(code)}
	if code < 300 && len(body) > statusProbeBytes {
		return st
	}
	if parsed, ok := parseStatus(contentType, body); ok {
		st.Status, st.Message, st.Reason, st.Details = parsed.Status, parsed.Message, parsed.Reason, parsed.Details
	}
	return st
}

// parseStatus decodes body as a Status, when it is one (JSON, YAML or
// protobuf).
func parseStatus(contentType string, body []byte) (*metav1.Status, bool) {
	if body == nil {
		return nil, false
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt == protobufMediaType {
		return parseProtobufStatus(body)
	}
	js := toJSON(contentType, body)
	if js == nil {
		return nil, false
	}
	var parsed metav1.Status
	if json.Unmarshal(js, &parsed) != nil || parsed.Kind != "Status" {
		return nil, false
	}
	return &parsed, true
}

// protobufMediaType is the Kubernetes protobuf encoding's media type.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte("k8s\x00")

// parseProtobufStatus decodes a Kubernetes protobuf body (the magic, then
// a runtime.Unknown envelope naming the kind) as a Status, when the
// envelope says it is one.
func parseProtobufStatus(body []byte) (*metav1.Status, bool) {
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return nil, false
	}
	var env runtime.Unknown
	if env.Unmarshal(rest) != nil || env.Kind != "Status" {
		return nil, false
	}
	var st metav1.Status
	if st.Unmarshal(env.Raw) != nil {
		return nil, false
	}
	return &st, true
}

// responseWriter records the status code and (up to the limit) the body,
// and emits ResponseStarted for long-running requests when the headers go
// out. It passes Flush, Hijack and Unwrap through.
type responseWriter struct {
	http.ResponseWriter
	rec         *recorder
	longRunning bool
	// captureAll keeps every body (RequestResponse); otherwise failure
	// bodies and small success ones are kept, for their Status.
	captureAll bool
	limit      int

	mu          sync.Mutex
	code        int
	body        bytes.Buffer
	overflow    bool
	wroteHeader bool
}

func (rw *responseWriter) WriteHeader(code int) {
	rw.headerWritten(code)
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *responseWriter) headerWritten(code int) {
	rw.mu.Lock()
	if rw.wroteHeader {
		rw.mu.Unlock()
		return
	}
	rw.wroteHeader, rw.code = true, code
	rw.mu.Unlock()
	switch {
	case !rw.longRunning:
	case rw.rec.responseLogged.Load():
		// An API object (an error's Status, before any stream): its
		// ResponseStarted waits for the body (finish).
		rw.rec.startedCode.Store(int32(code))
	default:
		rw.rec.emit(StageResponseStarted, func(ev *Event) { ev.ResponseStatus = &metav1.Status{Code: int32(code)} })
	}
}

func (rw *responseWriter) Write(p []byte) (int, error) {
	rw.headerWritten(http.StatusOK)
	rw.mu.Lock()
	limit := rw.limit
	if !rw.captureAll && rw.code < 300 {
		limit = min(limit, statusProbeBytes)
	}
	// A long-running request's body is a stream (a watch's events, logs,
	// a proxied answer), kept only when it is an API object after all (an
	// error's Status, before any stream).
	if (!rw.longRunning || rw.rec.responseLogged.Load()) && !rw.overflow {
		if rw.body.Len()+len(p) > limit {
			rw.overflow = true
			rw.body.Reset()
		} else {
			rw.body.Write(p)
		}
	}
	rw.mu.Unlock()
	start := time.Now()
	n, err := rw.ResponseWriter.Write(p)
	rw.rec.latency.AddResponseWrite(time.Since(start))
	return n, err
}

// result returns the status code (200 when nothing was written), the
// captured body (nil when too large or none), its content type, and
// whether a response was started at all.
func (rw *responseWriter) result() (int, []byte, string, bool) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	code := rw.code
	if !rw.wroteHeader {
		code = http.StatusOK
	}
	var body []byte
	if !rw.overflow && rw.body.Len() > 0 && rw.ResponseWriter.Header().Get("Content-Encoding") == "" {
		body = append([]byte(nil), rw.body.Bytes()...)
	}
	return code, body, rw.ResponseWriter.Header().Get("Content-Type"), rw.wroteHeader
}

// Flush implements http.Flusher.
func (rw *responseWriter) Flush() {
	rw.headerWritten(http.StatusOK)
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack implements http.Hijacker (exec and attach upgrades). A
// hijacked connection's status is 101 Switching Protocols.
func (rw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := rw.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("audit: the response writer does not support hijacking")
	}
	rw.headerWritten(http.StatusSwitchingProtocols)
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rw *responseWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
