package secureserving

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
)

// user is who a request is from.
type user struct {
	name   string
	uid    string
	groups []string
	extra  map[string]authorizationv1.ExtraValue
}

var anonymous = user{name: "system:anonymous", groups: []string{"system:unauthenticated"}}

// tokenReviewer creates TokenReviews (a typed client's TokenReviews()).
type tokenReviewer interface {
	Create(ctx context.Context, r *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// accessReviewer creates SubjectAccessReviews.
type accessReviewer interface {
	Create(ctx context.Context, r *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// reviewTimeout bounds each review request.
const reviewTimeout = 10 * time.Second

// authenticator finds a request's user, as the delegating authenticator of
// kube-scheduler and kube-controller-manager: a front proxy's headers when
// its client certificate is verified, else the client certificate when a
// client CA verifies it, else the bearer token when a reviewer accepts it.
// The first that succeeds decides; when none does, any refusal (a
// certificate not verified, a token refused) is an error (401), and a
// request without credentials is anonymous.
type authenticator struct {
	requestHeader *requestHeaderAuthenticator
	clientCAs     *x509.CertPool
	tokens        tokenReviewer
	// tokenCache (nil: none) keeps reviews' answers by token hash for
	// tokenTTL, authenticated or not; a review that failed is not kept.
	tokenCache *cache.LRUExpireCache
	tokenTTL   time.Duration
}

func (a *authenticator) authenticate(r *http.Request) (user, error) {
	var errs []error
	if a.requestHeader != nil {
		u, ok, err := a.requestHeader.authenticate(r)
		if ok {
			return authenticated(u), nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if a.clientCAs != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		cert, err := verifyClientCertificate(r.TLS.PeerCertificates, a.clientCAs)
		if err == nil {
			return authenticated(user{name: cert.Subject.CommonName, groups: slices.Clone(cert.Subject.Organization)}), nil
		}
		errs = append(errs, err)
	}
	if a.tokens != nil {
		if token, ok := bearerToken(r); ok {
			u, err := a.reviewToken(r.Context(), token)
			if err == nil {
				return authenticated(u), nil
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return user{}, errors.Join(errs...)
	}
	return anonymous, nil
}

// verifyClientCertificate is the leaf of a client certificate chain roots
// verify for client authentication.
func verifyClientCertificate(chain []*x509.Certificate, roots *x509.CertPool) (*x509.Certificate, error) {
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("verifying the client certificate: %w", err)
	}
	return chain[0], nil
}

// tokenAnswer is a TokenReview's answer as cached: the user, or why not.
type tokenAnswer struct {
	user user
	err  error
}

// reviewToken is the user a TokenReview says token is, from the cache when
// an answer for it is younger than the TTL.
func (a *authenticator) reviewToken(ctx context.Context, token string) (user, error) {
	key := sha256.Sum256([]byte(token))
	if a.tokenCache != nil {
		if v, ok := a.tokenCache.Get(key); ok {
			ans := v.(tokenAnswer)
			return ans.user, ans.err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		// Not cached: the next request asks again.
		return user{}, fmt.Errorf("reviewing the bearer token: %w", err)
	}
	if !review.Status.Authenticated && review.Status.Error != "" {
		// An error the reviewer reports is not cached either.
		return user{}, errors.New(review.Status.Error)
	}
	var ans tokenAnswer
	if review.Status.Authenticated {
		u := review.Status.User
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		ans.user = user{name: u.Username, uid: u.UID, groups: slices.Clone(u.Groups), extra: extra}
	} else {
		ans.err = errors.New("invalid bearer token")
	}
	if a.tokenCache != nil && a.tokenTTL > 0 {
		a.tokenCache.Add(key, ans, a.tokenTTL)
	}
	return ans.user, ans.err
}

// authenticated adds system:authenticated to an authenticated user's
// groups, as kube-apiserver's authenticators do.
func authenticated(u user) user {
	if !slices.Contains(u.groups, "system:authenticated") && !slices.Contains(u.groups, "system:unauthenticated") {
		// Clipped: u may be a cached answer other requests share, whose
		// backing array must not be written.
		u.groups = append(slices.Clip(u.groups), "system:authenticated")
	}
	return u
}

// bearerToken is the request's "Authorization: Bearer <token>".
func bearerToken(r *http.Request) (string, bool) {
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	return parts[1], true
}

// authorizer decides whether user may do verb on a path (every request to
// these servers is a non-resource request): an always-allowed path or
// group is allowed, else a reviewer's SubjectAccessReview decides, else
// denied. The reason is the review's. Answers are cached by the review's
// spec (nil cache: none), allowed ones for authorizedTTL, others for
// unauthorizedTTL; a review that could not be made is not.
type authorizer struct {
	alwaysAllowPaths  []string
	alwaysAllowGroups []string
	reviews           accessReviewer
	cache             *cache.LRUExpireCache
	authorizedTTL     time.Duration
	unauthorizedTTL   time.Duration
}

// accessAnswer is a SubjectAccessReview's answer as cached.
type accessAnswer struct {
	allowed bool
	reason  string
}

func (a *authorizer) authorize(ctx context.Context, u user, verb, path string) (allowed bool, reason string, err error) {
	for _, p := range a.alwaysAllowPaths {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(path, prefix) || p == path {
			return true, "", nil
		}
	}
	for _, g := range u.groups {
		if slices.Contains(a.alwaysAllowGroups, g) {
			return true, "", nil
		}
	}
	if a.reviews == nil {
		return false, "", nil
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: u.name, UID: u.uid, Groups: u.groups, Extra: u.extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	key, err := json.Marshal(spec)
	if err != nil {
		return false, "", fmt.Errorf("encoding the access review: %w", err)
	}
	if a.cache != nil {
		if v, ok := a.cache.Get(string(key)); ok {
			ans := v.(accessAnswer)
			return ans.allowed, ans.reason, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := a.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("reviewing access: %w", err)
	}
	ans := accessAnswer{allowed: review.Status.Allowed && !review.Status.Denied, reason: review.Status.Reason}
	if review.Status.EvaluationError != "" && ans.reason == "" {
		ans.reason = review.Status.EvaluationError
	}
	if a.cache != nil {
		ttl := a.unauthorizedTTL
		if ans.allowed {
			ttl = a.authorizedTTL
		}
		if ttl > 0 {
			a.cache.Add(string(key), ans, ttl)
		}
	}
	return ans.allowed, ans.reason, nil
}

// filter authenticates and authorizes every request before next serves
// it: 401 Unauthorized when a credential is refused, 403 Forbidden when
// the user may not, both as Status objects.
func (s *Server) filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authn.authenticate(r)
		if err != nil {
			s.log.Debug("unable to authenticate the request", "err", err)
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		// Authenticated (anonymous included): the credentials and any
		// front-proxy identity headers go, as upstream's filter removes
		// Authorization and the standard and configured request headers.
		r.Header.Del("Authorization")
		clearIdentityHeaders(r.Header, standardIdentityHeaders, []string{standardExtraHeaderPrefix})
		if s.authn.requestHeader != nil {
			s.authn.requestHeader.clear(r.Header)
		}
		verb := strings.ToLower(r.Method)
		allowed, reason, err := s.authz.authorize(r.Context(), u, verb, r.URL.Path)
		if !allowed && err != nil {
			// The reviewing API server did not answer: upstream's
			// authorization filter answers 500, neither allowed nor denied.
			s.log.Warn("authorizing the request", "path", r.URL.Path, "err", err)
			http.Error(w, fmt.Sprintf("Internal Server Error: %q: %v", r.RequestURI, err), http.StatusInternalServerError)
			return
		}
		if !allowed {
			msg := fmt.Sprintf("forbidden: User %q cannot %s path %q", u.name, verb, r.URL.Path)
			if reason != "" {
				msg += ": " + reason
			}
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	}
	if code == http.StatusForbidden {
		st.Details = &metav1.StatusDetails{}
	}
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
