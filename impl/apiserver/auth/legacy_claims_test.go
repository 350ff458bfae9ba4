package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLegacyTokenClaims pins what a legacy token carries, as
// kube-controller-manager's serviceaccount-token controller signs it
// (upstream's LegacyClaims): iss kubernetes/serviceaccount, sub the
// account's user name and the four kubernetes.io/serviceaccount/* claims,
// no exp, nbf, iat, jti or aud; the header names the algorithm and the
// key id.
func TestLegacyTokenClaims(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder", UID: "sa-uid"}}
	token, err := (&ServiceAccountTokens{SigningKey: key}).IssueLegacy(sa, "builder-token-x")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %q", token)
	}
	decode := func(s string) map[string]any {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decode(parts[0]), map[string]any{"alg": "ES256", "kid": kid}; !reflect.DeepEqual(got, want) {
		t.Errorf("header %v, want %v", got, want)
	}
	want := map[string]any{
		"iss":                                    "kubernetes/serviceaccount",
		"sub":                                    "system:serviceaccount:ns:builder",
		"kubernetes.io/serviceaccount/namespace": "ns",
		"kubernetes.io/serviceaccount/secret.name":          "builder-token-x",
		"kubernetes.io/serviceaccount/service-account.name": "builder",
		"kubernetes.io/serviceaccount/service-account.uid":  "sa-uid",
	}
	if got := decode(parts[1]); !reflect.DeepEqual(got, want) {
		t.Errorf("claims %v, want %v", got, want)
	}
}
