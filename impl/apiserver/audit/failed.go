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
// response code and "Authentication failed, attempted: ..." naming the
// credentials the request carried, as kube-apiserver does.
func WithFailedAuthenticationAudit(failed http.Handler, cfg Config) http.Handler {
	if cfg.Policy == nil || cfg.Backend == nil {
		return failed
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := cfg.Now()
		info := request.InfoFrom(r.Context())
		if info == nil {
			info = request.Parse(r)
		}
		d := cfg.Policy.Evaluate(nil, info)
		if d.Level == LevelNone {
			failed.ServeHTTP(w, r)
			return
		}
		rec := &recorder{cfg: cfg, decision: d, ev: newEvent(r, info, nil, d.Level, received)}
		w.Header().Set(HeaderAuditID, string(rec.ev.AuditID))
		rw := &responseWriter{ResponseWriter: w, rec: rec, limit: 0}
		failed.ServeHTTP(rw, r)
		code, _, _ := rw.result()
		rec.emit(StageResponseStarted, func(ev *Event) {
			ev.ResponseStatus = &metav1.Status{Code: int32(code), Message: "Authentication failed, attempted: " + attemptedMethods(r)}
		})
	})
}

// attemptedMethods names the credentials r carried.
func attemptedMethods(r *http.Request) string {
	var m []string
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		m = append(m, "certificate")
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, _, _ := strings.Cut(h, " ")
		switch strings.ToLower(scheme) {
		case "bearer":
			m = append(m, "token")
		case "basic":
			m = append(m, "basic")
		default:
			m = append(m, strings.ToLower(scheme))
		}
	}
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(m, ", ")
}
