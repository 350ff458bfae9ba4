package credentialprovider

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// Service account token mode (tokenAttributes, upstream's
// KubeletServiceAccountTokenForCredentialProviders, on by default): the
// plugin is asked with a token of the pulling pod's service account, for
// the configured audience and bound to the pod, and with the service
// account's annotations the configuration names. Its answers are cached
// per service account (and per token with cacheType Token), and the
// credentials it gives are the service account's: a pull with them is
// recorded as that service account's (pullrecords).

// tokenMode is a provider's tokenAttributes.
type tokenMode struct {
	audience              string
	requireServiceAccount bool
	required, optional    []string
	cacheType             kubeletconfigv1.ServiceAccountTokenCacheType
	tokens                *tokenCache
}

// newTokenMode is cfg's token mode; nil when it has no tokenAttributes (or
// no audience), as upstream's newServiceAccountProvider.
func newTokenMode(cfg kubeletconfigv1.CredentialProvider, tokens *tokenCache) *tokenMode {
	ta := cfg.TokenAttributes
	if ta == nil || ta.ServiceAccountTokenAudience == "" {
		return nil
	}
	return &tokenMode{
		audience:              ta.ServiceAccountTokenAudience,
		requireServiceAccount: ta.RequireServiceAccount != nil && *ta.RequireServiceAccount,
		required:              ta.RequiredServiceAccountAnnotationKeys,
		optional:              ta.OptionalServiceAccountAnnotationKeys,
		cacheType:             ta.CacheType,
		tokens:                tokens,
	}
}

// requiredAnnotationNotFoundError is upstream's: a service account lacks
// an annotation the configuration requires (the plugin is then not asked:
// a way for workloads to opt in).
type requiredAnnotationNotFoundError string

func (e requiredAnnotationNotFoundError) Error() string {
	return fmt.Sprintf("required annotation %s not found", string(e))
}

// ServiceAccountAnnotations are the annotations of sa the plugin is given,
// as upstream's getServiceAccountData: every required key (one missing is
// an error, requiredAnnotationNotFoundError), and the optional keys sa
// has.
func ServiceAccountAnnotations(sa *v1.ServiceAccount, required, optional []string) (map[string]string, error) {
	out := make(map[string]string, len(required)+len(optional))
	for _, k := range required {
		v, ok := sa.Annotations[k]
		if !ok {
			return nil, requiredAnnotationNotFoundError(k)
		}
		out[k] = v
	}
	for _, k := range optional {
		if v, ok := sa.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// isRequiredAnnotationNotFound reports whether err is a missing required
// annotation.
func isRequiredAnnotationNotFound(err error) bool {
	var e requiredAnnotationNotFoundError
	return errors.As(err, &e)
}

// TokenRequest is the request for the plugin's token, as upstream's: the
// provider's audience, bound to the pod, the service account's UID as
// the request's (so that a service account recreated since is refused),
// expiration left to the API server's default.
func TokenRequest(audience, podName string, podUID, serviceAccountUID types.UID) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: serviceAccountUID},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{audience},
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: podUID},
		},
	}
}

// tokenHash is upstream's getHashIfNotEmpty: "sha256:<hex>" of token, ""
// for none.
func tokenHash(token string) string {
	if token == "" {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(token)))
}

// keyBuilder builds cache keys of length-prefixed parts (a 16-bit length
// before each string, a 32-bit count before annotations sorted by key),
// as upstream's cacheKeyBuilder, so that no two different part lists give
// the same key.
type keyBuilder struct {
	b   []byte
	err error
}

func (k *keyBuilder) str(s string) *keyBuilder {
	if len(s) > 0xffff {
		k.err = fmt.Errorf("cache key part of %d bytes is too long", len(s))
		return k
	}
	k.b = binary.BigEndian.AppendUint16(k.b, uint16(len(s)))
	k.b = append(k.b, s...)
	return k
}

func (k *keyBuilder) annotations(a map[string]string) *keyBuilder {
	keys := make([]string, 0, len(a))
	for key := range a {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	k.b = binary.BigEndian.AppendUint32(k.b, uint32(len(keys)))
	for _, key := range keys {
		k.str(key).str(a[key])
	}
	return k
}

func (k *keyBuilder) build() (string, error) { return string(k.b), k.err }

// ServiceAccountCacheKey is upstream's generateServiceAccountCacheKey: the
// service account's namespace, name and UID and the annotations given to
// the plugin; with cacheType Token also the token's hash (an answer valid
// only for that token).
func ServiceAccountCacheKey(namespace, name string, uid types.UID, annotations map[string]string, cacheType kubeletconfigv1.ServiceAccountTokenCacheType, tokenHash string) (string, error) {
	k := (&keyBuilder{}).str(namespace).str(name).str(string(uid)).annotations(annotations)
	if cacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
		k.str("token").str(tokenHash)
	}
	return k.build()
}

// CacheKey is a cached answer's key: its cacheKeyType's key (the image,
// its registry or the global key) and the service account's
// (ServiceAccountCacheKey; "" outside token mode), as upstream's
// generateCacheKey.
func CacheKey(base, serviceAccountKey string) (string, error) {
	return (&keyBuilder{}).str(base).str(serviceAccountKey).build()
}

// singleFlightKey is what concurrent asks share a plugin run by: the
// image, and in token mode also the token's hash and the annotations
// (upstream's generateSingleFlightKey).
func singleFlightKey(image, tokenHash string, annotations map[string]string) (string, error) {
	return (&keyBuilder{}).str(image).str(tokenHash).annotations(annotations).build()
}

// Token refresh, as upstream's kubelet token manager: a cached token is
// used until 80% of its lifetime has passed, or 24 hours since it was
// issued, each less a jitter of 0 to 9 whole seconds drawn anew at every
// check (TokenJitter), so that tokens issued together are not all
// refreshed together. (Upstream's refresh of a token whose issue time is
// after the node's clock, proposed in 2024 and 2025, was not merged.)
const (
	tokenMaxTTL    = 24 * time.Hour
	tokenMaxJitter = 10 * time.Second
)

// TokenJitter is upstream's token refresh jitter for a draw r in [0, 1):
// r × 10 s, truncated to whole seconds.
func TokenJitter(r float64) time.Duration {
	return time.Duration(r*tokenMaxJitter.Seconds()) * time.Second
}

// RequiresRefresh reports whether the token tr answered must be requested
// again at now with the jitter drawn for this check (TokenJitter), as
// upstream's token manager's requiresRefresh; one whose
// expirationSeconds the answer does not give is kept.
func RequiresRefresh(tr *authenticationv1.TokenRequest, now time.Time, jitter time.Duration) bool {
	at, ok := RefreshAt(tr)
	return ok && now.After(at.Add(-jitter))
}

// RefreshAt is when the token tr answered is due for renewal before a
// check's jitter: the earlier of 24 hours after it was issued and 80% of
// its lifetime (RequiresRefresh(tr, now, j) is now.After(RefreshAt(tr) −
// j)). ok is false when the answer gives no expirationSeconds (such a
// token is kept, as upstream's).
func RefreshAt(tr *authenticationv1.TokenRequest) (at time.Time, ok bool) {
	if tr.Spec.ExpirationSeconds == nil {
		return time.Time{}, false
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-ttl)
	at = exp.Add(-time.Duration(*tr.Spec.ExpirationSeconds*20/100) * time.Second)
	if capped := iat.Add(tokenMaxTTL); capped.Before(at) {
		at = capped
	}
	return at, true
}

// tokenCache is the kubelet's service account tokens for the plugins, as
// upstream's token manager: by its key (service account and its UID,
// audiences, expiration, bound object), reused until RequiresRefresh; a
// failed refresh of a token not yet expired keeps it. Expired tokens are
// dropped at each ask, a pod's when it is removed from the kubelet
// (forgetPod).
type tokenCache struct {
	now  func() time.Time
	rand func() float64 // draws the jitter of each refresh check (TokenJitter)
	mu   sync.Mutex
	m    map[string]cachedToken
}

// cachedToken is a token the API answered and the pod it was requested
// bound to.
type cachedToken struct {
	tr  *authenticationv1.TokenRequest
	pod types.UID
}

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, rand: rand.Float64, m: map[string]cachedToken{}}
}

// tokenCacheKey is upstream's token manager keyFunc, which since 1.34
// also holds the service account's UID (the request's metadata.uid), so
// that a service account recreated under its name gets tokens of its own.
func tokenCacheKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", name, namespace, tr.Spec.Audiences, exp, ref, tr.UID)
}

// token is a token of namespace/name for tr, from the cache or api.
func (c *tokenCache) token(api credentials.ServiceAccountAPI, namespace, name string, tr *authenticationv1.TokenRequest) (string, error) {
	key := tokenCacheKey(namespace, name, tr)
	now := c.now()
	c.mu.Lock()
	for k, t := range c.m {
		if now.After(t.tr.Status.ExpirationTimestamp.Time) {
			delete(c.m, k)
		}
	}
	cached, ok := c.m[key]
	jitter := TokenJitter(c.rand())
	c.mu.Unlock()
	if ok && !RequiresRefresh(cached.tr, now, jitter) {
		return cached.tr.Status.Token, nil
	}
	got, err := api.CreateToken(namespace, name, tr)
	if err != nil {
		if !ok {
			return "", fmt.Errorf("failed to fetch token: %w", err)
		}
		return cached.tr.Status.Token, nil // not expired (dropped above otherwise)
	}
	if got.Status.Token == "" {
		return "", fmt.Errorf("failed to fetch token: the API server returned an empty token for service account %s/%s", namespace, name)
	}
	var pod types.UID
	if tr.Spec.BoundObjectRef != nil {
		pod = tr.Spec.BoundObjectRef.UID
	}
	c.mu.Lock()
	c.m[key] = cachedToken{tr: got, pod: pod}
	c.mu.Unlock()
	return got.Status.Token, nil
}

// forgetPod drops the tokens bound to the pod uid, as upstream's
// DeleteServiceAccountToken when the kubelet tears the pod's volumes down.
func (c *tokenCache) forgetPod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, t := range c.m {
		if t.pod == uid {
			delete(c.m, k)
		}
	}
}
