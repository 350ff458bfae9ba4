package audit

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// initInfo is what WithAuditInit gives a request.
type initInfo struct {
	id       string
	received time.Time
}

type initKey struct{}

// WithAuditInit is kube-apiserver's outermost audit filter (its
// WithAuditInit and WithRequestReceivedTimestamp): every request, audited
// or not, gets an audit ID, the client's Audit-ID header or a new UUID,
// echoed in the response's Audit-Id header (unless a handler before set
// one). When cfg has a policy and a backend it also takes the time the
// request was received (cfg.Now, nil is time.Now) and gives both to
// WithAudit and WithFailedAuthenticationAudit through the request context.
func WithAuditInit(next http.Handler, cfg Config) http.Handler {
	// Without a policy and a backend nothing reads the ID and time from
	// the context: the request is handed on as it came.
	audited := cfg.Policy != nil && cfg.Backend != nil
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderAuditID)
		if id == "" {
			id = string(uuid.NewUUID())
		}
		if w.Header().Get(HeaderAuditID) == "" {
			w.Header().Set(HeaderAuditID, id)
		}
		if !audited {
			next.ServeHTTP(w, r)
			return
		}
		info := initInfo{id: id, received: now()}
		ctx := context.WithValue(r.Context(), initKey{}, info)
		ctx = context.WithValue(ctx, earlyKey{}, &earlyAnnotations{})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requestIdentity returns the audit ID and received time WithAuditInit
// gave r, or the client's Audit-ID (else a new one) and now's time.
func requestIdentity(r *http.Request, now func() time.Time) (string, time.Time) {
	if info, ok := r.Context().Value(initKey{}).(initInfo); ok {
		return info.id, info.received
	}
	id := r.Header.Get(HeaderAuditID)
	if id == "" {
		id = string(uuid.NewUUID())
	}
	return id, now()
}

// earlyAnnotations hold the annotations added before the request's audit
// event exists (by the authenticators, as kube-apiserver's audit context
// keeps them from WithAuditInit on); the event starts with them.
type earlyAnnotations struct {
	mu  sync.Mutex
	set map[string]string
}

type earlyKey struct{}

func (e *earlyAnnotations) add(key, value string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set == nil {
		e.set = map[string]string{}
	}
	if _, ok := e.set[key]; !ok {
		e.set[key] = value
	}
}

// earlyAnnotationsOf copies the annotations added to ctx before its
// event was made (nil when none).
func earlyAnnotationsOf(ctx context.Context) map[string]string {
	e, _ := ctx.Value(earlyKey{}).(*earlyAnnotations)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.set) == 0 {
		return nil
	}
	return maps.Clone(e.set)
}

// CollectAnnotations returns a context in which AddAnnotation, with no
// audit event to write to, keeps the annotations in a set of their own,
// and a function returning that set (nil when empty). The token cache
// authenticates in such a context, detached from any one request, so that
// it can add the annotations the authentication made to every request
// that gets its result (as kube-apiserver's token cache records them in
// an audit context of its own).
func CollectAnnotations(ctx context.Context) (context.Context, func() map[string]string) {
	e := &earlyAnnotations{}
	return context.WithValue(ctx, earlyKey{}, e), func() map[string]string {
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.set) == 0 {
			return nil
		}
		return maps.Clone(e.set)
	}
}
