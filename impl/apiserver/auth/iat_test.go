package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestIssuedInTheFuture: as kube-apiserver's service account validator
// (go-jose's claim validation with its one-minute leeway), a token whose
// iat is more than a minute ahead of the server's clock is refused with
// "service account token is issued in the future", even when it has no
// nbf; up to a minute ahead it is accepted. nbf and exp are checked
// first, in go-jose's order.
func TestIssuedInTheFuture(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	objs := newObjects()
	sa := &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid")}
	objs.sas["ns/builder"] = sa
	issuer := "https://kubernetes.default.svc"
	tokens := &ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: key, Objects: objs, Now: func() time.Time { return now }}
	sign := func(iat, nbf, exp time.Time) string {
		t.Helper()
		c := tokenClaims{Issuer: issuer, Subject: ServiceAccountUsername("ns", "builder"), Audience: audience{issuer},
			Expiry: date(exp), IssuedAt: date(iat), ID: "id",
			Kubernetes: &kubernetesClaims{Namespace: "ns", ServiceAccount: objectRef{Name: "builder", UID: "sa-uid"}}}
		if !nbf.IsZero() {
			c.NotBefore = date(nbf)
		}
		tok, err := signJWT(key, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		name    string
		tok     string
		wantErr string
	}{
		{"iat now", sign(now, time.Time{}, now.Add(time.Hour)), ""},
		{"iat a minute ahead", sign(now.Add(time.Minute), time.Time{}, now.Add(time.Hour)), ""},
		{"iat 61 s ahead", sign(now.Add(61*time.Second), time.Time{}, now.Add(time.Hour)), "service account token is issued in the future"},
		{"iat an hour ahead, nbf now", sign(now.Add(time.Hour), now, now.Add(2*time.Hour)), "service account token is issued in the future"},
		{"iat and nbf ahead: nbf first", sign(now.Add(time.Hour), now.Add(time.Hour), now.Add(2*time.Hour)), "service account token is not valid yet"},
		{"iat ahead and expired: exp first", sign(now.Add(time.Hour), time.Time{}, now.Add(-time.Hour)), "service account token has expired"},
	} {
		u, ok, err := tokens.AuthenticateToken(context.Background(), tc.tok)
		switch {
		case tc.wantErr == "" && (err != nil || !ok || u.Name != "system:serviceaccount:ns:builder"):
			t.Errorf("%s: %+v %v %v, want accepted", tc.name, u, ok, err)
		case tc.wantErr != "" && (ok || err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s: %+v %v %v, want refused with %q", tc.name, u, ok, err, tc.wantErr)
		}
	}
}

// TestTokenTimesAsUpstreamValidators: kube-apiserver's token authenticator
// checks a bound token's audiences before its validator checks the time
// claims, so an expired token for another audience is refused for its
// audiences; its legacy validator checks no time claim at all, so a legacy
// token carrying an exp in the past, or an nbf or iat in the future, is
// accepted.
func TestTokenTimesAsUpstreamValidators(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	objs := newObjects()
	objs.sas["ns/builder"] = &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid")}
	issuer := "https://kubernetes.default.svc"
	tokens := &ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: key, Objects: objs, NoLegacyLookup: true,
		Now: func() time.Time { return now }}
	bound, err := signJWT(key, tokenClaims{Issuer: issuer, Subject: ServiceAccountUsername("ns", "builder"), Audience: audience{"vault"},
		Expiry: date(now.Add(-time.Hour)), IssuedAt: date(now.Add(-2 * time.Hour)), ID: "id",
		Kubernetes: &kubernetesClaims{Namespace: "ns", ServiceAccount: objectRef{Name: "builder", UID: "sa-uid"}}})
	if err != nil {
		t.Fatal(err)
	}
	const wantAud = `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc"]`
	if _, ok, err := tokens.AuthenticateToken(context.Background(), bound); ok || err == nil || err.Error() != wantAud {
		t.Errorf("expired bound token for vault: %v %v, want refused with %q", ok, err, wantAud)
	}
	for _, tc := range []struct {
		name          string
		nbf, exp, iat time.Time
	}{
		{"exp an hour ago", time.Time{}, now.Add(-time.Hour), time.Time{}},
		{"nbf in an hour", now.Add(time.Hour), time.Time{}, time.Time{}},
		{"iat in an hour", time.Time{}, time.Time{}, now.Add(time.Hour)},
	} {
		c := tokenClaims{Issuer: LegacyIssuer, Subject: ServiceAccountUsername("ns", "builder"),
			LegacyNamespace: "ns", LegacySecret: "builder-token", LegacyName: "builder", LegacyUID: "sa-uid"}
		if !tc.nbf.IsZero() {
			c.NotBefore = date(tc.nbf)
		}
		if !tc.exp.IsZero() {
			c.Expiry = date(tc.exp)
		}
		if !tc.iat.IsZero() {
			c.IssuedAt = date(tc.iat)
		}
		tok, err := signJWT(key, c)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok, err := tokens.AuthenticateToken(context.Background(), tok); !ok || err != nil || u.Name != "system:serviceaccount:ns:builder" {
			t.Errorf("legacy token, %s: %+v %v %v, want accepted", tc.name, u, ok, err)
		}
	}
}
