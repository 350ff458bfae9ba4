package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

// adminOnly allows system:masters everything, anyone "get pods", and
// alice to impersonate bob.
type adminOnly struct{}

func (adminOnly) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.User == nil {
		return auth.DecisionNoOpinion, "", nil
	}
	if slices.Contains(a.User.Groups, "system:masters") {
		return auth.DecisionAllow, "", nil
	}
	i := a.Info
	switch {
	case i.IsResourceRequest && i.Verb == "get" && i.Resource == "pods":
		return auth.DecisionAllow, "", nil
	case a.User.Name == "alice" && i.Verb == "impersonate" && i.Resource == "users" && i.Name == "bob":
		return auth.DecisionAllow, "", nil
	case i.Resource == "selfsubjectreviews" || i.Resource == "selfsubjectaccessreviews":
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "no rule", nil
}

// saKey signs the service account tokens of every auth test server.
var saKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

func newAuthEnv(t *testing.T) *env {
	t.Helper()
	e, _ := newAuthEnvWithClock(t)
	return e
}

// newAuthEnvWithClock is newAuthEnv with the clock of its token cache.
func newAuthEnvWithClock(t *testing.T) (*env, *tokenCacheClock) {
	t.Helper()
	clock := &tokenCacheClock{}
	key := saKey
	tokens, err := auth.ParseTokenFile(strings.NewReader("alice-token,alice,1001,\"devs\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(c *apiserver.Config) {
		c.Authorizer = adminOnly{}
		c.TokenAuthenticators = []auth.TokenAuthenticator{tokens}
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: key}
		c.BootstrapTokenAuth = true
		c.TokenCacheNow = clock.Now
	}), clock
}

// tokenClient is a clientset authenticating with a bearer token only.
func (e *env) tokenClient(t *testing.T, token string, impersonate string) *kubernetes.Clientset {
	t.Helper()
	cfg := &rest.Config{Host: e.url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM}}
	cfg.Impersonate.UserName = impersonate
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func whoami(t *testing.T, cs *kubernetes.Clientset) (authenticationv1.UserInfo, error) {
	t.Helper()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

func TestAuthenticationUnion(t *testing.T) {
	e := newAuthEnv(t)
	u, err := whoami(t, e.cs)
	if err != nil || u.Username != "admin" || !slices.Contains(u.Groups, "system:masters") || !slices.Contains(u.Groups, "system:authenticated") {
		t.Fatalf("admin whoami: %+v %v", u, err)
	}
	u, err = whoami(t, e.tokenClient(t, "alice-token", ""))
	if err != nil || u.Username != "alice" || u.UID != "1001" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) {
		t.Fatalf("token file whoami: %+v %v", u, err)
	}
	if _, err = whoami(t, e.tokenClient(t, "wrong-token", "")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("bad token: %v, want 401", err)
	}
	// Impersonation: alice may act as bob, not as carol.
	u, err = whoami(t, e.tokenClient(t, "alice-token", "bob"))
	if err != nil || u.Username != "bob" || !slices.Equal(u.Groups, []string{"system:authenticated"}) {
		t.Fatalf("impersonated whoami: %+v %v", u, err)
	}
	_, err = whoami(t, e.tokenClient(t, "alice-token", "carol"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`) {
		t.Fatalf("impersonating carol: %v", err)
	}
	// Bootstrap token.
	c := ctx(t)
	_, err = e.cs.CoreV1().Secrets("kube-system").Create(c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Type: auth.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, err = whoami(t, e.tokenClient(t, "abcdef.0123456789abcdef", ""))
	if err != nil || u.Username != "system:bootstrap:abcdef" || !slices.Equal(u.Groups, []string{"system:bootstrappers", "system:authenticated"}) {
		t.Fatalf("bootstrap whoami: %+v %v", u, err)
	}
	// Unauthenticated: 401 Status.
	r := e.doWith(e.anon, http.MethodGet, "/api/v1/pods", nil)
	expectStatus(t, r, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	r = e.doWith(e.anon, http.MethodGet, "/api/v1/pods", nil, "Authorization", "Bearer nope")
	expectStatus(t, r, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
}

func TestTokenRequestAndBoundTokens(t *testing.T) {
	e, clock := newAuthEnvWithClock(t)
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
	exp := int64(1200)
	tr, err := core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status.Token == "" || !slices.Equal(tr.Spec.Audiences, []string{issuer}) || tr.Spec.BoundObjectRef.UID != pod.UID {
		t.Fatalf("token request answer: %+v", tr)
	}
	if d := tr.Status.ExpirationTimestamp.Sub(tr.CreationTimestamp.Time).Seconds(); d < 1190 || d > 1210 {
		t.Fatalf("expiry %v after creation, want 1200 s", d)
	}
	u, err := whoami(t, e.tokenClient(t, tr.Status.Token, ""))
	if err != nil {
		t.Fatal(err)
	}
	if u.Username != "system:serviceaccount:default:builder" || u.UID != string(sa.UID) ||
		!slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}) ||
		!slices.Equal(u.Extra[auth.ExtraPodName], []string{"web"}) || !slices.Equal(u.Extra[auth.ExtraPodUID], []string{string(pod.UID)}) {
		t.Fatalf("bound token user %+v", u)
	}
	// TokenReview agrees, and rejects other audiences.
	rev, err := e.cs.AuthenticationV1().TokenReviews().Create(c, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	if err != nil || !rev.Status.Authenticated || rev.Status.User.Username != u.Username || !slices.Equal(rev.Status.Audiences, []string{issuer}) {
		t.Fatalf("token review: %+v %v", rev, err)
	}
	rev, err = e.cs.AuthenticationV1().TokenReviews().Create(c, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil || rev.Status.Authenticated || !strings.Contains(rev.Status.Error, "audiences") {
		t.Fatalf("token review for another audience: %+v %v", rev.Status, err)
	}
	// Validation and binding errors.
	short := int64(60)
	_, err = core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not specify a duration less than 10 minutes") {
		t.Fatalf("short expiry: %v", err)
	}
	_, err = core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "other"}}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "does not match the UID in record") {
		t.Fatalf("uid mismatch: %v", err)
	}
	_, err = core.ServiceAccounts("default").CreateToken(c, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("missing service account: %v", err)
	}
	// Deleting the pod invalidates the token.
	zero := int64(0)
	if err := core.Pods("default").Delete(c, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Pods("default").Get(c, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod still there: %v", err)
	}
	// Once the token cache's entry has expired (kube-apiserver keeps an
	// acceptance 10 s).
	clock.expire()
	if _, err := whoami(t, e.tokenClient(t, tr.Status.Token, "")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("token of a deleted pod: %v, want 401", err)
	}
}

// A token bound to a pod names the pod's node, read as kube-apiserver reads
// it (the watch cache, else etcd; a node that was just created is found
// either way); a pod on a node that does not exist gets a token naming the
// node only. With and without the watch cache (whose node is read without
// a copy).
func TestTokenRequestNamesThePodsNode(t *testing.T) {
	t.Run("etcd", func(t *testing.T) { tokenRequestNamesThePodsNode(t, newAuthEnv(t)) })
	t.Run("watch cache", func(t *testing.T) {
		factory := storagebackend.NewFactory(storagebackend.Config{
			Client:     etcdServer.Client(),
			Prefix:     fmt.Sprintf("/tokennode%d", time.Now().UnixNano()),
			WatchCache: true,
		})
		t.Cleanup(factory.Close)
		tokens, err := auth.ParseTokenFile(strings.NewReader("alice-token,alice,1001,\"devs\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		tokenRequestNamesThePodsNode(t, newEnv(t, func(c *apiserver.Config) {
			c.StorageFactory = factory
			c.Authorizer = adminOnly{}
			c.TokenAuthenticators = []auth.TokenAuthenticator{tokens}
			c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		}))
	})
}

func tokenRequestNamesThePodsNode(t *testing.T, e *env) {
	c := ctx(t)
	core := e.cs.CoreV1()
	if _, err := core.ServiceAccounts("default").Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := core.Nodes().Create(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ pod, node, nodeUID string }{
		{"on-n1", "n1", string(node.UID)},
		{"on-gone", "gone", ""},
	} {
		if _, err := core.Pods("default").Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.pod},
			Spec: corev1.PodSpec{ServiceAccountName: "builder", NodeName: tc.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := core.ServiceAccounts("default").CreateToken(c, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: tc.pod},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", tc.pod, err)
		}
		claims := jwtClaims(t, tr.Status.Token)
		k8s, _ := claims["kubernetes.io"].(map[string]any)
		n, _ := k8s["node"].(map[string]any)
		if n["name"] != tc.node || (tc.nodeUID != "" && n["uid"] != tc.nodeUID) || (tc.nodeUID == "" && n["uid"] != nil) {
			t.Fatalf("token for %s names node %v, want name %q uid %q", tc.pod, n, tc.node, tc.nodeUID)
		}
	}
}

// jwtClaims decodes the claims of a signed JWT without checking it.
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWS", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func TestAccessReviews(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	alice := e.tokenClient(t, "alice-token", "")
	for _, tc := range []struct {
		attrs *authorizationv1.ResourceAttributes
		want  bool
	}{
		{&authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "default"}, true},
		{&authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, false},
	} {
		r, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: tc.attrs}}, metav1.CreateOptions{})
		if err != nil || r.Status.Allowed != tc.want {
			t.Fatalf("SSAR %+v: %+v %v", tc.attrs, r, err)
		}
	}
	// SubjectAccessReview needs its own permission; admin has it.
	_, err := alice.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice SAR: %v, want 403", err)
	}
	r, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}}}, metav1.CreateOptions{})
	if err != nil || r.Status.Allowed || r.Status.Reason != "no rule" {
		t.Fatalf("SAR bob list secrets: %+v %v", r, err)
	}
	r, err = e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "root", Groups: []string{"system:masters"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}}}, metav1.CreateOptions{})
	if err != nil || !r.Status.Allowed {
		t.Fatalf("SAR system:masters /metrics: %+v %v", r, err)
	}
	_, err = e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at least one of user or group must be specified") {
		t.Fatalf("SAR without user: %v", err)
	}
	l, err := e.cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(c, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "default"}}}, metav1.CreateOptions{})
	if err != nil || !l.Status.Allowed {
		t.Fatalf("LSAR: %+v %v", l, err)
	}
	_, err = e.cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(c, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "other"}}}, metav1.CreateOptions{})
	// As kube-apiserver's validation: a 422, not the REST's unreachable 400.
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace`) {
		t.Fatalf("LSAR namespace mismatch: %v", err)
	}
	// Reviews are create-only.
	r2 := e.do(http.MethodGet, "/apis/authorization.k8s.io/v1/subjectaccessreviews", nil)
	expectStatus(t, r2, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "")
}

// discoveredPaths lists every collection path the discovery documents
// name (namespaced ones in namespace default), plus the discovery
// documents themselves.
func discoveredPaths(t *testing.T, e *env) []string {
	t.Helper()
	paths := []string{"/api", "/apis", "/api/v1"}
	var groups metav1.APIGroupList
	if err := json.Unmarshal(e.do(http.MethodGet, "/apis", nil).body, &groups); err != nil {
		t.Fatal(err)
	}
	gvs := []string{"/api/v1"}
	for _, g := range groups.Groups {
		paths = append(paths, "/apis/"+g.Name)
		for _, v := range g.Versions {
			gvs = append(gvs, "/apis/"+v.GroupVersion)
			paths = append(paths, "/apis/"+v.GroupVersion)
		}
	}
	for _, gv := range gvs {
		var list metav1.APIResourceList
		if err := json.Unmarshal(e.do(http.MethodGet, gv, nil).body, &list); err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			name, sub, isSub := strings.Cut(r.Name, "/")
			p := gv + "/" + name
			if r.Namespaced {
				p = gv + "/namespaces/default/" + name
			}
			if isSub {
				p += "/x/" + sub
			}
			paths = append(paths, p)
		}
	}
	return paths
}

func TestUnauthenticatedGets401Everywhere(t *testing.T) {
	e := newAuthEnv(t)
	paths := discoveredPaths(t, e)
	if len(paths) < 40 || !slices.Contains(paths, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews") ||
		!slices.Contains(paths, "/apis/authentication.k8s.io/v1/tokenreviews") {
		t.Fatalf("discovery lists too little: %v", paths)
	}
	for _, p := range append(paths, "/metrics", "/openapi/v2") {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			r := e.doWith(e.anon, m, p, []byte(`{}`))
			if r.code != http.StatusUnauthorized {
				t.Errorf("%s %s: %d, want 401", m, p, r.code)
			}
		}
	}
}

func TestLegacyTokenReview(t *testing.T) {
	e, clock := newAuthEnvWithClock(t)
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
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "old", corev1.ServiceAccountUIDKey: string(sa.UID)}},
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte(legacy)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	review := func(auds ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := e.cs.AuthenticationV1().TokenReviews().Create(c, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: legacy, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	if st := review(); !st.Authenticated || st.User.Username != "system:serviceaccount:default:old" || !slices.Equal(st.Audiences, []string{issuer}) {
		t.Fatalf("legacy token review: %+v", st)
	}
	if st := review("vault"); st.Authenticated || !strings.Contains(st.Error, "audiences") {
		t.Fatalf("legacy token for another audience: %+v", st)
	}
	u, err := whoami(t, e.tokenClient(t, legacy, ""))
	if err != nil || u.Username != "system:serviceaccount:default:old" {
		t.Fatalf("legacy whoami: %+v %v", u, err)
	}
	// Its use is recorded on the secret, as kube-apiserver's legacy token
	// tracking: the kubernetes.io/legacy-token-last-used label, today (UTC).
	for today := time.Now().UTC().Format(time.DateOnly); ; time.Sleep(20 * time.Millisecond) {
		s, err := e.cs.CoreV1().Secrets("default").Get(c, "old-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Labels[auth.LegacyTokenLastUsedLabel]; got == today || got == time.Now().UTC().Format(time.DateOnly) {
			break
		}
		if c.Err() != nil {
			t.Fatalf("legacy token use not recorded: labels %v", s.Labels)
		}
	}
	if err := e.cs.CoreV1().Secrets("default").Delete(c, "old-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.expire() // past the token cache's 10 s
	if _, err := whoami(t, e.tokenClient(t, legacy, "")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("legacy token after its secret is gone: %v, want 401", err)
	}
}
