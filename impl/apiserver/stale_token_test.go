package apiserver_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// TestStaleBoundTokens: a bound token carrying a warnafter claim (an
// extended token) is still accepted after warnafter, but, as
// kube-apiserver, the request is audited with
// authentication.k8s.io/stale-token ("subject: <user>, seconds after
// warning threshold: <n>") and counted in
// serviceaccount_stale_tokens_total; used before warnafter it counts in
// serviceaccount_valid_tokens_total. A bound token without warnafter
// counts in neither.
func TestStaleBoundTokens(t *testing.T) {
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
	core := e.cs.CoreV1()
	sa, err := core.ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := core.Pods("default").Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := func() (stale, valid string) {
		for _, line := range strings.Split(string(e.do("GET", "/metrics", nil).body), "\n") {
			switch name, value, _ := strings.Cut(line, " "); name {
			case "serviceaccount_stale_tokens_total":
				stale = value
			case "serviceaccount_valid_tokens_total":
				valid = value
			}
		}
		return stale, valid
	}
	want := func(step, stale, valid string) {
		t.Helper()
		if s, v := counts(); s != stale || v != valid {
			t.Errorf("%s: serviceaccount_stale_tokens_total %q, serviceaccount_valid_tokens_total %q, want %s and %s", step, s, v, stale, valid)
		}
	}
	want("before any token", "0", "0")
	body := string(e.do("GET", "/metrics", nil).body)
	for _, help := range []string{
		"# HELP serviceaccount_stale_tokens_total [ALPHA] Cumulative stale projected service account tokens used\n",
		"# HELP serviceaccount_valid_tokens_total [ALPHA] Cumulative valid projected service account tokens used\n",
		"# TYPE serviceaccount_stale_tokens_total counter\n",
	} {
		if !strings.Contains(body, help) {
			t.Errorf("/metrics lacks %q", help)
		}
	}
	staleAnnotations := func() []string {
		b.mu.Lock()
		defer b.mu.Unlock()
		var out []string
		for _, evs := range b.evs {
			for _, ev := range evs {
				if v, ok := ev.Annotations["authentication.k8s.io/stale-token"]; ok && ev.Stage == audit.StageResponseComplete {
					out = append(out, v)
				}
			}
		}
		return out
	}

	// An extended token used at once: valid.
	secs := int64(3607)
	tr, err := core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &secs, BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, e.tokenClient(t, tr.Status.Token, "")); err != nil {
		t.Fatal(err)
	}
	want("an extended token before warnafter", "0", "1")

	// One issued two hours ago: stale, still accepted.
	issued := time.Now().Add(-2 * time.Hour)
	old, _, err := (&auth.ServiceAccountTokens{Issuers: []string{issuer}, SigningKey: saKey, Now: func() time.Time { return issued }}).IssueBound(auth.BoundTokenRequest{
		ServiceAccount: sa, Audiences: []string{issuer}, Pod: pod, Expiration: auth.ExpirationExtension, WarnAfter: auth.WarnOnlyBoundTokenExpiration})
	if err != nil {
		t.Fatal(err)
	}
	u, err := whoami(t, e.tokenClient(t, old, ""))
	if err != nil || u.Username != "system:serviceaccount:default:builder" {
		t.Fatalf("stale token: %+v %v, want accepted", u, err)
	}
	want("an extended token after warnafter", "1", "1")
	var got []string
	eventually(t, "the stale-token audit annotation", func() bool { got = staleAnnotations(); return len(got) > 0 })
	if len(got) != 1 {
		t.Fatalf("stale-token annotations %q, want one (the fresh token's request is not stale)", got)
	}
	rest, ok := strings.CutPrefix(got[0], "subject: system:serviceaccount:default:builder, seconds after warning threshold: ")
	n, err := strconv.Atoi(rest)
	if lo := int(2*time.Hour/time.Second) - 3607; !ok || err != nil || n < lo || n > lo+60 {
		t.Errorf("stale-token annotation %q, want subject and about %d seconds after the threshold", got[0], lo)
	}

	// A bound token without warnafter counts in neither.
	plain, err := core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, e.tokenClient(t, plain.Status.Token, "")); err != nil {
		t.Fatal(err)
	}
	want("a token without warnafter", "1", "1")
}
