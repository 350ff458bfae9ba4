package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// kube-apiserver puts its loopback token authenticator in front of the
// configured chain, and a bearer token it does not know is left to that
// chain: with anonymous access on and no token authenticator configured,
// such a token is no credential and the request is anonymous (it was
// before the loopback token existed). The loopback token is asked first
// of all, before a client certificate.
func TestLoopbackTokenLeavesOtherTokensToTheChain(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.Anonymous = true })
	r := e.doWith(e.anon, http.MethodGet, "/api/v1/namespaces", nil, "Authorization", "Bearer not-a-token")
	if r.code != http.StatusOK {
		t.Fatalf("unknown bearer token, anonymous on, no token authenticator: code %d: %s", r.code, r.body)
	}
	_, token := e.srv.LoopbackClient()
	if u := e.selfSubject(e.client, token).Username; u != apiserver.APIServerUser {
		t.Fatalf("client certificate and loopback token: user %q, want %q", u, apiserver.APIServerUser)
	}
}

// selfSubject is who the server takes a request of client with the bearer
// token to be (a SelfSubjectReview).
func (e *env) selfSubject(client *http.Client, token string) authenticationv1.UserInfo {
	e.t.Helper()
	r := e.doWith(client, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`), "Authorization", "Bearer "+token)
	if r.code != http.StatusCreated {
		e.t.Fatalf("SelfSubjectReview: code %d: %s", r.code, r.body)
	}
	var rev authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(r.body, &rev); err != nil {
		e.t.Fatal(err)
	}
	return rev.Status.UserInfo
}
