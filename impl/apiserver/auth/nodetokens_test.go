package auth_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/pki"
)

// A node's token stands for the user its client certificate stands for.
func TestNodeTokenIsTheNodesCertificateUser(t *testing.T) {
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueClient("system:node:node-7", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/nodes/node-7", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	byCert, ok, err := auth.NewX509(ca.Pool()).Authenticate(r)
	if err != nil || !ok {
		t.Fatalf("certificate: ok %v, err %v", ok, err)
	}

	tokens := auth.NewNodeTokens()
	token, err := tokens.Issue("node-7")
	if err != nil {
		t.Fatal(err)
	}
	r = httptest.NewRequest(http.MethodGet, "/api/v1/nodes/node-7", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	byToken, ok, err := auth.BearerToken{Tokens: []auth.TokenAuthenticator{tokens}}.Authenticate(r)
	if err != nil || !ok {
		t.Fatalf("token: ok %v, err %v", ok, err)
	}
	if !reflect.DeepEqual(byToken, byCert) {
		t.Fatalf("token user %+v, certificate user %+v", byToken, byCert)
	}
	if got := auth.WithAuthenticatedGroup(byToken); !reflect.DeepEqual(got, byToken) {
		t.Fatalf("the request filter would change the token's user to %+v", got)
	}
}

func TestNodeTokens(t *testing.T) {
	tokens := auth.NewNodeTokens()
	issue := func(node string) string {
		t.Helper()
		tok, err := tokens.Issue(node)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a, b, a2 := issue("node-a"), issue("node-b"), issue("node-a")
	if a == b || a == a2 || len(a) < 40 {
		t.Fatalf("tokens not distinct or too short: %q %q %q", a, b, a2)
	}
	node := func(name string) *request.User {
		return &request.User{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
	}
	cases := []struct {
		name   string
		token  string
		want   *request.User
		wantOK bool
	}{
		{"node a", a, node("node-a"), true},
		{"node b", b, node("node-b"), true},
		{"node a's second token", a2, node("node-a"), true},
		{"unknown", otherFirstByte(a), nil, false},
		{"empty", "", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := tokens.AuthenticateToken(context.Background(), tc.token)
			if err != nil || ok != tc.wantOK || !reflect.DeepEqual(u, tc.want) {
				t.Fatalf("got %+v %v %v, want %+v %v", u, ok, err, tc.want, tc.wantOK)
			}
		})
	}
	if _, err := tokens.Issue(""); err == nil {
		t.Fatal("a token for an empty node name was issued")
	}
}

// otherFirstByte is tok with its first byte changed: a token that was
// never issued. (A fixed replacement byte equals a random token's own
// first byte once in a while.)
func otherFirstByte(tok string) string {
	c := byte('x')
	if tok[0] == c {
		c = 'y'
	}
	return string(c) + tok[1:]
}
