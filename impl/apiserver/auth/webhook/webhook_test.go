package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/webhook"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

var alice = &request.User{Name: "alice", UID: "u1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}}

func TestReviewSpecOfResourceRequest(t *testing.T) {
	spec := webhook.ReviewSpec(auth.Attributes{User: alice, Info: &request.Info{IsResourceRequest: true, Verb: "list",
		APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "web",
		FieldSelector: "metadata.name=web,spec.x!=y", LabelSelector: "app in (a,b),!gone,tier,n>3"}})
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "u1", Groups: []string{"dev", "system:authenticated"},
		Extra: map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "list", Group: "apps", Version: "v1",
			Resource: "deployments", Subresource: "scale", Name: "web",
			FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "metadata.name", Operator: metav1.FieldSelectorOpIn, Values: []string{"web"}},
				{Key: "spec.x", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"y"}},
			}},
			// n>3 has no SubjectAccessReview operator: left out.
			LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
				{Key: "gone", Operator: metav1.LabelSelectorOpDoesNotExist},
				{Key: "tier", Operator: metav1.LabelSelectorOpExists},
			}},
		},
	}
	if !reflect.DeepEqual(spec, want) {
		got, _ := json.Marshal(spec)
		exp, _ := json.Marshal(want)
		t.Fatalf("spec:\n got %s\nwant %s", got, exp)
	}
}

func TestReviewSpecOfNonResourceRequestAndBadSelector(t *testing.T) {
	spec := webhook.ReviewSpec(auth.Attributes{User: &request.User{Name: "bob"}, Info: &request.Info{Path: "/healthz", Verb: "get"}})
	want := authorizationv1.SubjectAccessReviewSpec{User: "bob", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}
	if !reflect.DeepEqual(spec, want) {
		t.Fatalf("spec = %+v, want %+v", spec, want)
	}
	spec = webhook.ReviewSpec(auth.Attributes{User: alice, Info: &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods", FieldSelector: "a===b"}})
	if spec.ResourceAttributes.FieldSelector != nil {
		t.Fatalf("a selector that does not parse narrows nothing, got %+v", spec.ResourceAttributes.FieldSelector)
	}
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name   string
		status authorizationv1.SubjectAccessReviewStatus
		want   auth.Decision
		reason string
		err    error
	}{
		{"allowed", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "ok"}, auth.DecisionAllow, "ok", nil},
		{"denied", authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"}, auth.DecisionDeny, "no", nil},
		{"both", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true, Reason: "?"}, auth.DecisionDeny, "?", webhook.ErrAllowedAndDenied},
		{"neither", authorizationv1.SubjectAccessReviewStatus{Reason: "dunno", EvaluationError: "broken rule"}, auth.DecisionNoOpinion, "dunno", nil},
	} {
		d, reason, err := webhook.Decide(c.status)
		if d != c.want || reason != c.reason || !errors.Is(err, c.err) {
			t.Errorf("%s: got (%v, %q, %v), want (%v, %q, %v)", c.name, d, reason, err, c.want, c.reason, c.err)
		}
	}
}

func TestReadTokenReview(t *testing.T) {
	user := authenticationv1.UserInfo{Username: "carol", UID: "7", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}
	for _, c := range []struct {
		name    string
		status  authenticationv1.TokenReviewStatus
		apiAuds []string
		ok      bool
		auds    []string
		err     string
	}{
		{"authenticated, no audiences anywhere", authenticationv1.TokenReviewStatus{Authenticated: true, User: user}, nil, true, nil, ""},
		{"authenticated, answer names none: the API's", authenticationv1.TokenReviewStatus{Authenticated: true, User: user}, []string{"api"}, true, []string{"api"}, ""},
		{"authenticated for another audience", authenticationv1.TokenReviewStatus{Authenticated: true, User: user, Audiences: []string{"other"}}, []string{"api"}, false, nil, ""},
		{"authenticated for one of ours", authenticationv1.TokenReviewStatus{Authenticated: true, User: user, Audiences: []string{"other", "b"}}, []string{"a", "b"}, true, []string{"b"}, ""},
		{"not authenticated", authenticationv1.TokenReviewStatus{}, nil, false, nil, ""},
		{"not authenticated, with an error", authenticationv1.TokenReviewStatus{Error: "token expired"}, nil, false, nil, "token expired"},
	} {
		res := webhook.ReadTokenReview(c.status, c.apiAuds, c.apiAuds)
		errText := ""
		if res.Err != nil {
			errText = res.Err.Error()
		}
		if res.OK != c.ok || !reflect.DeepEqual(res.Audiences, c.auds) || errText != c.err {
			t.Errorf("%s: got ok=%v auds=%v err=%q, want ok=%v auds=%v err=%q", c.name, res.OK, res.Audiences, errText, c.ok, c.auds, c.err)
		}
		if c.ok {
			want := &request.User{Name: "carol", UID: "7", Groups: []string{"g"}, Extra: map[string][]string{"k": {"v"}}}
			if !reflect.DeepEqual(res.User, want) {
				t.Errorf("%s: user %+v, want %+v", c.name, res.User, want)
			}
		}
	}
}

// fakeClock is a settable clock for the caches.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) Now() time.Time       { return time.Unix(0, c.now.Load()) }
func (c *fakeClock) Step(d time.Duration) { c.now.Add(int64(d)) }
func newClock() *fakeClock                { c := &fakeClock{}; c.now.Store(time.Unix(1000, 0).UnixNano()); return c }
func noRetry() wait.Backoff               { return wait.Backoff{Steps: 1} }
func quickRetry() wait.Backoff            { return wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3} }
func client(t *testing.T, url string, b wait.Backoff) *webhook.Client {
	t.Helper()
	c, err := webhook.NewClientForConfig(&rest.Config{Host: url}, b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAuthorizerCachesByTTLAndRetries(t *testing.T) {
	var calls, failures atomic.Int32
	failures.Store(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/authorize" || r.Method != http.MethodPost {
			t.Errorf("called at %s %s", r.Method, r.URL.Path)
		}
		if failures.Add(-1) >= 0 {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		var sar authorizationv1.SubjectAccessReview
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &sar); err != nil || sar.APIVersion != "authorization.k8s.io/v1" || sar.Kind != "SubjectAccessReview" {
			t.Errorf("body %s: %v", body, err)
		}
		sar.Status.Allowed = sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Verb == "get"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sar)
	}))
	defer srv.Close()
	clock := newClock()
	a, err := webhook.NewAuthorizer(webhook.AuthorizerConfig{Client: client(t, srv.URL+"/authorize", quickRetry()),
		AuthorizedTTL: time.Minute, UnauthorizedTTL: 10 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	get := auth.Attributes{User: alice, Info: &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods"}}
	list := auth.Attributes{User: alice, Info: &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods"}}
	ctx := context.Background()
	if d, _, err := a.Authorize(ctx, get); d != auth.DecisionAllow || err != nil {
		t.Fatalf("get after two 500s: %v %v", d, err)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls = %d, want 3 (two retried 500s)", calls.Load())
	}
	if d, _, _ := a.Authorize(ctx, list); d != auth.DecisionNoOpinion {
		t.Fatalf("list: %v", d)
	}
	a.Authorize(ctx, get)
	a.Authorize(ctx, list)
	if calls.Load() != 4 {
		t.Fatalf("calls = %d, want 4 (both answers cached)", calls.Load())
	}
	clock.Step(11 * time.Second) // the unauthorized answer expires, not the authorized one
	a.Authorize(ctx, get)
	a.Authorize(ctx, list)
	if calls.Load() != 5 {
		t.Fatalf("calls = %d, want 5", calls.Load())
	}
}

func TestAuthorizerErrorIsNoOpinionAndNotCached(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "bad", http.StatusBadRequest)
	}))
	defer srv.Close()
	a, err := webhook.NewAuthorizer(webhook.AuthorizerConfig{Client: client(t, srv.URL, quickRetry()), AuthorizedTTL: time.Minute, UnauthorizedTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	attrs := auth.Attributes{User: alice, Info: &request.Info{Path: "/x", Verb: "get"}}
	for range 2 {
		if d, _, err := a.Authorize(context.Background(), attrs); d != auth.DecisionNoOpinion || err == nil {
			t.Fatalf("got %v %v, want no opinion with an error", d, err)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("calls = %d, want 2 (a 400 is not retried, errors are not cached)", calls.Load())
	}
}

func TestTokenAuthenticatorV1beta1CachesAnswersNotErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var tr map[string]any
		_ = json.NewDecoder(r.Body).Decode(&tr)
		if tr["apiVersion"] != "authentication.k8s.io/v1beta1" {
			t.Errorf("apiVersion %v", tr["apiVersion"])
		}
		spec := tr["spec"].(map[string]any)
		status := map[string]any{}
		switch spec["token"] {
		case "good":
			status = map[string]any{"authenticated": true, "user": map[string]any{"username": "dave", "groups": []string{"g"}}}
		case "broken":
			status = map[string]any{"error": "webhook says no"}
		}
		if !reflect.DeepEqual(spec["audiences"], []any{"api"}) {
			t.Errorf("audiences %v", spec["audiences"])
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1beta1", "kind": "TokenReview", "status": status})
	}))
	defer srv.Close()
	clock := newClock()
	ta, err := webhook.NewTokenAuthenticator(webhook.TokenAuthenticatorConfig{Client: client(t, srv.URL, noRetry()), Version: "v1beta1",
		APIAudiences: []string{"api"}, CacheTTL: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if u, ok, err := ta.AuthenticateToken(ctx, "good"); !ok || err != nil || u.Name != "dave" {
			t.Fatalf("good: %v %v %v", u, ok, err)
		}
		if _, ok, err := ta.AuthenticateToken(ctx, "unknown"); ok || err != nil {
			t.Fatalf("unknown: %v %v", ok, err)
		}
		if _, ok, err := ta.AuthenticateToken(ctx, "broken"); ok || err == nil || err.Error() != "webhook says no" {
			t.Fatalf("broken: %v %v", ok, err)
		}
	}
	if calls.Load() != 4 {
		t.Fatalf("calls = %d, want 4 (good and unknown cached, broken asked twice)", calls.Load())
	}
	clock.Step(time.Minute)
	ta.AuthenticateToken(ctx, "good")
	if calls.Load() != 5 {
		t.Fatalf("calls = %d, want 5 after the TTL", calls.Load())
	}
}

func TestUnsupportedVersion(t *testing.T) {
	c := client(t, "http://127.0.0.1:1", noRetry())
	// kube-apiserver's texts: the authorizer lists the versions as a
	// slice, the token authenticator quotes each.
	want := `unsupported webhook authorizer version "v2", supported versions are [v1 v1beta1]`
	if _, err := webhook.NewAuthorizer(webhook.AuthorizerConfig{Client: c, Version: "v2"}); err == nil || err.Error() != want {
		t.Errorf("authorizer version v2: %v, want %s", err, want)
	}
	want = `unsupported authentication webhook version "v2", supported versions are "v1", "v1beta1"`
	if _, err := webhook.NewTokenAuthenticator(webhook.TokenAuthenticatorConfig{Client: c, Version: "v2"}); err == nil || err.Error() != want {
		t.Errorf("token webhook version v2: %v, want %s", err, want)
	}
}

// --authorization-webhook-version=v1beta1 sends a v1beta1
// SubjectAccessReview (its groups under "group") and reads its status.
func TestAuthorizerV1beta1(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar map[string]any
		_ = json.NewDecoder(r.Body).Decode(&sar)
		spec, _ := sar["spec"].(map[string]any)
		if sar["apiVersion"] != "authorization.k8s.io/v1beta1" || !reflect.DeepEqual(spec["group"], []any{"dev", "system:authenticated"}) {
			t.Errorf("review %v", sar)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authorization.k8s.io/v1beta1", "kind": "SubjectAccessReview",
			"status": map[string]any{"allowed": false, "denied": true, "reason": "not on weekends"}})
	}))
	defer srv.Close()
	a, err := webhook.NewAuthorizer(webhook.AuthorizerConfig{Client: client(t, srv.URL, noRetry()), Version: "v1beta1"})
	if err != nil {
		t.Fatal(err)
	}
	d, reason, err := a.Authorize(context.Background(), auth.Attributes{User: alice, Info: &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods"}})
	if d != auth.DecisionDeny || reason != "not on weekends" || err != nil {
		t.Errorf("got %v %q %v, want the webhook's deny", d, reason, err)
	}
}

// A review asking for other audiences than the API's (a TokenReview's
// spec.audiences): an answer naming no audience means the API's, so the
// token is not good for the ones asked; one naming them is. Answers are
// cached per audiences asked for.
func TestTokenAuthenticatorForOtherAudiences(t *testing.T) {
	var asked []any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tr map[string]any
		_ = json.NewDecoder(r.Body).Decode(&tr)
		spec := tr["spec"].(map[string]any)
		asked = append(asked, spec["audiences"])
		status := map[string]any{"authenticated": true, "user": map[string]any{"username": "dave"}}
		if spec["token"] == "vault" {
			status["audiences"] = []string{"vault"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status})
	}))
	defer srv.Close()
	ta, err := webhook.NewTokenAuthenticator(webhook.TokenAuthenticatorConfig{Client: client(t, srv.URL, noRetry()),
		APIAudiences: []string{"api"}, CacheTTL: time.Minute, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := ta.AuthenticateToken(ctx, "plain"); !ok || err != nil {
		t.Fatalf("plain for the API audiences: %v %v", ok, err)
	}
	if _, auds, ok, err := ta.AuthenticateTokenFor(ctx, "plain", []string{"vault"}); ok || err != nil || auds != nil {
		t.Errorf("plain for [vault]: %v %v %v, want not authenticated (no audience named means the API's)", auds, ok, err)
	}
	if u, auds, ok, err := ta.AuthenticateTokenFor(ctx, "vault", []string{"vault", "x"}); !ok || err != nil || u.Name != "dave" || !reflect.DeepEqual(auds, []string{"vault"}) {
		t.Errorf("vault for [vault x]: %v %v %v %v, want dave for [vault]", u, auds, ok, err)
	}
	want := []any{[]any{"api"}, []any{"vault"}, []any{"vault", "x"}}
	if !reflect.DeepEqual(asked, want) {
		t.Errorf("webhook asked for %v, want %v (one review per audiences asked for)", asked, want)
	}
}

// The answer cached for one set of audiences is never served for another
// that runs together with it when joined (["a\x00b"] and ["a", "b"]; [""]
// and none): the webhook accepts the token for exactly the first set
// only, and is asked again for the second, which it refuses.
func TestTokenAuthenticatorCacheKeySeparatesAudiences(t *testing.T) {
	for _, tc := range []struct{ accepted, other []string }{
		{[]string{"a\x00b"}, []string{"a", "b"}},
		{[]string{"a", "b"}, []string{"a\x00b"}},
		{[]string{""}, nil},
		{[]string{"", ""}, []string{"\x00"}},
	} {
		var calls int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			var tr authenticationv1.TokenReview
			_ = json.NewDecoder(r.Body).Decode(&tr)
			status := map[string]any{}
			if reflect.DeepEqual(tr.Spec.Audiences, tc.accepted) {
				status = map[string]any{"authenticated": true, "user": map[string]any{"username": "dave"}, "audiences": tc.accepted}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status})
		}))
		ta, err := webhook.NewTokenAuthenticator(webhook.TokenAuthenticatorConfig{Client: client(t, srv.URL, noRetry()),
			CacheTTL: time.Minute, Now: newClock().Now})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, _, ok, err := ta.AuthenticateTokenFor(ctx, "tok", tc.accepted); !ok || err != nil {
			t.Fatalf("%q: %v %v, want accepted", tc.accepted, ok, err)
		}
		if u, auds, ok, err := ta.AuthenticateTokenFor(ctx, "tok", tc.other); ok || err != nil {
			t.Errorf("%q after %q: %v %q %v %v, want refused (the answer for %q served)", tc.other, tc.accepted, u, auds, ok, err, tc.accepted)
		}
		if calls != 2 {
			t.Errorf("%q after %q: webhook asked %d times, want 2", tc.other, tc.accepted, calls)
		}
		srv.Close()
	}
}
