// Package filters is the API server's HTTP filter chain, outermost first:
// the stack reserve of writes, panic recovery, request info, metrics,
// timeout, authentication, impersonation, priority and fairness (or
// max-in-flight), authorization (as kube-apiserver's chain: the limit sees
// the user). Each filter is a func(http.Handler) http.Handler.
package filters

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/metrics"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// WithPanicRecovery turns a panic in a handler into a 500 Status and a log
// line instead of a dropped connection.
func WithPanicRecovery(next http.Handler, c *codec.Codecs, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				if rec.code != 0 {
					// The response has begun: a Status now would be glued
					// to it. Abort the stream so the client sees a broken
					// response, never a well-formed wrong one.
					panic(http.ErrAbortHandler)
				}
				endpoints.WriteStatusError(w, r, c, apierrors.NewInternalError(fmt.Errorf("panic: %v", v)))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// WithRequestInfo parses the request's attributes into its context.
func WithRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(request.NewContext(r.Context(), r)))
	})
}

// WithMetrics records requests' verb, resource, code and latency as
// kube-apiserver counts them (metrics.Metrics.Observe).
func WithMetrics(next http.Handler, m *metrics.Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// Under WithPanicRecovery the writer already records the first
		// status code: read it from there instead of wrapping it again.
		rec, ok := w.(*statusRecorder)
		if !ok {
			rec = &statusRecorder{ResponseWriter: w}
		}
		next.ServeHTTP(rec, r)
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		switch rec.outcome {
		case answered:
			m.ObserveResponse(r, metrics.Response{Code: code, Duration: time.Since(start), Size: rec.written,
				Excluded: request.ExcludedLatencyFrom(r.Context()).Total()})
		case throttled:
			m.ObserveThrottled(r)
		}
	})
}

// outcome is who answered a request, for the metrics: kube-apiserver's
// request metrics see the requests its API handlers answer and those its
// in-flight limit or priority and fairness turn away (counted, not
// timed), not those refused by authentication, impersonation or
// authorization.
type outcome uint8

const (
	answered  outcome = iota // by the API (or a path the metrics leave out)
	throttled                // 429 of the in-flight limit or priority and fairness
	refused                  // by authentication, impersonation or authorization
)

// markOutcome records o on the status recorder under w (found through the
// writers' Unwrap), if any.
func markOutcome(w http.ResponseWriter, o outcome) {
	for w != nil {
		if rec, ok := w.(*statusRecorder); ok {
			rec.outcome = o
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// statusRecorder remembers the status code, the body bytes written and
// who answered; it keeps Flush working for watches.
type statusRecorder struct {
	http.ResponseWriter
	code    int
	written int64
	outcome outcome
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.written += int64(n)
	return n, err
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// WithRequestTimeout bounds every request but watches by d: its context
// ends then, so storage calls give up and the client gets a timeout
// Status instead of waiting forever on an unreachable etcd.
func WithRequestTimeout(next http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := request.InfoFrom(r.Context())
		if info != nil && info.IsLongRunning() {
			next.ServeHTTP(w, r)
			return
		}
		// Under WithRequestInfo the deadline goes into the node it added:
		// no second copy of the request.
		ctx, cancel := request.WithTimeout(r.Context(), d)
		defer cancel()
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// WithMaxInFlight bounds concurrent read-only and mutating requests
// separately; over the bound a request gets 429 with Retry-After: 1.
// Watches are exempt, and so are members of system:masters when the bound
// is reached, as kube-apiserver's max-in-flight filter lets them through
// (it runs after authentication and impersonation, so the user is the
// effective one). A limit <= 0 means unlimited.
func WithMaxInFlight(next http.Handler, c *codec.Codecs, readOnly, mutating int) http.Handler {
	var ro, mu chan struct{}
	if readOnly > 0 {
		ro = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		mu = make(chan struct{}, mutating)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := request.InfoFrom(r.Context())
		if info == nil || info.IsLongRunning() {
			next.ServeHTTP(w, r)
			return
		}
		sem := mu
		if info.IsReadOnly() {
			sem = ro
		}
		if sem == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			if u := request.UserFrom(r.Context()); u != nil && slices.Contains(u.Groups, bootstrappolicy.SystemMastersGroup) {
				next.ServeHTTP(w, r)
				return
			}
			markOutcome(w, throttled)
			endpoints.WriteStatusError(w, r, c, apierrors.NewTooManyRequests("Too many requests, please try again later.", 1))
		}
	})
}

// WithAuthentication identifies the user (adding system:authenticated to
// its groups). A request with invalid credentials, or none when anonymous
// access is off, gets 401 — except for
// the public paths (health and version), which anonymous users may read as
// kube-apiserver's system:public-info-viewer role allows.
//
// failed, when not nil, answers the rejected requests instead (it should
// wrap Unauthorized, e.g. with audit.WithFailedAuthenticationAudit).
func WithAuthentication(next http.Handler, c *codec.Codecs, a auth.Authenticator, anonymous bool, public map[string]bool, failed http.Handler) http.Handler {
	if failed == nil {
		failed = Unauthorized(c)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Warnings of the authenticators (a legacy service account
		// token's) go out with the response, as kube-apiserver's warning
		// recorder is in place before authentication. Under the request
		// chain's node the collector costs no allocation.
		ctx, warnings := request.AuthenticationWarnings(r.Context())
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		user, ok, err := a.Authenticate(r)
		if ok {
			user = auth.WithAuthenticatedGroup(user)
		} else if err == nil && (anonymous || public[r.URL.Path]) {
			user, ok = auth.Anonymous(), true
		}
		if !ok {
			markOutcome(w, refused)
			failed.ServeHTTP(w, r)
			return
		}
		endpoints.AddWarningHeaders(w, warnings.List())
		r.Header.Del("Authorization")
		if ctx := request.SetUser(r.Context(), user); ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// Unauthorized answers 401 with an Unauthorized Status.
func Unauthorized(c *codec.Codecs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoints.WriteStatusError(w, r, c, apierrors.NewUnauthorized("Unauthorized"))
	})
}

// WithAuthorization asks the authorizer; a deny is 403 with
// kube-apiserver's message.
func WithAuthorization(next http.Handler, c *codec.Codecs, a auth.Authorizer, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A list or watch by a metadata.name field selector is decided
		// and refused as a request for that name, as kube-apiserver's.
		attrs := auth.Attributes{User: request.UserFrom(r.Context()), Info: request.InfoFrom(r.Context()).Named()}
		d, reason, err := a.Authorize(r.Context(), attrs)
		if d == auth.DecisionAllow {
			audit.AddAnnotation(r.Context(), decisionAnnotation, "allow")
			audit.AddAnnotation(r.Context(), reasonAnnotation, reason)
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			// An authorizer failed (a webhook that could not be
			// reached) and none allowed: kube-apiserver answers 500,
			// not 403, so that the failure is not taken for a denial.
			audit.AddAnnotation(r.Context(), reasonAnnotation, reasonInternalError)
			log.Error("authorization error", "err", err)
			markOutcome(w, refused)
			internalError(w, r, err)
			return
		}
		audit.AddAnnotation(r.Context(), decisionAnnotation, "forbid")
		audit.AddAnnotation(r.Context(), reasonAnnotation, reason)
		markOutcome(w, refused)
		endpoints.WriteStatusError(w, r, c, forbidden(attrs, reason))
	})
}

// The audit annotations of an authorization decision, as kube-apiserver
// writes them.
const (
	decisionAnnotation  = "authorization.k8s.io/decision"
	reasonAnnotation    = "authorization.k8s.io/reason"
	reasonInternalError = "internal error"
)

// htmlEscaper keeps error text from looking like HTML.
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// internalError is kube-apiserver's plain-text 500 of a filter that
// failed.
func internalError(w http.ResponseWriter, r *http.Request, err error) {
	http.Error(w, htmlEscaper.Replace(fmt.Sprintf("Internal Server Error: %q: %v", r.RequestURI, err)), http.StatusInternalServerError)
}

// forbidden builds kube-apiserver's 403 for attrs.
func forbidden(a auth.Attributes, reason string) *apierrors.StatusError {
	user := ""
	if a.User != nil {
		user = a.User.Name
	}
	info := a.Info
	var msg string
	switch {
	case info == nil || !info.IsResourceRequest:
		path, verb := "", ""
		if info != nil {
			path, verb = info.Path, info.Verb
		}
		msg = fmt.Sprintf("User %q cannot %s path %q", user, verb, path)
	default:
		res := info.Resource
		if info.Subresource != "" {
			res += "/" + info.Subresource
		}
		if info.Namespace != "" {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", user, info.Verb, res, info.APIGroup, info.Namespace)
		} else {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, info.Verb, res, info.APIGroup)
		}
	}
	if reason != "" {
		msg += ": " + reason
	}
	var gr schema.GroupResource
	name := ""
	if info != nil {
		gr = schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		name = info.Name
	}
	return apierrors.NewForbidden(gr, name, errors.New(msg))
}
