package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The kubelet API's authentication and authorization, as kubelet does with
// --authentication-token-webhook and --authorization-mode=Webhook:
//
//   - a verified TLS client certificate names the user (CommonName) and
//     its groups (Organization), as the API server's x509 authenticator;
//   - otherwise an "Authorization: Bearer" token is checked with a
//     TokenReview against the API server;
//   - otherwise the request is anonymous when AnonymousAuth is on, and
//     gets 401 when it is off;
//   - every authenticated request is authorized with a SubjectAccessReview
//     for the node resource: verb from the HTTP method, subresource from
//     the path (stats, metrics, log, spec, checkpoint; healthz, configz and
//     pods with a fallback to proxy, as upstream's fine-grained kubelet
//     authorization; proxy for everything else). Denied requests get 403.
//
// Decisions are cached (token reviews 2 minutes; allowed 5 minutes, denied
// 30 seconds, kubelet's --authentication-token-webhook-cache-ttl and
// --authorization-webhook-cache-*-ttl defaults).

// User is an authenticated kubelet API client.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Attributes is what one request asks to do, in the API server's terms.
type Attributes struct {
	User        User
	Verb        string // get, create, update, patch, delete
	Subresource string // of nodes: proxy, stats, metrics, log, spec, …
	// Fallback is the subresource checked when Subresource is denied
	// ("proxy" for the fine-grained healthz, configz and pods), or "".
	Fallback string
	// Node is the node the request is about; "" when a shared server
	// cannot tell (the user must then be allowed on every node).
	Node string
}

// AuthOptions configure an Auth. Zero durations take kubelet's defaults.
type AuthOptions struct {
	// Client makes the TokenReviews and SubjectAccessReviews (upstream's
	// kubelet uses its own credentials; system:node may create both).
	Client kubernetes.Interface
	// TokenWebhook enables bearer tokens through TokenReview
	// (--authentication-token-webhook).
	TokenWebhook bool
	// AnonymousAuth lets requests without credentials through as
	// system:anonymous (--anonymous-auth); they are still authorized.
	AnonymousAuth bool

	TokenCacheTTL, AuthorizedTTL, UnauthorizedTTL time.Duration
	// Now is the clock of the caches (time.Now).
	Now func() time.Time
}

// Auth authenticates and authorizes kubelet API requests. It is safe for
// concurrent use.
type Auth struct {
	opts AuthOptions

	mu        sync.Mutex
	tokens    map[string]tokenEntry
	decisions map[string]decisionEntry
}

type tokenEntry struct {
	user    User
	ok      bool
	expires time.Time
}

type decisionEntry struct {
	allowed bool
	expires time.Time
}

// maxCacheEntries bounds each cache; when full it is emptied.
const maxCacheEntries = 10000

// NewAuth returns an Auth.
func NewAuth(o AuthOptions) *Auth {
	if o.TokenCacheTTL <= 0 {
		o.TokenCacheTTL = 2 * time.Minute
	}
	if o.AuthorizedTTL <= 0 {
		o.AuthorizedTTL = 5 * time.Minute
	}
	if o.UnauthorizedTTL <= 0 {
		o.UnauthorizedTTL = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Auth{opts: o, tokens: map[string]tokenEntry{}, decisions: map[string]decisionEntry{}}
}

// Authenticate identifies the client of req: its verified certificate,
// else its bearer token, else anonymous if allowed. ok is false when the
// request must get 401.
func (a *Auth) Authenticate(req *http.Request) (u User, ok bool, err error) {
	if req.TLS != nil && len(req.TLS.VerifiedChains) > 0 && len(req.TLS.PeerCertificates) > 0 {
		c := req.TLS.PeerCertificates[0]
		if c.Subject.CommonName != "" {
			return User{Name: c.Subject.CommonName, Groups: slices.Clone(c.Subject.Organization)}, true, nil
		}
	}
	if token, found := bearerToken(req); found && a.opts.TokenWebhook && a.opts.Client != nil {
		return a.reviewToken(req.Context(), token)
	}
	if a.opts.AnonymousAuth {
		return User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, true, nil
	}
	return User{}, false, nil
}

func bearerToken(req *http.Request) (string, bool) {
	h := req.Header.Get("Authorization")
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// reviewToken asks the API server who a token belongs to (cached).
func (a *Auth) reviewToken(ctx context.Context, token string) (User, bool, error) {
	now := a.opts.Now()
	a.mu.Lock()
	if e, ok := a.tokens[token]; ok && now.Before(e.expires) {
		a.mu.Unlock()
		return e.user, e.ok, nil
	}
	a.mu.Unlock()
	tr, err := a.opts.Client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return User{}, false, fmt.Errorf("token review: %w", err)
	}
	var u User
	if tr.Status.Authenticated {
		u = User{Name: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups}
		if len(tr.Status.User.Extra) > 0 {
			u.Extra = map[string][]string{}
			for k, v := range tr.Status.User.Extra {
				u.Extra[k] = v
			}
		}
	}
	a.mu.Lock()
	if len(a.tokens) >= maxCacheEntries {
		clear(a.tokens)
	}
	a.tokens[token] = tokenEntry{user: u, ok: tr.Status.Authenticated, expires: now.Add(a.opts.TokenCacheTTL)}
	a.mu.Unlock()
	return u, tr.Status.Authenticated, nil
}

// RequestAttributes maps a request to what it asks of node, as kubelet's
// auth mapping does: the verb from the method, the subresource from the
// path.
func RequestAttributes(u User, req *http.Request, node string) Attributes {
	attrs := Attributes{User: u, Node: node, Subresource: "proxy"}
	switch req.Method {
	case http.MethodPost:
		attrs.Verb = "create"
	case http.MethodGet, http.MethodHead:
		attrs.Verb = "get"
	case http.MethodPut:
		attrs.Verb = "update"
	case http.MethodPatch:
		attrs.Verb = "patch"
	case http.MethodDelete:
		attrs.Verb = "delete"
	}
	path := req.URL.Path
	under := func(prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }
	switch {
	case under("/stats"):
		attrs.Subresource = "stats"
	case under("/metrics"):
		attrs.Subresource = "metrics"
	case under("/logs"):
		attrs.Subresource = "log"
	case under("/spec"):
		attrs.Subresource = "spec"
	case under("/checkpoint"):
		attrs.Subresource = "checkpoint"
	case under("/healthz"):
		attrs.Subresource, attrs.Fallback = "healthz", "proxy"
	case under("/configz"):
		attrs.Subresource, attrs.Fallback = "configz", "proxy"
	case under("/pods"):
		attrs.Subresource, attrs.Fallback = "pods", "proxy"
	}
	return attrs
}

// Authorize reports whether attrs are allowed: the subresource, or else
// its fallback.
func (a *Auth) Authorize(ctx context.Context, attrs Attributes) (bool, error) {
	ok, err := a.allowed(ctx, attrs, attrs.Subresource)
	if ok || err != nil || attrs.Fallback == "" {
		return ok, err
	}
	return a.allowed(ctx, attrs, attrs.Fallback)
}

func (a *Auth) allowed(ctx context.Context, attrs Attributes, subresource string) (bool, error) {
	u := attrs.User
	key := strings.Join([]string{u.Name, u.UID, strings.Join(u.Groups, ","), fmt.Sprint(u.Extra), attrs.Verb, subresource, attrs.Node}, "\x00")
	now := a.opts.Now()
	a.mu.Lock()
	if e, ok := a.decisions[key]; ok && now.Before(e.expires) {
		a.mu.Unlock()
		return e.allowed, nil
	}
	a.mu.Unlock()
	if a.opts.Client == nil {
		return false, fmt.Errorf("no client to make a SubjectAccessReview with")
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: attrs.Verb, Version: "v1", Resource: "nodes", Subresource: subresource, Name: attrs.Node,
		},
	}}
	if len(u.Extra) > 0 {
		sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	res, err := a.opts.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	ttl := a.opts.UnauthorizedTTL
	if res.Status.Allowed {
		ttl = a.opts.AuthorizedTTL
	}
	a.mu.Lock()
	if len(a.decisions) >= maxCacheEntries {
		clear(a.decisions)
	}
	a.decisions[key] = decisionEntry{allowed: res.Status.Allowed, expires: now.Add(ttl)}
	a.mu.Unlock()
	return res.Status.Allowed, nil
}

// authorizeRequest runs the whole check for req about node and writes 401,
// 403 or 500 as kubelet does; it reports whether to go on serving.
func (a *Auth) authorizeRequest(w http.ResponseWriter, req *http.Request, node string) bool {
	u, ok, err := a.Authenticate(req)
	if err != nil || !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return false
	}
	attrs := RequestAttributes(u, req, node)
	allowed, err := a.Authorize(req.Context(), attrs)
	if err != nil {
		http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
			u.Name, attrs.Verb, "nodes", attrs.Subresource), http.StatusInternalServerError)
		return false
	}
	if !allowed {
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource=%s)",
			u.Name, attrs.Verb, "nodes", attrs.Subresource), http.StatusForbidden)
		return false
	}
	return true
}
