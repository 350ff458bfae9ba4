package apiserver_test

import (
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// TestTokenRequestExtendsKubeletDefaultExpiration: as kube-apiserver with
// --service-account-extend-token-expiration (the default), a TokenRequest
// bound to a pod, for the API server's own audiences, asking for exactly
// the kubelet's default of projected tokens (3607 s) gets a token valid
// one year (exp) carrying a kubernetes.io warnafter claim at the requested
// expiry, while the answer's spec.expirationSeconds and
// status.expirationTimestamp stay the requested ones (what the kubelet
// renews by). Other requests are not extended: another expiration, no pod
// binding, another audience, the flag false, or a
// --service-account-max-token-expiration below 3607 s (the request is
// shortened first, so it no longer is 3607 s). A larger max does not cap
// the extension (upstream only logs at start that tokens may live longer).
func TestTokenRequestExtendsKubeletDefaultExpiration(t *testing.T) {
	const year = 365 * 24 * 60 * 60
	for _, tc := range []struct {
		name      string
		noExtend  bool
		max       time.Duration
		secs      int64
		pod       bool
		audiences []string
		// wantExp is exp−iat; wantSecs the answer's expirationSeconds;
		// warn whether a warnafter claim at iat+wantSecs is expected.
		wantExp, wantSecs int64
		warn              bool
	}{
		{name: "kubelet default bound to a pod", secs: 3607, pod: true, wantExp: year, wantSecs: 3607, warn: true},
		{name: "the API server's audience given", secs: 3607, pod: true, audiences: []string{issuer}, wantExp: year, wantSecs: 3607, warn: true},
		{name: "larger max does not cap the extension", max: 2 * time.Hour, secs: 3607, pod: true, wantExp: year, wantSecs: 3607, warn: true},
		{name: "another expiration", secs: 3600, pod: true, wantExp: 3600, wantSecs: 3600},
		{name: "not bound to a pod", secs: 3607, wantExp: 3607, wantSecs: 3607},
		{name: "another audience", secs: 3607, pod: true, audiences: []string{"vault"}, wantExp: 3607, wantSecs: 3607},
		{name: "extension off", noExtend: true, secs: 3607, pod: true, wantExp: 3607, wantSecs: 3607},
		{name: "max below 3607 s", max: time.Hour, secs: 3607, pod: true, wantExp: 3600, wantSecs: 3600},
		// The max counts in whole seconds, as upstream's: 3607.5 s shortens
		// a longer request to 3607 s, which is extended.
		{name: "max shortens to 3607 s", max: 3607500 * time.Millisecond, secs: 4000, pod: true, wantExp: year, wantSecs: 3607, warn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *apiserver.Config) {
				c.Authorizer = adminOnly{}
				c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey,
					MaxTokenExpiration: tc.max, NoExtendTokenExpiration: tc.noExtend}
			})
			c := ctx(t)
			core := e.cs.CoreV1()
			if _, err := core.ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := core.Pods("default").Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			secs := tc.secs
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs, Audiences: tc.audiences}}
			if tc.pod {
				req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}
			}
			before := time.Now().Truncate(time.Second)
			tr, err := core.ServiceAccounts("default").CreateToken(c, "builder", req, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			claims := jwtClaims(t, tr.Status.Token)
			iat, _ := claims["iat"].(float64)
			exp, _ := claims["exp"].(float64)
			if got := int64(exp - iat); got != tc.wantExp {
				t.Errorf("exp−iat %d s, want %d s", got, tc.wantExp)
			}
			k8s, _ := claims["kubernetes.io"].(map[string]any)
			warnAfter, warned := k8s["warnafter"].(float64)
			switch {
			case tc.warn && !warned:
				t.Errorf("no kubernetes.io warnafter claim: %v", k8s)
			case tc.warn && int64(warnAfter-iat) != tc.wantSecs:
				t.Errorf("warnafter−iat %d s, want %d s", int64(warnAfter-iat), tc.wantSecs)
			case !tc.warn && warned:
				t.Errorf("unexpected warnafter claim %v", warnAfter)
			}
			if tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != tc.wantSecs {
				t.Errorf("answer's expirationSeconds %v, want %d", tr.Spec.ExpirationSeconds, tc.wantSecs)
			}
			wantStatus := time.Duration(tc.wantSecs) * time.Second
			if st := tr.Status.ExpirationTimestamp.Time; st.Before(before.Add(wantStatus)) || st.After(after.Add(wantStatus)) {
				t.Errorf("status.expirationTimestamp %v, want %v after the request (%v…%v)", st, wantStatus, before, after)
			}
			if want := slices.Clone(tc.audiences); len(want) > 0 && !slices.Equal(tr.Spec.Audiences, want) {
				t.Errorf("audiences %q, want %q", tr.Spec.Audiences, want)
			}
		})
	}
}

// TestTokenRequestShortenedWarns: a TokenRequest asking for more than
// --service-account-max-token-expiration gets the max and, as
// kube-apiserver's, the warning "requested expiration of <n> seconds
// shortened to <max> seconds"; one within the max gets no warning.
func TestTokenRequestShortenedWarns(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.Authorizer = adminOnly{}
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey, MaxTokenExpiration: time.Hour}
	})
	c := ctx(t)
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secs int64
		want []string
	}{
		{7200, []string{"requested expiration of 7200 seconds shortened to 3600 seconds"}},
		{1800, nil},
	} {
		warned := &warningsSeen{}
		cfg := rest.CopyConfig(e.rest)
		cfg.WarningHandler = warned
		secs := tc.secs
		tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts("default").CreateToken(c, "builder",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := warned.list(); !slices.Equal(got, tc.want) {
			t.Errorf("%d s: warnings %q, want %q", tc.secs, got, tc.want)
		}
		if want := min(tc.secs, 3600); *tr.Spec.ExpirationSeconds != want {
			t.Errorf("%d s: expirationSeconds %d, want %d", tc.secs, *tr.Spec.ExpirationSeconds, want)
		}
	}
}

// TestTokenRequestAuditsIssuedCredentialID: as kube-apiserver (its
// ServiceAccountTokenJTI feature, on by default), a TokenRequest is audited
// with authentication.kubernetes.io/issued-credential-id, "JTI=<jti>" of
// the token it issued: the credential id the token's user carries in its
// extra when it is used.
func TestTokenRequestAuditsIssuedCredentialID(t *testing.T) {
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
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := e.cs.CoreV1().ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jti, _ := jwtClaims(t, tr.Status.Token)["jti"].(string)
	if jti == "" {
		t.Fatal("the token has no jti")
	}
	want := "JTI=" + jti
	var got []string
	eventually(t, "the token request's audit event", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		got = nil
		for _, evs := range b.evs {
			for _, ev := range evs {
				if ev.Stage == audit.StageResponseComplete && ev.ObjectRef != nil && ev.ObjectRef.Subresource == "token" {
					got = append(got, ev.Annotations["authentication.kubernetes.io/issued-credential-id"])
				}
			}
		}
		return len(got) > 0
	})
	if !slices.Equal(got, []string{want}) {
		t.Errorf("issued-credential-id annotations %q, want %q", got, want)
	}
}
