package apiserver_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/tokencache"
)

// tokenCacheClock is a clock for an API server's token cache
// (Config.TokenCacheNow): the real time, moved on by expire.
type tokenCacheClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *tokenCacheClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// expire moves the clock past the cache's success TTL: every token is
// authenticated again.
func (c *tokenCacheClock) expire() {
	c.mu.Lock()
	c.off += tokencache.DefaultSuccessTTL
	c.mu.Unlock()
}

// TestServiceAccountTokenAuthenticationCached: as kube-apiserver, whose
// bearer token authenticators stand behind a token cache (successes kept
// 10 s), requests repeating a service account token within 10 s are
// authenticated once: serviceaccount_valid_tokens_total and
// serviceaccount_stale_tokens_total count cache misses, not requests, and
// authentication_token_cache_request_total counts the hits. A cached
// acceptance still gives each request the audit annotations the
// authentication made (a stale token's authentication.k8s.io/stale-token).
// TokenReview goes through the cache too, keyed by the audiences asked
// for: a review for other audiences is a new authentication.
func TestServiceAccountTokenAuthenticationCached(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) {
		c.Authorizer = adminOnly{}
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		c.AuditPolicy, c.AuditBackend = policy, b
	})
	c := ctx(t)
	core := e.cs.CoreV1()
	sa, err := core.ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := core.Pods("default").Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	metric := func(name string) string {
		for _, line := range strings.Split(string(e.do("GET", "/metrics", nil).body), "\n") {
			if n, v, _ := strings.Cut(line, " "); n == name {
				return v
			}
		}
		return ""
	}
	want := func(step, name, value string) {
		t.Helper()
		if got := metric(name); got != value {
			t.Errorf("%s: %s %q, want %s", step, name, got, value)
		}
	}

	secs := int64(3607)
	tr, err := core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &secs, BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := e.tokenClient(t, tr.Status.Token, "")
	for range 3 {
		if _, err := whoami(t, client); err != nil {
			t.Fatal(err)
		}
	}
	want("three requests with a valid extended token", "serviceaccount_valid_tokens_total", "1")
	want("three requests with a valid extended token", `authentication_token_cache_request_total{status="miss"}`, "1")
	want("three requests with a valid extended token", `authentication_token_cache_request_total{status="hit"}`, "2")

	// TokenReview for the API audiences shares the requests' entry; for
	// other audiences the token is authenticated again (and refused: it
	// is not for them).
	review := func(auds ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := e.cs.AuthenticationV1().TokenReviews().Create(c, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	for range 2 {
		if st := review(); !st.Authenticated || st.User.Username != "system:serviceaccount:default:builder" {
			t.Fatalf("TokenReview: %+v, want the service account", st)
		}
	}
	want("two TokenReviews for the API audiences", "serviceaccount_valid_tokens_total", "1")
	if st := review("vault"); st.Authenticated || st.Error == "" {
		t.Fatalf("TokenReview for vault: %+v, want refused", st)
	}
	if st := review("vault", issuer); !st.Authenticated || len(st.Audiences) != 1 || st.Audiences[0] != issuer {
		t.Fatalf("TokenReview for vault and %s: %+v, want accepted for %s", issuer, st, issuer)
	}
	want("TokenReviews for other audiences", "serviceaccount_valid_tokens_total", "2")

	// A stale token: counted once, annotated on every request.
	issued := time.Now().Add(-2 * time.Hour)
	old, _, err := (&auth.ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: saKey, Now: func() time.Time { return issued }}).IssueBound(auth.BoundTokenRequest{
		ServiceAccount: sa, Audiences: []string{issuer}, Pod: pod, Expiration: auth.ExpirationExtension, WarnAfter: auth.WarnOnlyBoundTokenExpiration})
	if err != nil {
		t.Fatal(err)
	}
	stale := e.tokenClient(t, old, "")
	for range 2 {
		if _, err := whoami(t, stale); err != nil {
			t.Fatal(err)
		}
	}
	want("two requests with a stale token", "serviceaccount_stale_tokens_total", "1")
	staleAnnotations := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		n := 0
		for _, evs := range b.evs {
			for _, ev := range evs {
				if _, ok := ev.Annotations["authentication.k8s.io/stale-token"]; ok && ev.Stage == audit.StageResponseComplete {
					n++
				}
			}
		}
		return n
	}
	eventually(t, "both stale-token requests annotated", func() bool { return staleAnnotations() == 2 })
}
