package credentialprovider

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// TestServiceAccountAnnotations: upstream's getServiceAccountData: every
// required annotation (a missing one is its error), the optional ones
// present.
func TestServiceAccountAnnotations(t *testing.T) {
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"r.io/a": "1", "o.io/b": "2", "x.io/other": "3"}}}
	got, err := ServiceAccountAnnotations(sa, []string{"r.io/a"}, []string{"o.io/b", "o.io/missing"})
	if err != nil || !reflect.DeepEqual(got, map[string]string{"r.io/a": "1", "o.io/b": "2"}) {
		t.Errorf("annotations %v, %v", got, err)
	}
	_, err = ServiceAccountAnnotations(sa, []string{"r.io/a", "r.io/missing"}, nil)
	if err == nil || err.Error() != "required annotation r.io/missing not found" || !isRequiredAnnotationNotFound(fmt.Errorf("wrapped: %w", err)) {
		t.Errorf("missing required annotation: %v", err)
	}
}

// TestServiceAccountCacheKey: a cached answer is the service account's
// (namespace, name, UID, annotations); with cacheType Token also the
// token's; parts never run together.
func TestServiceAccountCacheKey(t *testing.T) {
	key := func(ns, name, uid string, a map[string]string, ct kubeletconfigv1.ServiceAccountTokenCacheType, hash string) string {
		k, err := ServiceAccountCacheKey(ns, name, types.UID(uid), a, ct, hash)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	const sa, tok = kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, kubeletconfigv1.TokenServiceAccountTokenCacheType
	base := key("ns", "puller", "u1", map[string]string{"a": "1"}, sa, "sha256:1")
	if base != key("ns", "puller", "u1", map[string]string{"a": "1"}, sa, "sha256:2") {
		t.Error("cacheType ServiceAccount: the key depends on the token")
	}
	for name, other := range map[string]string{
		"namespace":     key("other", "puller", "u1", map[string]string{"a": "1"}, sa, "sha256:1"),
		"name":          key("ns", "builder", "u1", map[string]string{"a": "1"}, sa, "sha256:1"),
		"uid":           key("ns", "puller", "u2", map[string]string{"a": "1"}, sa, "sha256:1"),
		"annotation":    key("ns", "puller", "u1", map[string]string{"a": "2"}, sa, "sha256:1"),
		"no annotation": key("ns", "puller", "u1", nil, sa, "sha256:1"),
		"run together":  key("nsp", "uller", "u1", map[string]string{"a": "1"}, sa, "sha256:1"),
	} {
		if other == base {
			t.Errorf("another %s, same key", name)
		}
	}
	if key("ns", "puller", "u1", nil, tok, "sha256:1") == key("ns", "puller", "u1", nil, tok, "sha256:2") {
		t.Error("cacheType Token: the key does not depend on the token")
	}
	a, _ := CacheKey("reg.example.com", base)
	b, _ := CacheKey("reg.example.com", "")
	if a == b {
		t.Error("CacheKey ignores the service account's key")
	}
}

// TestRequiresRefresh: upstream's token manager: refreshed past 80% of
// its lifetime or 24 hours after it was issued, each less the jitter.
func TestRequiresRefresh(t *testing.T) {
	issued := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	tr := func(secs int64) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
			Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(issued.Add(time.Duration(secs) * time.Second))}}
	}
	for _, tc := range []struct {
		name   string
		tr     *authenticationv1.TokenRequest
		at     time.Duration
		jitter time.Duration
		want   bool
	}{
		{"fresh", tr(3600), time.Minute, 0, false},
		{"at 80%", tr(3600), 48 * time.Minute, 0, false},
		{"past 80%", tr(3600), 48*time.Minute + time.Second, 0, true},
		{"before 80% less the jitter", tr(3600), 48*time.Minute - 9*time.Second, 9 * time.Second, false},
		{"past 80% less the jitter", tr(3600), 48*time.Minute - 8*time.Second, 9 * time.Second, true},
		{"long token, before 24h", tr(7 * 24 * 3600), 23 * time.Hour, 0, false},
		{"long token, past 24h", tr(7 * 24 * 3600), 24*time.Hour + time.Second, 0, true},
		{"long token, at 24h less the jitter", tr(7 * 24 * 3600), 24*time.Hour - 5*time.Second, 5 * time.Second, false},
		{"long token, past 24h less the jitter", tr(7 * 24 * 3600), 24*time.Hour - 4*time.Second, 5 * time.Second, true},
		{"no expirationSeconds", &authenticationv1.TokenRequest{}, 100 * time.Hour, 9 * time.Second, false},
	} {
		if got := RequiresRefresh(tc.tr, issued.Add(tc.at), tc.jitter); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTokenJitter: upstream's jitter, a draw in [0, 1) of 10 s truncated
// to whole seconds: 0 to 9 s.
func TestTokenJitter(t *testing.T) {
	for r, want := range map[float64]time.Duration{0: 0, 0.0999: 0, 0.1: time.Second, 0.55: 5 * time.Second, 0.9999: 9 * time.Second} {
		if got := TokenJitter(r); got != want {
			t.Errorf("TokenJitter(%v) = %v, want %v", r, got, want)
		}
	}
}

// tokenRequestFor is the request a plugin's token is asked with for the
// pod uid of service account uid saUID.
func tokenRequestFor(pod, saUID string) *authenticationv1.TokenRequest {
	return TokenRequest("aud", "pod-"+pod, types.UID(pod), types.UID(saUID))
}

// TestTokenCacheJitter: a cached token is refreshed by upstream's rule
// with the jitter drawn from the cache's random source at each check: a
// token of an hour is kept until 48 minutes less the jitter.
func TestTokenCacheJitter(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	issued := now
	api := &fakeAPI{now: func() time.Time { return issued }}
	c := newTokenCache(func() time.Time { return now })
	draw := 0.0
	c.rand = func() float64 { return draw }
	if _, err := c.token(api, "ns", "sa", tokenRequestFor("u1", "sa-uid")); err != nil {
		t.Fatal(err)
	}
	now = issued.Add(48*time.Minute - 8*time.Second)
	if tok, err := c.token(api, "ns", "sa", tokenRequestFor("u1", "sa-uid")); err != nil || tok != "token-1" || len(api.requests) != 1 {
		t.Fatalf("before 80%% with no jitter: %q, %v, %d requests; want the cached token-1", tok, err, len(api.requests))
	}
	draw = 0.95 // 9 s
	if tok, err := c.token(api, "ns", "sa", tokenRequestFor("u1", "sa-uid")); err != nil || tok != "token-2" || len(api.requests) != 2 {
		t.Fatalf("past 80%% less a jitter of 9 s: %q, %v, %d requests; want a new token-2", tok, err, len(api.requests))
	}
}

// TestTokenCacheServiceAccountUID: the cache key includes the service
// account's UID, as upstream's token manager since 1.34: a service
// account deleted and created again under its name gets a token of its
// own, not the old one's.
func TestTokenCacheServiceAccountUID(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	api := &fakeAPI{now: func() time.Time { return now }}
	c := newTokenCache(func() time.Time { return now })
	for i, uid := range []string{"sa-uid-1", "sa-uid-1", "sa-uid-2", "sa-uid-2"} {
		if _, err := c.token(api, "ns", "sa", tokenRequestFor("u1", uid)); err != nil {
			t.Fatal(err)
		}
		if want := 1 + i/2; len(api.requests) != want {
			t.Fatalf("ask %d (service account %s): %d token requests, want %d", i, uid, len(api.requests), want)
		}
	}
}

// TestProvidersForgetPod: ForgetPod drops the tokens bound to a pod from
// the node's token cache (shared by the providers), as upstream's
// DeleteServiceAccountToken: the pod's next ask requests a new token,
// another pod's token stays.
func TestProvidersForgetPod(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	yes := true
	api := &fakeAPI{now: clock, sas: map[string]*v1.ServiceAccount{
		"ns/puller": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "puller", UID: "sa-uid-1"}},
	}}
	answer := credentialproviderv1.CredentialProviderResponse{CacheKeyType: "Registry", Auth: map[string]credentialproviderv1.AuthConfig{"reg.example.com": {Username: "u", Password: "p"}}}
	tokens := newTokenCache(clock)
	var list []*Provider
	for _, name := range []string{"a", "b"} {
		p := NewProvider(kubeletconfigv1.CredentialProvider{Name: name, MatchImages: []string{"reg.example.com"}, DefaultCacheDuration: duration(time.Hour),
			TokenAttributes: &kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "aud-" + name, RequireServiceAccount: &yes,
				CacheType: kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType}}, &fakePlugin{resp: answer}, clock, nil)
		p.token.tokens = tokens // as Register shares them
		list = append(list, p)
	}
	ps := NewProviders(list...)
	pod := func(name string) credentials.Pod {
		return credentials.Pod{Namespace: "ns", Name: name, UID: "uid-" + name, ServiceAccountName: "puller", API: api}
	}
	ask := func(name string, wantRequests int) {
		t.Helper()
		if got := ps.LookupTracked(pod(name), "reg.example.com/app"); len(got) == 0 {
			t.Fatalf("%s: no credentials", name)
		}
		if len(api.requests) != wantRequests {
			t.Fatalf("after %s's ask: %d token requests, want %d", name, len(api.requests), wantRequests)
		}
	}
	ask("one", 2) // a token per provider (audience)
	ask("two", 4)
	ask("one", 4) // cached
	ps.ForgetPod("uid-one")
	if len(tokens.m) != 2 {
		t.Fatalf("%d tokens left, want two's 2", len(tokens.m))
	}
	ask("two", 4)
	ask("one", 6) // requested again
	var none *Providers
	none.ForgetPod("uid-one") // no providers: nothing to do
}

// fakeAPI serves service accounts and issues tokens ("token-N"), keeping
// the requests.
type fakeAPI struct {
	mu       sync.Mutex
	sas      map[string]*v1.ServiceAccount
	requests []*authenticationv1.TokenRequest
	now      func() time.Time
}

func (f *fakeAPI) ServiceAccount(namespace, name string) (*v1.ServiceAccount, error) {
	sa, ok := f.sas[namespace+"/"+name]
	if !ok {
		return nil, errors.New("not found")
	}
	return sa, nil
}

func (f *fakeAPI) CreateToken(namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, tr.DeepCopy())
	out := tr.DeepCopy()
	secs := int64(3600)
	out.Spec.ExpirationSeconds = &secs
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(f.requests)), ExpirationTimestamp: metav1.NewTime(f.now().Add(time.Hour))}
	return out, nil
}

// TestProviderTokenMode: upstream's provide in service account token
// mode: the plugin gets a token of the pod's service account (audience,
// bound to the pod, the service account's UID) and its annotations; the
// answer is the service account's and cached for it; a pod without one
// is refused when the provider requires one; a missing required
// annotation skips the plugin; an echoed token is refused unless
// cacheType is Token.
func TestProviderTokenMode(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	yes, no := true, false
	api := &fakeAPI{now: clock, sas: map[string]*v1.ServiceAccount{
		"ns/puller":  {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "puller", UID: "sa-uid-1", Annotations: map[string]string{"example.com/role": "reader", "other": "x"}}},
		"ns/builder": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder", UID: "sa-uid-2", Annotations: map[string]string{"example.com/role": "writer"}}},
		"ns/plain":   {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain", UID: "sa-uid-3"}},
	}}
	mk := func(require *bool, required []string, ct kubeletconfigv1.ServiceAccountTokenCacheType, f *fakePlugin) *Provider {
		return NewProvider(kubeletconfigv1.CredentialProvider{Name: "p", MatchImages: []string{"reg.example.com"}, DefaultCacheDuration: duration(time.Hour),
			TokenAttributes: &kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "registry-aud", RequireServiceAccount: require,
				RequiredServiceAccountAnnotationKeys: required, OptionalServiceAccountAnnotationKeys: []string{"example.com/role"}, CacheType: ct}}, f, clock, nil)
	}
	answer := credentialproviderv1.CredentialProviderResponse{CacheKeyType: "Registry", Auth: map[string]credentialproviderv1.AuthConfig{"reg.example.com": {Username: "u", Password: "p"}}}
	pod := func(name, uid, sa string) credentials.Pod {
		return credentials.Pod{Namespace: "ns", Name: name, UID: uid, ServiceAccountName: sa, API: api}
	}

	f := &fakePlugin{resp: answer}
	p := mk(&yes, nil, kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, f)
	if cfg, sa := p.ProvideFor(pod("static", "u0", ""), "reg.example.com/app"); cfg != nil || sa != nil || len(f.calls) != 0 {
		t.Fatalf("pod without service account, required: %v %v, %d calls", cfg, sa, len(f.calls))
	}
	cfg, sa := p.ProvideFor(pod("web-1", "pod-uid-1", "puller"), "reg.example.com/app")
	if cfg["reg.example.com"].Username != "u" || !reflect.DeepEqual(sa, &credentials.ServiceAccount{UID: "sa-uid-1", Namespace: "ns", Name: "puller"}) {
		t.Fatalf("first ask: %v, %+v", cfg, sa)
	}
	if len(f.calls) != 1 || f.tokens[0] != "token-1" || !reflect.DeepEqual(f.annotations[0], map[string]string{"example.com/role": "reader"}) {
		t.Fatalf("plugin given %v %v %v", f.calls, f.tokens, f.annotations)
	}
	want := &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "sa-uid-1"}, Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{"registry-aud"}, BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "pod-uid-1"}}}
	if !reflect.DeepEqual(api.requests[0], want) {
		t.Fatalf("token request %+v, want %+v", api.requests[0], want)
	}
	// Another pod of the same service account: a token of its own, the
	// cached answer (cacheType ServiceAccount).
	if cfg, sa := p.ProvideFor(pod("web-2", "pod-uid-2", "puller"), "reg.example.com/other"); cfg == nil || sa.Name != "puller" || len(f.calls) != 1 || len(api.requests) != 2 {
		t.Fatalf("same service account: %v %v, %d calls, %d token requests", cfg, sa, len(f.calls), len(api.requests))
	}
	// The same pod again: its cached token.
	p.ProvideFor(pod("web-1", "pod-uid-1", "puller"), "reg.example.com/app")
	if len(api.requests) != 2 {
		t.Fatalf("the pod's token was requested again: %d requests", len(api.requests))
	}
	// Another service account: the plugin again.
	if cfg, sa := p.ProvideFor(pod("build", "pod-uid-3", "builder"), "reg.example.com/app"); cfg == nil || sa.UID != "sa-uid-2" || len(f.calls) != 2 {
		t.Fatalf("other service account: %v %v, %d calls", cfg, sa, len(f.calls))
	}
	// Not required: a pod without one asks without a token, and the
	// answer is the node's.
	f2 := &fakePlugin{resp: answer}
	if cfg, sa := mk(&no, nil, "ServiceAccount", f2).ProvideFor(pod("static", "u0", ""), "reg.example.com/app"); cfg == nil || sa != nil || f2.tokens[0] != "" || f2.annotations[0] != nil {
		t.Fatalf("pod without service account, not required: %v %v %v", cfg, sa, f2.tokens)
	}
	// A missing required annotation: the plugin is not asked.
	f3 := &fakePlugin{resp: answer}
	if cfg, _ := mk(&yes, []string{"example.com/role"}, "ServiceAccount", f3).ProvideFor(pod("p", "u9", "plain"), "reg.example.com/app"); cfg != nil || len(f3.calls) != 0 {
		t.Fatalf("missing required annotation: %v, %d calls", cfg, len(f3.calls))
	}
	// An unknown service account: none.
	if cfg, _ := mk(&yes, nil, "ServiceAccount", &fakePlugin{resp: answer}).ProvideFor(pod("p", "u9", "ghost"), "reg.example.com/app"); cfg != nil {
		t.Fatalf("unknown service account: %v", cfg)
	}
	// The token echoed back as the password: refused with cacheType
	// ServiceAccount, accepted (and cached per token) with Token.
	// (The next token the API issues is token-<n+1>.)
	n := len(api.requests)
	echo := &fakePlugin{resp: answer}
	echo.resp.Auth = map[string]credentialproviderv1.AuthConfig{"reg.example.com": {Username: "sa", Password: fmt.Sprintf("token-%d", n+1)}}
	if cfg, _ := mk(&yes, nil, "ServiceAccount", echo).ProvideFor(pod("e", "ue", "puller"), "reg.example.com/app"); cfg != nil {
		t.Fatalf("echoed token, cacheType ServiceAccount: %v", cfg)
	}
	echo2 := &fakePlugin{resp: answer}
	echo2.resp.Auth = map[string]credentialproviderv1.AuthConfig{"reg.example.com": {Username: "sa", Password: fmt.Sprintf("token-%d", n+2)}}
	tp := mk(&yes, nil, "Token", echo2)
	if cfg, _ := tp.ProvideFor(pod("e2", "ue2", "puller"), "reg.example.com/app"); cfg == nil {
		t.Fatal("echoed token, cacheType Token: refused")
	}
	tp.ProvideFor(pod("e2", "ue2", "puller"), "reg.example.com/app") // same token: cached
	tp.ProvideFor(pod("e3", "ue3", "puller"), "reg.example.com/app") // another token: asked again
	if len(echo2.calls) != 2 {
		t.Fatalf("cacheType Token: %d calls, want 2 (one per token)", len(echo2.calls))
	}
	// Through the keyring: the credentials name the service account.
	got := NewProviders(p).LookupTracked(pod("web-1", "pod-uid-1", "puller"), "reg.example.com/app")
	if len(got) != 1 || got[0].ServiceAccount == nil || got[0].ServiceAccount.UID != "sa-uid-1" || got[0].Source != nil {
		t.Fatalf("tracked %+v", got)
	}
}
