package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/tokencache"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// DefaultTokenCacheTTL is --authentication-token-webhook-cache-ttl's
// default.
const DefaultTokenCacheTTL = 2 * time.Minute

// TokenAuthenticatorConfig configures a TokenAuthenticator.
type TokenAuthenticatorConfig struct {
	// Client calls the webhook.
	Client *Client
	// Version is the TokenReview version sent: VersionV1 ("") or
	// VersionV1beta1.
	Version string
	// APIAudiences are the API server's audiences (--api-audiences): a
	// request's token is reviewed for them, and an answer naming no
	// audience means them. Empty: requests' tokens are reviewed for no
	// audience and audiences are not checked.
	APIAudiences []string
	// CacheTTL: how long an authenticated or unauthenticated answer is
	// remembered; failed calls and answers with an error are not.
	CacheTTL time.Duration
	// Now is the cache's clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// TokenAuthenticator authenticates bearer tokens with a TokenReview
// webhook. It implements auth.AudienceTokenAuthenticator.
type TokenAuthenticator struct {
	cfg     TokenAuthenticatorConfig
	cache   *expiringCache[TokenResult]
	hashKey []byte
}

// NewTokenAuthenticator returns a TokenAuthenticator.
func NewTokenAuthenticator(cfg TokenAuthenticatorConfig) (*TokenAuthenticator, error) {
	switch cfg.Version {
	case "":
		cfg.Version = VersionV1
	case VersionV1, VersionV1beta1:
	default:
		return nil, fmt.Errorf("unsupported authentication webhook version %q, supported versions are %q, %q", cfg.Version, VersionV1, VersionV1beta1)
	}
	if cfg.Client == nil {
		return nil, errors.New("webhook token authenticator needs a client")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("token cache key: %w", err)
	}
	return &TokenAuthenticator{cfg: cfg, cache: newExpiringCache[TokenResult](cfg.Now), hashKey: key}, nil
}

// TokenResult is what a TokenReview's status says of a token.
type TokenResult struct {
	User *request.User
	// Audiences are the audiences asked for the token is good for (none
	// when none were asked for).
	Audiences []string
	OK        bool
	Err       error
}

// AuthenticateToken implements auth.TokenAuthenticator: the token of a
// request, reviewed for the API audiences.
func (t *TokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	res := t.authenticate(ctx, token, t.cfg.APIAudiences)
	return res.User, res.OK, res.Err
}

// AuthenticateTokenFor implements auth.AudienceTokenAuthenticator: the
// token reviewed for audiences (a TokenReview's spec.audiences), as
// kube-apiserver's webhook authenticator asks for the audiences in its
// context.
func (t *TokenAuthenticator) AuthenticateTokenFor(ctx context.Context, token string, audiences []string) (*request.User, []string, bool, error) {
	res := t.authenticate(ctx, token, audiences)
	return res.User, res.Audiences, res.OK, res.Err
}

func (t *TokenAuthenticator) authenticate(ctx context.Context, token string, audiences []string) TokenResult {
	key := t.cacheKey(token, audiences)
	if res, ok := t.cache.get(key); ok {
		return res
	}
	status, err := t.review(ctx, token, audiences)
	if err != nil {
		t.cfg.Logger.Error("Failed to make webhook authenticator request", "err", err)
		return TokenResult{Err: err}
	}
	res := ReadTokenReview(status, audiences, t.cfg.APIAudiences)
	if res.Err == nil {
		t.cache.add(key, res, t.cfg.CacheTTL)
	}
	return res
}

// cacheKey keys the cache by the token and the audiences asked for,
// hashed so that tokens are not kept in memory, as the API server's token
// cache keys them (tokencache.Key).
func (t *TokenAuthenticator) cacheKey(token string, audiences []string) string {
	return tokencache.Key(hmac.New(sha256.New, t.hashKey), token, audiences)
}

// review POSTs a TokenReview of token for auds.
func (t *TokenAuthenticator) review(ctx context.Context, token string, auds []string) (authenticationv1.TokenReviewStatus, error) {
	if t.cfg.Version == VersionV1beta1 {
		out := &authenticationv1beta1.TokenReview{}
		in := &authenticationv1beta1.TokenReview{Spec: authenticationv1beta1.TokenReviewSpec{Token: token, Audiences: auds}}
		if err := t.cfg.Client.Post(ctx, in, out); err != nil {
			return authenticationv1.TokenReviewStatus{}, err
		}
		st := authenticationv1.TokenReviewStatus{Authenticated: out.Status.Authenticated, Audiences: out.Status.Audiences, Error: out.Status.Error,
			User: authenticationv1.UserInfo{Username: out.Status.User.Username, UID: out.Status.User.UID, Groups: out.Status.User.Groups}}
		if out.Status.User.Extra != nil {
			st.User.Extra = make(map[string]authenticationv1.ExtraValue, len(out.Status.User.Extra))
			for k, v := range out.Status.User.Extra {
				st.User.Extra[k] = authenticationv1.ExtraValue(v)
			}
		}
		return st, nil
	}
	out := &authenticationv1.TokenReview{}
	in := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}
	if err := t.cfg.Client.Post(ctx, in, out); err != nil {
		return authenticationv1.TokenReviewStatus{}, err
	}
	return out.Status, nil
}

// ReadTokenReview is what the status of a TokenReview asking for want
// says, as kube-apiserver's webhook token authenticator reads it: when
// audiences were asked for, the audiences the answer names (or, naming
// none, the API server's, apiAudiences) must include one of them, else
// the token is not authenticated; then an unauthenticated answer is not
// OK, with its error if it has one; an authenticated one is its user.
func ReadTokenReview(st authenticationv1.TokenReviewStatus, want, apiAudiences []string) TokenResult {
	var auds []string
	if len(want) > 0 {
		got := apiAudiences
		if len(st.Audiences) > 0 {
			got = st.Audiences
		}
		for _, a := range want {
			if slices.Contains(got, a) && !slices.Contains(auds, a) {
				auds = append(auds, a)
			}
		}
		if len(auds) == 0 {
			return TokenResult{}
		}
	}
	if !st.Authenticated {
		var err error
		if st.Error != "" {
			err = errors.New(st.Error)
		}
		return TokenResult{Err: err}
	}
	u := &request.User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if st.User.Extra != nil {
		u.Extra = make(map[string][]string, len(st.User.Extra))
		for k, v := range st.User.Extra {
			u.Extra[k] = v
		}
	}
	return TokenResult{User: u, Audiences: auds, OK: true}
}
