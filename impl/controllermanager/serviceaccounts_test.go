package controllermanager

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

func TestTokenRefreshTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		expiry time.Time
		leeway int
		want   time.Time
	}{
		{"one hour, 20% leeway", now.Add(time.Hour), 20, now.Add(48 * time.Minute)},
		{"no leeway", now.Add(time.Hour), 0, now.Add(time.Hour)},
		{"short lifetime counts as ten minutes", now.Add(time.Minute), 20, now.Add(8 * time.Minute)},
		{"expiry in the past (clock skew)", now.Add(-time.Hour), 20, now.Add(8 * time.Minute)},
		{"a day", now.Add(24 * time.Hour), 20, now.Add(24 * time.Hour * 8 / 10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tokenRefreshTime(now, tc.expiry, tc.leeway); !got.Equal(tc.want) {
				t.Fatalf("refresh at %v, want %v", got, tc.want)
			}
		})
	}
}

// authRecorder answers every request, 401 for the tokens in reject, and
// records the Authorization header and user agent it saw.
type authRecorder struct {
	mu     sync.Mutex
	seen   []string
	agents []string
	reject map[string]bool
}

func (a *authRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := req.Header.Get("Authorization")
	a.seen = append(a.seen, strings.TrimPrefix(h, "Bearer "))
	a.agents = append(a.agents, req.UserAgent())
	code := http.StatusOK
	if a.reject[strings.TrimPrefix(h, "Bearer ")] {
		code = http.StatusUnauthorized
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}, Request: req}, nil
}

func (a *authRecorder) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[len(a.seen)-1]
}

func TestServiceAccountTokensAreRefreshed(t *testing.T) {
	kube := fake.NewClientset()
	var mu sync.Mutex
	clockNow := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clockNow }
	setNow := func(t time.Time) { mu.Lock(); clockNow = t; mu.Unlock() }
	issued := 0
	var requested []int64
	kube.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest)
		requested = append(requested, *tr.Spec.ExpirationSeconds)
		issued++
		out := tr.DeepCopy()
		out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("tok-%d", issued),
			ExpirationTimestamp: metav1.NewTime(now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
		return true, out, nil
	})
	b := NewServiceAccountClientBuilder(kube, &rest.Config{Host: "https://example", BearerToken: "root-token"})
	b.Now = now
	ctx := context.Background()
	cfg, err := b.Config(ctx, "replicaset-controller")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" {
		t.Fatal("the controller's config kept the root bearer token")
	}
	if _, err := kube.CoreV1().ServiceAccounts("kube-system").Get(ctx, "replicaset-controller", metav1.GetOptions{}); err != nil {
		t.Fatalf("service account not created: %v", err)
	}
	inner := &authRecorder{reject: map[string]bool{}}
	rt := cfg.WrapTransport(inner)
	do := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://example/api", nil)
		req.Header.Set("User-Agent", cfg.UserAgent)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return inner.last()
	}

	// A fresh token is reused until its refresh time.
	if got := do(); got != "tok-1" {
		t.Fatalf("first request used %q", got)
	}
	if got := do(); got != "tok-1" {
		t.Fatalf("second request used %q, want the cached tok-1", got)
	}
	if !strings.Contains(inner.agents[0], "system:serviceaccount:kube-system:replicaset-controller") {
		t.Fatalf("user agent %q does not name the service account", inner.agents[0])
	}
	// A token whose refresh time has passed is replaced: issue tokens on a
	// clock an hour behind, so each is past its refresh time (48 min).
	setNow(time.Now().Add(-time.Hour))
	inner.reject["tok-1"] = true
	_ = do() // tok-1 is rejected: the cache is reset
	if got := do(); got != "tok-2" {
		t.Fatalf("after a 401, request used %q, want tok-2", got)
	}
	if got := do(); got != "tok-3" {
		t.Fatalf("expired tok-2 was reused (%q), want tok-3", got)
	}
	setNow(time.Now())
	if got := do(); got != "tok-4" {
		t.Fatalf("got %q, want tok-4", got)
	}
	if got := do(); got != "tok-4" {
		t.Fatalf("got %q, want the cached tok-4", got)
	}
	for _, s := range requested {
		if s != DefaultTokenExpirationSeconds {
			t.Fatalf("requested expirationSeconds %d, want %d", s, DefaultTokenExpirationSeconds)
		}
	}

	// A second config for the same account shares the cache.
	cfg2, err := b.Config(ctx, "replicaset-controller")
	if err != nil {
		t.Fatal(err)
	}
	rt = cfg2.WrapTransport(inner)
	if got := do(); got != "tok-4" {
		t.Fatalf("second config used %q, want the shared tok-4", got)
	}
}

func TestUseServiceAccountCredentialsNeedsAClientBuilder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.UseServiceAccountCredentials = true
	cfg.LeaderElect = false
	if err := RunWithClients(context.Background(), fakeClients(t, fake.NewClientset()), cfg); err == nil {
		t.Fatal("RunWithClients without ForController succeeded")
	}
	if err := Run(context.Background(), fake.NewClientset(), nil, cfg); err == nil {
		t.Fatal("Run without a rest.Config succeeded")
	}
}
