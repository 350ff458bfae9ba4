package audit

import (
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// WithFailedAuthenticationAudit wraps the handler that answers requests
// authentication rejected (401): when the policy audits the request (as
// an unknown user), it records one event at stage ResponseStarted with the
// response code and, as kube-apiserver does, the Status the handler
// answers (Unauthorized) or, when it answers none, "Authentication failed,
// attempted: ..." naming the credentials the request carried.
func WithFailedAuthenticationAudit(failed http.Handler, cfg Config) http.Handler {
	if cfg.Policy == nil || cfg.Backend == nil {
		return failed
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
		d := cfg.Policy.Evaluate(nil, info)
		if d.Level == LevelNone {
			failed.ServeHTTP(w, r)
			return
		}
		rec := &recorder{cfg: cfg, decision: d, ev: newEvent(r, id, info, nil, d.Level, received)}
		w.Header().Set(HeaderAuditID, string(rec.ev.AuditID))
		rw := &responseWriter{ResponseWriter: w, rec: rec, limit: statusProbeBytes}
		failed.ServeHTTP(rw, r)
		code, body, contentType, _ := rw.result()
		rec.emit(StageResponseStarted, func(ev *Event) {
			// The Status the failed handler answers replaces the message
			// naming the credentials, as kube-apiserver's LogResponseObject
			// does when its Unauthorized Status is written.
			if _, ok := parseStatus(contentType, body); ok {
				ev.ResponseStatus = responseStatus(code, contentType, body)
				return
			}
			ev.ResponseStatus = &metav1.Status{Code: int32(code), Message: authenticationFailed(r)}
		})
	})
}

// authenticationFailed names the credentials r carried, as
// kube-apiserver's failed-authentication audit does: basic, bearer,
// access_token (the query parameter) and x509, in that order.
func authenticationFailed(r *http.Request) string {
	var m []string
	if _, _, ok := r.BasicAuth(); ok {
		m = append(m, "basic")
	}
	// A bearer scheme followed by anything (the header trimmed).
	if scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		m = append(m, "bearer")
	}
	if strings.TrimSpace(r.URL.Query().Get("access_token")) != "" {
		m = append(m, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		m = append(m, "x509")
	}
	if len(m) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(m, ", ")
}
