package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// TestTokenReviewKeepsTheReviewedTokensAnnotations: kube-apiserver's
// TokenReview authenticates the reviewed token in a context of its own
// (a bare request carrying only the audiences), so what authenticating
// that token records (a legacy token's authentication.k8s.io/legacy-token*
// audit annotations, the auto-generated token's warning) lands on neither
// the TokenReview's audit event nor its response, whether the result is
// fetched or served from the token cache. The reviewer's own request is
// not the reviewed token's use.
func TestTokenReviewKeepsTheReviewedTokensAnnotations(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) {
		c.Authorizer = adminOnly{}
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		c.AuditPolicy, c.AuditBackend = policy, b
	})
	c := ctx(t)
	sa, err := e.cs.CoreV1().ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := (&auth.ServiceAccountTokens{SigningKey: saKey}).IssueLegacy(sa, "old-token")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Secrets("default").Create(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "old"}},
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte(legacy)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Listed in the account's .secrets: an auto-generated token, warned of.
	sa.Secrets = []corev1.ObjectReference{{Name: "old-token"}}
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Update(c, sa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": legacy}})
	if err != nil {
		t.Fatal(err)
	}
	for _, round := range []string{"fetched", "cached"} {
		r := e.do(http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", body, "Content-Type", "application/json")
		var rev struct {
			Status struct{ Authenticated bool } `json:"status"`
		}
		if err := json.Unmarshal(r.body, &rev); err != nil || r.code != http.StatusCreated || !rev.Status.Authenticated {
			t.Fatalf("%s: TokenReview %d %s, want the token authenticated", round, r.code, r.body)
		}
		if w := r.header.Values("Warning"); len(w) != 0 {
			t.Errorf("%s: TokenReview response warns %q, want no warning (the reviewed token's)", round, w)
		}
		id := r.header.Get("Audit-Id")
		eventually(t, round+" TokenReview audited", func() bool { return b.stage(id, audit.StageResponseComplete) != nil })
		for k, v := range b.stage(id, audit.StageResponseComplete).Annotations {
			if strings.HasPrefix(k, "authentication.k8s.io/legacy-token") {
				t.Errorf("%s: TokenReview audited with the reviewed token's %s=%s", round, k, v)
			}
		}
	}
}
