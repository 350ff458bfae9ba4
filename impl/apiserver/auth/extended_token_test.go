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

// TestExtendedTokenValidUntilExp: an extended bound token (a warnafter
// claim at the requested 3607 s, exp one year) is accepted before and
// after its warnafter until its exp, and, as kube-apiserver's (its JWT
// claims are checked with go-jose's default leeway of one minute for
// clock skew), up to a minute past exp and from a minute before nbf;
// beyond, it is refused as expired or not yet valid. warnafter only marks
// it stale, it never shortens its life.
func TestExtendedTokenValidUntilExp(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issued := time.Unix(1_800_000_000, 0)
	now := issued
	objs := newObjects()
	sa := &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid")}
	pod := &corev1.Pod{ObjectMeta: meta("ns", "web", "pod-uid"), Spec: corev1.PodSpec{ServiceAccountName: "builder"}}
	objs.sas["ns/builder"], objs.pods["ns/web"] = sa, pod
	issuer := "https://kubernetes.default.svc"
	tokens := &ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: key, Objects: objs, Now: func() time.Time { return now }}
	tok, _, err := tokens.IssueBound(BoundTokenRequest{ServiceAccount: sa, Audiences: []string{issuer}, Pod: pod,
		Expiration: ExpirationExtension, WarnAfter: WarnOnlyBoundTokenExpiration})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		after time.Duration
		ok    bool
	}{
		{"at issue", 0, true},
		{"one second before warnafter", WarnOnlyBoundTokenExpiration - time.Second, true},
		{"one second after warnafter", WarnOnlyBoundTokenExpiration + time.Second, true},
		{"one second before exp", ExpirationExtension - time.Second, true},
		{"at exp", ExpirationExtension, true},
		{"a minute after exp", ExpirationExtension + time.Minute, true},
		{"61 s after exp", ExpirationExtension + 61*time.Second, false},
		{"a minute before nbf", -time.Minute, true},
		{"61 s before nbf", -61 * time.Second, false},
	} {
		now = issued.Add(tc.after)
		u, ok, err := tokens.AuthenticateToken(context.Background(), tok)
		switch {
		case tc.ok && (err != nil || !ok || u.Name != "system:serviceaccount:ns:builder"):
			t.Errorf("%s: %+v %v %v, want accepted as the service account", tc.name, u, ok, err)
		case !tc.ok && tc.after > 0 && (err == nil || err.Error() != "service account token has expired"):
			t.Errorf("%s: %+v %v %v, want refused as expired", tc.name, u, ok, err)
		case !tc.ok && tc.after < 0 && (err == nil || err.Error() != "service account token is not valid yet"):
			t.Errorf("%s: %+v %v %v, want refused as not yet valid", tc.name, u, ok, err)
		}
	}
}
