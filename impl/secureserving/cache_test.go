package secureserving

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingTokens accepts "good" as alice, refuses "bad", reports an error
// for "error" and fails to answer for "down", counting the reviews of
// each token.
type countingTokens struct {
	mu    sync.Mutex
	asked map[string]int
}

func (c *countingTokens) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[r.Spec.Token]++
	switch r.Spec.Token {
	case "good":
		r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
	case "error":
		r.Status.Error = "token issuer unreachable"
	case "down":
		return nil, errors.New("connection refused")
	}
	return r, nil
}

func (c *countingTokens) count(token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[token]
}

// countingAccess allows alice, denies everyone else, and fails while
// broken; it counts the reviews per user.
type countingAccess struct {
	mu     sync.Mutex
	broken bool
	asked  map[string]int
}

func (c *countingAccess) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[r.Spec.User]++
	if c.broken {
		return nil, errors.New("connection refused")
	}
	r.Status.Allowed = r.Spec.User == "alice"
	return r, nil
}

func (c *countingAccess) count(user string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[user]
}

// TestTokenReviewsCached: as the delegating authenticator's token cache
// (--authentication-token-webhook-cache-ttl, 10s), a token's review is
// reused for the TTL whether it authenticated or was refused, and asked
// again after it; a review that failed, or reported an error, is not
// reused.
func TestTokenReviewsCached(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	tokens := &countingTokens{asked: map[string]int{}}
	o := NewOptions(10259, "kube-scheduler")
	if o.TokenCacheTTL != 10*time.Second {
		t.Errorf("default token cache TTL %v, want 10s", o.TokenCacheTTL)
	}
	base := start(t, o, func(s *Server) {
		s.authn.tokens = tokens
		s.authn.tokenCache = cache.NewLRUExpireCacheWithClock(tokenCacheSize, clock)
	})
	client := insecureClient()
	for range 3 {
		if r := get(t, client, base+"/healthz", "good"); r.code != 200 {
			t.Fatalf("/healthz as alice: %d %s", r.code, r.body)
		}
		for _, token := range []string{"bad", "error", "down"} {
			if r := get(t, client, base+"/healthz", token); r.code != 401 {
				t.Fatalf("/healthz with token %s: %d %s, want 401", token, r.code, r.body)
			}
		}
	}
	for token, want := range map[string]int{"good": 1, "bad": 1, "error": 3, "down": 3} {
		if got := tokens.count(token); got != want {
			t.Errorf("token %s reviewed %d times, want %d", token, got, want)
		}
	}
	clock.Step(9 * time.Second)
	get(t, client, base+"/healthz", "good")
	if got := tokens.count("good"); got != 1 {
		t.Errorf("after 9s: good reviewed %d times, want 1 (cached)", got)
	}
	clock.Step(2 * time.Second)
	get(t, client, base+"/healthz", "good")
	get(t, client, base+"/healthz", "bad")
	if got, gotBad := tokens.count("good"), tokens.count("bad"); got != 2 || gotBad != 2 {
		t.Errorf("after 11s: good reviewed %d times, bad %d, want 2 each (expired)", got, gotBad)
	}
}

// TestAccessReviewsCached: as the webhook authorizer behind
// --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl (10s
// each), an allowed and a denied answer are reused for their TTL for the
// same user and path; a review that failed is not.
func TestAccessReviewsCached(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	tokens := fakeTokens{}
	access := &countingAccess{asked: map[string]int{}}
	o := NewOptions(10257, "kube-controller-manager")
	o.AuthorizedTTL, o.UnauthorizedTTL = 10*time.Second, 5*time.Second
	base := start(t, o, func(s *Server) {
		s.authn.tokens = tokens
		s.authz.reviews = access
		s.authz.cache = cache.NewLRUExpireCacheWithClock(accessCacheSize, clock)
	})
	client := insecureClient()
	for range 3 {
		if r := get(t, client, base+"/metrics", "good"); r.code != 200 {
			t.Fatalf("/metrics as alice: %d %s", r.code, r.body)
		}
		if r := get(t, client, base+"/metrics", "bob"); r.code != 403 {
			t.Fatalf("/metrics as bob: %d %s", r.code, r.body)
		}
	}
	if a, b := access.count("alice"), access.count("bob"); a != 1 || b != 1 {
		t.Errorf("reviews: alice %d, bob %d, want 1 each", a, b)
	}
	get(t, client, base+"/metrics/other", "good")
	if a := access.count("alice"); a != 2 {
		t.Errorf("another path: alice reviewed %d times, want 2", a)
	}
	clock.Step(6 * time.Second)
	get(t, client, base+"/metrics", "good")
	get(t, client, base+"/metrics", "bob")
	if a, b := access.count("alice"), access.count("bob"); a != 2 || b != 2 {
		t.Errorf("after 6s: alice %d, bob %d, want 2 (allowed cached 10s) and 2 (denied 5s)", a, b)
	}
	clock.Step(5 * time.Second)
	access.mu.Lock()
	access.broken = true
	access.mu.Unlock()
	for range 2 {
		if r := get(t, client, base+"/metrics", "good"); r.code != 500 {
			t.Errorf("/metrics as alice, review failing: %d %s", r.code, r.body)
		}
	}
	if a := access.count("alice"); a != 4 {
		t.Errorf("failed reviews: alice reviewed %d times, want 4 (failures not cached)", a)
	}
}

// manyGroupsTokens accepts every token as alice with 17 groups: a clone
// of 17 strings has room for an 18th, so appending system:authenticated
// to a cached answer in place would write an array other requests share.
type manyGroupsTokens struct{}

func (manyGroupsTokens) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	groups := make([]string, 17)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%d", i)
	}
	r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: groups}}
	return r, nil
}

// TestCachedTokenAnswerNotShared: each request's user is its own, even
// when its token's answer comes from the cache: changing one request's
// groups does not change another's (before: both appended
// system:authenticated into the cached answer's spare capacity, the same
// array, a data race under -race with concurrent requests).
func TestCachedTokenAnswerNotShared(t *testing.T) {
	a := &authenticator{tokens: manyGroupsTokens{}, tokenCache: cache.NewLRUExpireCache(tokenCacheSize), tokenTTL: time.Minute}
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer t")
		return r
	}
	first, err := a.authenticate(req())
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.authenticate(req())
	if err != nil {
		t.Fatal(err)
	}
	if len(first.groups) != 18 || first.groups[17] != "system:authenticated" {
		t.Fatalf("groups %v", first.groups)
	}
	first.groups[17] = "changed"
	if second.groups[17] != "system:authenticated" {
		t.Errorf("second request's groups changed with the first's: %v", second.groups)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := a.authenticate(req()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestAccessReviewCacheKey: a cached SubjectAccessReview answer is reused
// only for the same user name, UID, groups, extra, verb and path (the
// webhook authorizer keys its cache by the whole review spec): an answer
// for one of them never decides for a request differing in any other.
func TestAccessReviewCacheKey(t *testing.T) {
	access := &recordingAccess{}
	a := &authorizer{reviews: access, cache: cache.NewLRUExpireCache(accessCacheSize), authorizedTTL: time.Minute, unauthorizedTTL: time.Minute}
	alice := user{name: "alice", uid: "1", groups: []string{"devs"}, extra: map[string]authorizationv1.ExtraValue{"scopes": {"read"}}}
	variants := []struct {
		what       string
		u          user
		verb, path string
	}{
		{"first", alice, "get", "/metrics"},
		{"name", user{name: "mallory", uid: "1", groups: alice.groups, extra: alice.extra}, "get", "/metrics"},
		{"uid", user{name: "alice", uid: "2", groups: alice.groups, extra: alice.extra}, "get", "/metrics"},
		{"groups", user{name: "alice", uid: "1", groups: []string{"ops"}, extra: alice.extra}, "get", "/metrics"},
		{"no groups", user{name: "alice", uid: "1", extra: alice.extra}, "get", "/metrics"},
		{"extra value", user{name: "alice", uid: "1", groups: alice.groups, extra: map[string]authorizationv1.ExtraValue{"scopes": {"write"}}}, "get", "/metrics"},
		{"extra key", user{name: "alice", uid: "1", groups: alice.groups, extra: map[string]authorizationv1.ExtraValue{"other": {"read"}}}, "get", "/metrics"},
		{"verb", alice, "post", "/metrics"},
		{"path", alice, "get", "/metrics/x"},
	}
	for i, v := range variants {
		if _, _, err := a.authorize(context.Background(), v.u, v.verb, v.path); err != nil {
			t.Fatal(err)
		}
		if len(access.asked) != i+1 {
			t.Fatalf("%s: %d reviews after %d distinct requests: answered from another's cache entry", v.what, len(access.asked), i+1)
		}
	}
	for _, v := range variants {
		if _, _, err := a.authorize(context.Background(), v.u, v.verb, v.path); err != nil {
			t.Fatal(err)
		}
	}
	if len(access.asked) != len(variants) {
		t.Errorf("repeated requests reviewed again: %d reviews, want %d", len(access.asked), len(variants))
	}
}
