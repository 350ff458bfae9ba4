package cluster

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// authWebhook is a TLS webhook serving TokenReviews at /authenticate and
// SubjectAccessReviews at /authorize, for the user "dave" (token
// dave-token; expired-token is refused with an error; vault-token is
// good for the audience "vault" only). It counts calls.
type authWebhook struct {
	srv *httptest.Server

	mu          sync.Mutex
	tokenCalls  map[string]int
	sarCalls    map[string]int
	gotAudience [][]string
}

const webhookCredential = "apiserver-to-webhook"

func newAuthWebhook(t *testing.T) *authWebhook {
	w := &authWebhook{tokenCalls: map[string]int{}, sarCalls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /authenticate", func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+webhookCredential {
			http.Error(rw, "who are you", http.StatusUnauthorized)
			return
		}
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.tokenCalls[tr.Spec.Token]++
		w.gotAudience = append(w.gotAudience, tr.Spec.Audiences)
		w.mu.Unlock()
		switch tr.Spec.Token {
		case "dave-token":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "dave", UID: "42", Groups: []string{"devs"}}}
		case "expired-token":
			tr.Status = authenticationv1.TokenReviewStatus{Error: "token expired"}
		case "vault-token":
			if slices.Contains(tr.Spec.Audiences, "vault") {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"vault"},
					User: authenticationv1.UserInfo{Username: "vault-user", UID: "7"}}
			}
		}
		writeJSON(rw, &tr)
	})
	mux.HandleFunc("POST /authorize", func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+webhookCredential {
			http.Error(rw, "who are you", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var sar authorizationv1.SubjectAccessReview
		if err := json.Unmarshal(body, &sar); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		if sar.Spec.User != "dave" {
			writeJSON(rw, &sar) // no opinion on anyone else
			return
		}
		ra := sar.Spec.ResourceAttributes
		key := "nonresource"
		if ra != nil {
			key = ra.Verb + " " + ra.Resource + " " + ra.Namespace
		}
		w.mu.Lock()
		w.sarCalls[key]++
		w.mu.Unlock()
		switch {
		case !slices.Contains(sar.Spec.Groups, "devs") || sar.Spec.UID != "42":
			http.Error(rw, "user info lost", http.StatusBadRequest)
			return
		case key == "list pods kube-system":
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true}
		case key == "delete pods default":
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "dave may not delete pods"}
		case key == "list services kube-system":
			http.Error(rw, "cannot decide now", http.StatusBadRequest)
			return
		default:
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "webhook has no rule for " + key}
		}
		writeJSON(rw, &sar)
	})
	w.srv = httptest.NewTLSServer(mux)
	t.Cleanup(w.srv.Close)
	return w
}

func writeJSON(rw http.ResponseWriter, v any) {
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(v)
}

// kubeconfig writes a kubeconfig for the webhook at path: the cluster is
// the webhook (its CA), the user the API server's bearer token.
func (w *authWebhook) kubeconfig(t *testing.T, dir, path string) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["webhook"] = &clientcmdapi.Cluster{Server: w.srv.URL + path, CertificateAuthorityData: ca}
	cfg.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{Token: webhookCredential}
	cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "apiserver"}
	cfg.CurrentContext = "webhook"
	file := filepath.Join(dir, strings.Trim(path, "/")+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	return file
}

func (w *authWebhook) calls() (tokens, sars map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps(w.tokenCalls), maps(w.sarCalls)
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// With --authentication-token-webhook-config-file and
// --authorization-mode=Webhook,RBAC, as kube-apiserver: a bearer token no
// other authenticator knows is reviewed by the webhook (for the API
// audiences); the webhook's allow allows, its deny denies even what RBAC
// allows, its no opinion leaves the request to RBAC (403 with the
// webhook's reason when RBAC has none either), its failure with nothing
// allowing is a 500; answers are cached.
func TestAuthenticationAndAuthorizationWebhooks(t *testing.T) {
	dir := t.TempDir()
	hook := newAuthWebhook(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, admin, stop := startForTest(t, Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Auth: AuthOptions{
			AuthorizationModes:                       []string{"Webhook", "RBAC"},
			AuthorizationWebhookConfigFile:           hook.kubeconfig(t, dir, "/authorize"),
			AuthorizationWebhookCacheAuthorizedTTL:   5 * time.Minute,
			AuthorizationWebhookCacheUnauthorizedTTL: 30 * time.Second,
			AuthenticationTokenWebhookConfigFile:     hook.kubeconfig(t, dir, "/authenticate"),
			AuthenticationTokenWebhookCacheTTL:       2 * time.Minute,
		}})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	// RBAC lets dave delete pods and list configmaps in default.
	if _, err := admin.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "dave"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dave"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dave"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "dave"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(token string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(c.AdminConfig)
		cfg.BearerToken = token
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	dave := as("dave-token")

	// Authentication: the webhook's user, with system:authenticated.
	review, err := dave.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami as dave: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "dave" || u.UID != "42" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) {
		t.Errorf("dave is %+v", u)
	}
	for _, token := range []string{"expired-token", "nobody-token"} {
		if _, err := as(token).CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("%s: %v, want 401", token, err)
		}
	}

	// Webhook allows what RBAC does not.
	if _, err := dave.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list pods in kube-system (webhook allows): %v", err)
	}
	// Webhook denies what RBAC allows: the deny stops the chain.
	err = dave.CoreV1().Pods("default").Delete(ctx, "x", metav1.DeleteOptions{})
	wantMsg := `pods "x" is forbidden: User "dave" cannot delete resource "pods" in API group "" in the namespace "default": dave may not delete pods`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("delete pod (webhook denies):\n got %v\nwant %s", err, wantMsg)
	}
	// No opinion: RBAC decides.
	if _, err := dave.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list configmaps in default (webhook no opinion, RBAC allows): %v", err)
	}
	_, err = dave.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	wantMsg = `secrets is forbidden: User "dave" cannot list resource "secrets" in API group "" in the namespace "default": webhook has no rule for list secrets default`
	if !apierrors.IsForbidden(err) || err.Error() != wantMsg {
		t.Errorf("list secrets (nobody allows):\n got %v\nwant %s", err, wantMsg)
	}
	// The webhook fails and nothing allows: 500, as kube-apiserver.
	_, err = dave.CoreV1().Services("kube-system").List(ctx, metav1.ListOptions{})
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != http.StatusInternalServerError {
		t.Errorf("list services in kube-system (webhook fails): %v, want 500", err)
	}

	// Caches: asking again does not call the webhook again, except for
	// the failed call.
	_, _ = dave.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
	_ = dave.CoreV1().Pods("default").Delete(ctx, "x", metav1.DeleteOptions{})
	_, _ = dave.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	_, _ = dave.CoreV1().Services("kube-system").List(ctx, metav1.ListOptions{})
	tokens, sars := hook.calls()
	if tokens["dave-token"] != 1 {
		t.Errorf("dave-token reviewed %d times, want 1 (cached)", tokens["dave-token"])
	}
	for key, want := range map[string]int{"list pods kube-system": 1, "delete pods default": 1, "list secrets default": 1, "list services kube-system": 2} {
		if sars[key] != want {
			t.Errorf("%q asked %d times, want %d", key, sars[key], want)
		}
	}
	hook.mu.Lock()
	auds := hook.gotAudience[0]
	hook.mu.Unlock()
	if !slices.Equal(auds, []string{DefaultServiceAccountIssuer}) {
		t.Errorf("TokenReview audiences %v, want the API audiences [%s]", auds, DefaultServiceAccountIssuer)
	}
}

// kube-apiserver's validation of the Webhook mode's flags, and of the
// webhook versions.
func TestAuthWebhookOptionErrors(t *testing.T) {
	dir := t.TempDir()
	hook := newAuthWebhook(t)
	authz, authn := hook.kubeconfig(t, dir, "/authorize"), hook.kubeconfig(t, dir, "/authenticate")
	for _, c := range []struct {
		name string
		o    AuthOptions
		want string
	}{
		{"Webhook without a config file", AuthOptions{AuthorizationModes: []string{"Webhook"}}, "authorization-mode Webhook's authorization config file not passed"},
		{"config file without Webhook", AuthOptions{AuthorizationModes: []string{"RBAC"}, AuthorizationWebhookConfigFile: authz}, "cannot specify --authorization-webhook-config-file without mode Webhook"},
		{"missing config file", AuthOptions{AuthorizationModes: []string{"Webhook"}, AuthorizationWebhookConfigFile: filepath.Join(dir, "nope")}, "--authorization-webhook-config-file: "},
		{"authorizer version", AuthOptions{AuthorizationModes: []string{"Webhook"}, AuthorizationWebhookConfigFile: authz, AuthorizationWebhookVersion: "v2"}, `unsupported webhook authorizer version "v2"`},
		{"token webhook version", AuthOptions{AuthenticationTokenWebhookConfigFile: authn, AuthenticationTokenWebhookVersion: "v2"}, `unsupported authentication webhook version "v2"`},
	} {
		_, err := buildChain(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A TokenReview posted to the API server asks the token webhook for its
// spec.audiences, as kube-apiserver's TokenReview REST puts them in the
// authenticator's context: a token the webhook accepts for another
// audience than the API's is authenticated for it, and one it accepts
// for the API audiences is not authenticated for another audience.
func TestTokenReviewAsksTheWebhookForTheRequestedAudiences(t *testing.T) {
	dir := t.TempDir()
	hook := newAuthWebhook(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, admin, stop := startForTest(t, Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Auth: AuthOptions{AuthenticationTokenWebhookConfigFile: hook.kubeconfig(t, dir, "/authenticate"), AuthenticationTokenWebhookCacheTTL: 2 * time.Minute}})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	review := func(token string, auds ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		rev, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview of %s for %v: %v", token, auds, err)
		}
		return rev.Status
	}
	if st := review("vault-token", "vault"); !st.Authenticated || st.User.Username != "vault-user" || !slices.Equal(st.Audiences, []string{"vault"}) {
		t.Errorf("vault-token for [vault]: %+v, want vault-user authenticated for [vault]", st)
	}
	if st := review("vault-token"); st.Authenticated {
		t.Errorf("vault-token for the API audiences: %+v, want not authenticated", st)
	}
	if st := review("dave-token"); !st.Authenticated || !slices.Equal(st.Audiences, []string{DefaultServiceAccountIssuer}) {
		t.Errorf("dave-token for the API audiences: %+v, want authenticated for [%s]", st, DefaultServiceAccountIssuer)
	}
	if st := review("dave-token", "vault"); st.Authenticated {
		t.Errorf("dave-token for [vault]: %+v, want not authenticated (the webhook names no audience, so it means the API's)", st)
	}
	hook.mu.Lock()
	asked := slices.Clone(hook.gotAudience)
	hook.mu.Unlock()
	if !slices.ContainsFunc(asked, func(a []string) bool { return slices.Equal(a, []string{"vault"}) }) {
		t.Errorf("the webhook was asked for %v, never for [vault]", asked)
	}
}
