package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// usedDates records MarkLegacyTokenUsed calls.
type usedDates []string

func (u *usedDates) MarkLegacyTokenUsed(_ context.Context, s *corev1.Secret, date string) error {
	*u = append(*u, s.Namespace+"/"+s.Name+"@"+date)
	return nil
}

// TestLegacyTokenAsKubeAPIServer: a legacy (secret-based) token is checked
// as kube-apiserver's legacy validator does with --service-account-lookup:
// its texts for a gone or changed secret and a recreated account, the
// invalid-since label refusing it, the warning for a token the account
// lists in .secrets, and the last-used label written at most daily.
func TestLegacyTokenAsKubeAPIServer(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	objs := newObjects()
	var used usedDates
	tokens := &ServiceAccountTokens{SigningKey: key, Objects: objs, Now: func() time.Time { return now }, LegacyTokens: &used}
	sa := &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid")}
	legacy, err := tokens.IssueLegacy(sa, "builder-token")
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: meta("ns", "builder-token", "sec-uid"),
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte(legacy)}}
	reset := func() {
		objs.sas["ns/builder"] = sa.DeepCopy()
		objs.secrets["ns/builder-token"] = secret.DeepCopy()
		used = nil
	}
	for _, tc := range []struct {
		name     string
		change   func()
		wantErr  string
		warn     bool
		wantUsed int
	}{
		{name: "accepted and marked used", wantUsed: 1},
		{name: "already marked today", change: func() {
			objs.secrets["ns/builder-token"].Labels = map[string]string{LegacyTokenLastUsedLabel: "2026-11-26"}
		}},
		{name: "marked tomorrow (another clock)", change: func() {
			objs.secrets["ns/builder-token"].Labels = map[string]string{LegacyTokenLastUsedLabel: "2026-11-27"}
		}},
		{name: "marked yesterday", change: func() {
			objs.secrets["ns/builder-token"].Labels = map[string]string{LegacyTokenLastUsedLabel: "2026-11-25"}
		}, wantUsed: 1},
		{name: "auto-generated: warned", change: func() {
			objs.sas["ns/builder"].Secrets = []corev1.ObjectReference{{Name: "builder-token"}}
		}, warn: true, wantUsed: 1},
		{name: "secret deleted", change: func() { delete(objs.secrets, "ns/builder-token") }, wantErr: "Token has been invalidated"},
		{name: "secret being deleted", change: func() {
			ts := metav1.NewTime(now)
			objs.secrets["ns/builder-token"].DeletionTimestamp = &ts
		}, wantErr: "Token has been invalidated"},
		{name: "secret holds another token", change: func() {
			objs.secrets["ns/builder-token"].Data["token"] = []byte("rotated")
		}, wantErr: "Token does not match server's copy"},
		{name: "account recreated", change: func() {
			objs.sas["ns/builder"] = &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid-2")}
		}, wantErr: "ServiceAccount UID (sa-uid-2) does not match claim (sa-uid)"},
		{name: "account deleted", change: func() { delete(objs.sas, "ns/builder") }, wantErr: "not found"},
		{name: "marked invalid", change: func() {
			objs.secrets["ns/builder-token"].Labels = map[string]string{LegacyTokenInvalidSinceLabel: "2026-01-01"}
		}, wantErr: "the token in secret ns/builder-token for service account ns/builder has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the 'kubernetes.io/legacy-token-invalid-since' label from the secret to temporarily allow use of this token", wantUsed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset()
			if tc.change != nil {
				tc.change()
			}
			ctx, warnings := request.WithWarnings(context.Background())
			u, ok, err := tokens.AuthenticateToken(ctx, legacy)
			if tc.wantErr != "" {
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got ok=%v err=%v, want error %q", ok, err, tc.wantErr)
				}
			} else if !ok || err != nil || u.Name != "system:serviceaccount:ns:builder" || u.UID != "sa-uid" {
				t.Fatalf("got %+v ok=%v err=%v", u, ok, err)
			}
			if got := len(warnings.List()) > 0; got != tc.warn {
				t.Errorf("warnings = %q, want some: %v", warnings.List(), tc.warn)
			}
			if len(used) != tc.wantUsed {
				t.Errorf("marked used %v, want %d times", used, tc.wantUsed)
			}
			if len(used) > 0 && used[0] != "ns/builder-token@2026-11-26" {
				t.Errorf("marked %v, want ns/builder-token@2026-11-26", used)
			}
		})
	}
}

// TestLegacyTokenWithoutLookup: with --service-account-lookup=false a
// legacy token is accepted on its signature and claims alone, its secret
// and account gone, as kube-apiserver's legacy validator without lookup.
func TestLegacyTokenWithoutLookup(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tokens := &ServiceAccountTokens{SigningKey: key, Objects: newObjects(), NoLegacyLookup: true}
	legacy, err := tokens.IssueLegacy(&corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "sa-uid")}, "builder-token")
	if err != nil {
		t.Fatal(err)
	}
	u, ok, err := tokens.AuthenticateToken(context.Background(), legacy)
	if !ok || err != nil || u.Name != "system:serviceaccount:ns:builder" || u.UID != "sa-uid" {
		t.Fatalf("got %+v ok=%v err=%v", u, ok, err)
	}
	tokens.NoLegacyLookup = false
	if _, ok, err := tokens.AuthenticateToken(context.Background(), legacy); ok || err == nil || err.Error() != "Token has been invalidated" {
		t.Fatalf("with lookup: ok=%v err=%v, want Token has been invalidated", ok, err)
	}
}
