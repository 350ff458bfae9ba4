package serviceaccount

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func tokenSecret(name, saName, saUID string, data map[string][]byte) *corev1.Secret {
	ann := map[string]string{corev1.ServiceAccountNameKey: saName}
	if saUID != "" {
		ann[corev1.ServiceAccountUIDKey] = saUID
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", UID: "secret-uid", Annotations: ann},
		Type:       corev1.SecretTypeServiceAccountToken, Data: data,
	}
}

var builder = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "team", UID: "sa-1"}}

func TestDecideTokenSecret(t *testing.T) {
	ca := []byte("CA")
	full := map[string][]byte{"token": []byte("jwt"), "namespace": []byte("team"), "ca.crt": ca}
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		sa     *corev1.ServiceAccount
		rootCA []byte
		want   TokenSecretDecision
	}{
		{"new secret gets everything", tokenSecret("t", "builder", "", nil), builder, ca,
			TokenSecretDecision{Action: TokenSecretFill, SetCA: true, SetNamespace: true, SetToken: true}},
		{"no root CA: ca.crt left alone", tokenSecret("t", "builder", "", nil), builder, nil,
			TokenSecretDecision{Action: TokenSecretFill, SetNamespace: true, SetToken: true}},
		{"filled secret is kept", tokenSecret("t", "builder", "sa-1", full), builder, ca, TokenSecretDecision{}},
		{"changed root CA is rewritten", tokenSecret("t", "builder", "sa-1", full), builder, []byte("CA2"),
			TokenSecretDecision{Action: TokenSecretFill, SetCA: true}},
		{"a token someone wrote is kept", tokenSecret("t", "builder", "", map[string][]byte{"token": []byte("mine")}), builder, nil,
			TokenSecretDecision{Action: TokenSecretFill, SetNamespace: true}},
		{"no such account: deleted", tokenSecret("t", "builder", "", nil), nil, ca, TokenSecretDecision{Action: TokenSecretDelete}},
		{"not a token secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "team"}, Type: corev1.SecretTypeOpaque}, nil, ca, TokenSecretDecision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecideTokenSecret(tc.secret, tc.sa, tc.rootCA); got != tc.want {
				t.Errorf("DecideTokenSecret = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFillTokenSecretSetsDataAndAnnotations(t *testing.T) {
	s := tokenSecret("t", "builder", "", map[string][]byte{"extra": []byte("x")})
	d := DecideTokenSecret(s, builder, []byte("CA"))
	got := FillTokenSecret(s, builder, d, []byte("CA"), "signed")
	want := map[string]string{"token": "signed", "namespace": "team", "ca.crt": "CA", "extra": "x"}
	if len(got.Data) != len(want) {
		t.Fatalf("data keys = %d, want %d: %v", len(got.Data), len(want), got.Data)
	}
	for k, v := range want {
		if string(got.Data[k]) != v {
			t.Errorf("data[%s] = %q, want %q", k, got.Data[k], v)
		}
	}
	if got.Annotations[corev1.ServiceAccountUIDKey] != "sa-1" || got.Annotations[corev1.ServiceAccountNameKey] != "builder" {
		t.Errorf("annotations = %v", got.Annotations)
	}
	if s.Data["token"] != nil || s.Annotations[corev1.ServiceAccountUIDKey] != "" {
		t.Error("FillTokenSecret changed its input")
	}
}

func TestTokenSecretsOfDeletedAccount(t *testing.T) {
	mine := tokenSecret("mine", "builder", "sa-1", nil)
	unfilled := tokenSecret("unfilled", "builder", "", nil)
	recreated := tokenSecret("other-uid", "builder", "sa-2", nil)
	otherSA := tokenSecret("other-sa", "deployer", "sa-1", nil)
	opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: "team",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder"}}, Type: corev1.SecretTypeOpaque}
	got := TokenSecretsOfDeletedAccount("team", "builder", "sa-1", []*corev1.Secret{mine, unfilled, recreated, otherSA, opaque})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if len(names) != 2 || names[0] != "mine" || names[1] != "unfilled" {
		t.Errorf("deleted = %v, want [mine unfilled]", names)
	}
}

func TestWithoutSecretReference(t *testing.T) {
	sa := builder.DeepCopy()
	sa.Secrets = []corev1.ObjectReference{{Name: "a"}, {Name: "t"}}
	got := WithoutSecretReference(sa, "t")
	if got == nil || len(got.Secrets) != 1 || got.Secrets[0].Name != "a" {
		t.Fatalf("WithoutSecretReference = %+v", got)
	}
	if WithoutSecretReference(got, "t") != nil {
		t.Error("an unreferenced secret should need no write")
	}
}

// TestTokenQueueKeys: a secret's queue key survives any uid annotation
// (it is the writer's text), so every token secret is synced.
func TestTokenQueueKeys(t *testing.T) {
	key := joinKey("team", "t", "secret-uid", "builder", "a/b%c")
	got, ok := splitKey(key, 5)
	if !ok || got[3] != "builder" || got[4] != "a/b%c" {
		t.Fatalf("splitKey(%q) = %q, %v", key, got, ok)
	}
	if _, ok := splitKey(key, 3); ok {
		t.Error("a key of another arity should not parse")
	}
}
