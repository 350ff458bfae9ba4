package apiserver_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// audienceRecorder is an audience-aware token authenticator (as the
// TokenReview webhook) that accepts the token "good" for any audience
// and records the audiences it was asked for.
type audienceRecorder struct {
	mu    sync.Mutex
	asked [][]string
}

func (a *audienceRecorder) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	u, _, ok, err := a.AuthenticateTokenFor(ctx, token, nil)
	return u, ok, err
}

func (a *audienceRecorder) AuthenticateTokenFor(_ context.Context, token string, audiences []string) (*request.User, []string, bool, error) {
	a.mu.Lock()
	a.asked = append(a.asked, slices.Clone(audiences))
	a.mu.Unlock()
	if token != "good" {
		return nil, nil, false, nil
	}
	return &request.User{Name: "webhook-user"}, audiences, true, nil
}

func (a *audienceRecorder) last() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asked) == 0 {
		return nil
	}
	return a.asked[len(a.asked)-1]
}

// TestAPIAudiencesWithoutServiceAccounts: as kube-apiserver, which puts
// its API audiences (--api-audiences, else the service account issuers)
// in every request's context whatever authenticators are configured, a
// request's token and a TokenReview without spec.audiences are
// authenticated for --api-audiences even when no service account keys
// are configured (a token webhook alone).
func TestAPIAudiencesWithoutServiceAccounts(t *testing.T) {
	rec := &audienceRecorder{}
	e := newEnv(t, func(c *apiserver.Config) {
		c.Authorizer = adminOnly{}
		c.TokenAuthenticators = []auth.TokenAuthenticator{rec}
		c.APIAudiences = []string{"api", "other"}
	})
	u, err := whoami(t, e.tokenClient(t, "good", ""))
	if err != nil || u.Username != "webhook-user" {
		t.Fatalf("request with the webhook's token: %+v, %v", u, err)
	}
	if got := rec.last(); !slices.Equal(got, []string{"api", "other"}) {
		t.Errorf("request: webhook asked for audiences %q, want the API audiences [api other]", got)
	}
	r, err := e.cs.AuthenticationV1().TokenReviews().Create(ctx(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Status.Authenticated || !slices.Equal(r.Status.Audiences, []string{"api", "other"}) {
		t.Errorf("TokenReview without audiences: %+v, want authenticated for [api other]", r.Status)
	}
}
