package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/tokencache"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Authentication as kube-apiserver builds it: a union tried in order —
// the server's own loopback token (loopback.go), x509 client certificates (or Config.Authenticator), then bearer tokens
// (Config.TokenAuthenticators such as --token-auth-file, service account
// tokens, bootstrap tokens, then Config.LastTokenAuthenticators such as
// the TokenReview webhook), then the plugins' authenticators. The first
// that recognises the request decides; invalid credentials are a 401 even
// when anonymous requests are allowed.

var (
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	secretsGVR         = corev1.SchemeGroupVersion.WithResource("secrets")
)

// GetServiceAccount implements auth.ObjectGetter (a quorum read).
func (l storeLookup) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := l.get(ctx, serviceAccountsGVR, namespace, name)
	if err != nil {
		return nil, err
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("serviceaccounts store returned %T", obj))
	}
	return sa, nil
}

// GetSecret implements auth.ObjectGetter (a quorum read).
func (l storeLookup) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, err := l.get(ctx, secretsGVR, namespace, name)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("secrets store returned %T", obj))
	}
	return s, nil
}

// buildAuthenticator assembles the authentication union. The bearer
// token authenticators stand behind kube-apiserver's token cache
// (tokencache, with its default TTLs: successes 10 s, refusals not
// cached), one cache for requests and TokenReview alike (reviewToken
// authenticates for it; a request's audiences are the API audiences), its
// metrics registered on reg. The loopback token, as kube-apiserver's, is
// checked before the cache on requests.
func (s *Server) buildAuthenticator(reg prometheus.Registerer) (auth.Authenticator, error) {
	cfg := s.cfg
	// The loopback token first of all, as kube-apiserver puts its own in
	// front of its chain; a token it does not know is left to the rest.
	union := auth.Union{s.loopback, cfg.Authenticator}
	tokens := append([]auth.TokenAuthenticator(nil), cfg.TokenAuthenticators...)
	if s.saTokens != nil {
		tokens = append(tokens, s.saTokens)
	}
	if cfg.BootstrapTokenAuth {
		tokens = append(tokens, &auth.BootstrapTokens{Secrets: storeLookup{s}})
	}
	tokens = append(tokens, cfg.LastTokenAuthenticators...)
	// TokenReview knows the loopback token too.
	s.bearer = auth.BearerToken{Tokens: append([]auth.TokenAuthenticator{s.loopback}, tokens...)}
	metrics, err := tokencache.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("registering token cache metrics: %w", err)
	}
	s.reviewTokens, err = tokencache.New(s.reviewToken, tokencache.Config{
		SuccessTTL: tokencache.DefaultSuccessTTL, FailureTTL: tokencache.DefaultFailureTTL,
		CacheErrors: true, Metrics: metrics, Logger: cfg.Logger, Now: cfg.TokenCacheNow})
	if err != nil {
		return nil, err
	}
	if len(tokens) > 0 {
		union = append(union, auth.BearerToken{Tokens: []auth.TokenAuthenticator{cachedTokens{s.reviewTokens, s.apiAudiences()}}})
	}
	return append(union, s.plugins.Authenticators...), nil
}

// cachedTokens authenticates a request's bearer token through the token
// cache, for the request's audiences: the API audiences.
type cachedTokens struct {
	cache     *tokencache.Cache
	audiences []string
}

// AuthenticateToken implements auth.TokenAuthenticator.
func (c cachedTokens) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	res := c.cache.Authenticate(ctx, token, c.audiences)
	return res.User, res.OK, res.Err
}

// legacyTokenTracker writes the last-used label of legacy token secrets
// through the server's loopback client, as kube-apiserver's legacy token
// validator patches them with its loopback clientset.
type legacyTokenTracker struct{ s *Server }

// MarkLegacyTokenUsed implements auth.LegacyTokenTracker: a merge patch of
// the label, carrying the secret's uid so that a recreated secret is not
// labelled.
func (t legacyTokenTracker) MarkLegacyTokenUsed(ctx context.Context, secret *corev1.Secret, date string) error {
	addr, err := t.s.LoopbackAddress()
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": secret.UID, "labels": map[string]string{auth.LegacyTokenLastUsedLabel: date}}})
	if err != nil {
		return err
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/api/v1/namespaces/" + url.PathEscape(secret.Namespace) + "/secrets/" + url.PathEscape(secret.Name)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u.String(), bytes.NewReader(patch))
	if err != nil {
		return err
	}
	tlsConfig, token := t.s.LoopbackClient()
	req.Header.Set("Content-Type", "application/merge-patch+json")
	req.Header.Set("Authorization", "Bearer "+token)
	tr := &http.Transport{TLSClientConfig: tlsConfig}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("patching secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("patching secret %s/%s: %s", secret.Namespace, secret.Name, resp.Status)
	}
	return nil
}
