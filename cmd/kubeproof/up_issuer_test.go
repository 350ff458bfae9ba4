package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpServiceAccountIssuerWithItsOwnKey: `kubeproof up
// --service-account-issuer` without a key file starts, as it did before
// its flags were validated up front: up signs service account tokens with
// a key of its own, so its issuers have one; the tokens it issues carry
// the issuer given.
func TestUpServiceAccountIssuerWithItsOwnKey(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const issuer = "https://issuer.example"
	cs := runUp(t, ctx, "--nodes", "0", "--no-scheduler", "--no-controller-manager", "--service-account-issuer", issuer)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tr.Status.Token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is no JWT", tr.Status.Token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Issuer != issuer {
		t.Errorf("token issuer %q, want %q", claims.Issuer, issuer)
	}
}
