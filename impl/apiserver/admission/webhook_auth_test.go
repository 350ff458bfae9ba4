package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// As kube-apiserver's ClientManager, webhook clients are keyed by the
// whole client configuration: webhooks with the same CA bundle at other
// URLs, or at other paths or ports of a service, get clients of their
// own (which may carry other credentials).
func TestWebhookClientsKeyedByTheWholeConfiguration(t *testing.T) {
	c := &webhookClients{}
	ca := []byte("")
	one, err := c.getURL(ca, "https://one.example.com:8443/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := c.getURL(ca, "https://two.example.com:8443/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.getURL(ca, "https://one.example.com:8443/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if one == two || one != again {
		t.Errorf("URL clients: other host shared %v, same URL shared %v", one == two, one == again)
	}
	resolver := &serviceResolver{service: func(context.Context, string, string) (*corev1.Service, error) { return nil, fmt.Errorf("not used") }}
	ref := func(path string, port int32) *admissionregistrationv1.ServiceReference {
		return &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Path: &path, Port: &port}
	}
	a, _ := c.get(ca, ref("/a", 443), resolver)
	b, _ := c.get(ca, ref("/b", 443), resolver)
	p, _ := c.get(ca, ref("/a", 8443), resolver)
	a2, _ := c.get(ca, ref("/a", 443), resolver)
	if a == b || a == p || a != a2 {
		t.Errorf("service clients: other path shared %v, other port shared %v, same reference shared %v", a == b, a == p, a == a2)
	}
}

// writeKubeconfig writes a kubeconfig of the given users (name: fields)
// and current context user.
func writeKubeconfig(t *testing.T, users map[string]map[string]any, currentUser string) string {
	t.Helper()
	type named struct {
		Name string         `json:"name"`
		User map[string]any `json:"user"`
	}
	cfg := map[string]any{"apiVersion": "v1", "kind": "Config"}
	var list []named
	for n, u := range users {
		list = append(list, named{n, u})
	}
	cfg["users"] = list
	if currentUser != "" {
		cfg["contexts"] = []map[string]any{{"name": "c", "context": map[string]any{"cluster": "x", "user": currentUser}}}
		cfg["current-context"] = "c"
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "webhooks.kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The user a webhook is called as is chosen by its host:port as
// kube-apiserver's default authentication info resolver chooses it.
func TestWebhookCredentialsMatchTheHost(t *testing.T) {
	tok := func(s string) map[string]any { return map[string]any{"token": s} }
	creds, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{
		"hook.example.com:8443":   tok("exact"),
		"*.example.com:8443":      tok("wildcard-port"),
		"*.com:8443":              tok("wildcard-short"),
		"plain.example.org":       tok("no-port"),
		"*.example.org":           tok("wildcard-no-port"),
		"hook.ns.svc:443":         tok("service"),
		"*.svc:9443":              tok("services-9443"),
		"*":                       tok("default"),
		"current":                 tok("current"),
		"hook.example.com:443443": tok("never"),
	}, "current"))
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"hook.example.com:8443":   "exact",
		"a.b.example.com:8443":    "wildcard-port",
		"other.com:8443":          "wildcard-short",
		"plain.example.org:443":   "no-port",
		"x.example.org:443":       "wildcard-no-port",
		"x.example.org:8443":      "default",
		"hook.ns.svc:443":         "service",
		"other.ns.svc:9443":       "services-9443",
		"hook.example.com:443":    "default",
		"plain.example.org:80443": "default",
	} {
		u := creds.userFor(target)
		if u == nil || u.Token != want {
			t.Errorf("%s: got %+v, want the user with token %q", target, u, want)
		}
	}
	onlyCurrent, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{"me": tok("mine")}, "me"))
	if err != nil {
		t.Fatal(err)
	}
	if u := onlyCurrent.userFor("any.example.com:443"); u == nil || u.Token != "mine" {
		t.Errorf("no match: got %+v, want the current context's user", u)
	}
	none, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{"other:443": tok("x")}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if u := none.userFor("any.example.com:443"); u != nil {
		t.Errorf("no match and no current context: got %+v, want none", u)
	}
}

// credServer is an HTTPS webhook that allows every review and keeps the
// Authorization header, client certificate name, impersonation headers
// and User-Agent of each call.
type credServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newCredServer(t *testing.T) *credServer {
	s := &credServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		got := r.Header.Get("Authorization")
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			got += "cert:" + r.TLS.PeerCertificates[0].Subject.CommonName
		}
		if imp := r.Header.Get("Impersonate-User"); imp != "" {
			got += " as " + imp
		}
		if g := r.Header.Values("Impersonate-Group"); len(g) > 0 {
			got += " groups " + strings.Join(g, ",")
		}
		if uid := r.Header.Get("Impersonate-Uid"); uid != "" {
			got += " uid " + uid
		}
		got += " agent " + r.UserAgent()
		s.mu.Lock()
		s.seen = append(s.seen, got)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Response: &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}})
	}))
	s.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *credServer) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func clientCertPEM(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// --admission-control-config-file's WebhookAdmissionConfiguration names
// a kubeconfig whose users are the credentials webhooks are called with,
// by host:port: a token, basic credentials, a client certificate,
// impersonation. Two webhooks with the same CA bundle at other hosts are
// each called with their own.
func TestWebhookCallsCarryTheKubeconfigCredentials(t *testing.T) {
	servers := []*credServer{newCredServer(t), newCredServer(t), newCredServer(t)}
	host := func(i int) string { return strings.TrimPrefix(servers[i].URL, "https://") }
	certPEM, keyPEM := clientCertPEM(t, "apiserver-client")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("from-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeKubeconfig(t, map[string]map[string]any{
		host(0): {"token": "one", "as": "someone"},
		host(1): {"username": "u", "password": "p"},
		host(2): {"client-certificate-data": certPEM, "client-key-data": keyPEM, "tokenFile": filepath.Join(dir, "token")},
	}, "")
	configFile := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(configFile, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: `+kubeconfig+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ac, err := ReadAdmissionConfiguration(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var opts Options
	ignored, err := ac.Apply([]string{"ValidatingAdmissionWebhook"}, &opts)
	if err != nil || len(ignored) != 0 || opts.ValidatingWebhookCredentials == nil {
		t.Fatalf("Apply: ignored %v, err %v, credentials %v", ignored, err, opts.ValidatingWebhookCredentials)
	}
	validateWithCredentials(t, servers, opts.ValidatingWebhookCredentials, "Bearer one as someone agent kube-apiserver-admission",
		"Basic dTpw agent kube-apiserver-admission", "Bearer from-filecert:apiserver-client agent kube-apiserver-admission")
}

// validateWithCredentials validates a pod creation with a validating
// webhook (failurePolicy Fail) at each server, called with creds, and
// checks each server saw one call, as want says.
func validateWithCredentials(t *testing.T, servers []*credServer, creds *WebhookCredentials, want ...string) {
	t.Helper()
	var hooks []admissionregistrationv1.ValidatingWebhook
	for i, s := range servers {
		url := s.URL + "/check"
		fail := admissionregistrationv1.Fail
		none := admissionregistrationv1.SideEffectClassNone
		hooks = append(hooks, admissionregistrationv1.ValidatingWebhook{Name: fmt.Sprintf("h%d.example.com", i), FailurePolicy: &fail, SideEffects: &none,
			Rules: podRules, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}})
	}
	d := testDispatcher(validatingWebhooks([]admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: hooks}}))
	d.clients.credentials = creds
	if err := (&ValidatingWebhook{d}).Validate(context.Background(), podCreate(newPod("p"))); err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		if got := s.calls(); len(got) != 1 || got[0] != want[i] {
			t.Errorf("webhook %d was called with %q, want %q", i, got, want[i])
		}
	}
}

// A webhook plugin's configuration is decoded as kube-apiserver decodes
// it: kind WebhookAdmissionConfiguration in apiserver.config.k8s.io/v1,
// WebhookAdmission in v1alpha1, and an absolute kubeConfigFile.
func TestWebhookAdmissionConfigurationDecoding(t *testing.T) {
	kubeconfig := writeKubeconfig(t, map[string]map[string]any{"*": {"token": "t"}}, "")
	for _, tt := range []struct{ name, config, err string }{
		{"v1", `{"apiVersion":"apiserver.config.k8s.io/v1","kind":"WebhookAdmissionConfiguration","kubeConfigFile":"` + kubeconfig + `"}`, ""},
		{"v1alpha1", `{"apiVersion":"apiserver.config.k8s.io/v1alpha1","kind":"WebhookAdmission","kubeConfigFile":"` + kubeconfig + `"}`, ""},
		{"v1 with the v1alpha1 kind", `{"apiVersion":"apiserver.config.k8s.io/v1","kind":"WebhookAdmission","kubeConfigFile":"` + kubeconfig + `"}`,
			`no kind "WebhookAdmission" is registered for version "apiserver.config.k8s.io/v1"`},
		{"relative", `{"apiVersion":"apiserver.config.k8s.io/v1","kind":"WebhookAdmissionConfiguration","kubeConfigFile":"hooks.kubeconfig"}`,
			`kubeConfigFile: Invalid value: "hooks.kubeconfig": must be an absolute file path`},
		{"missing", `{"apiVersion":"apiserver.config.k8s.io/v1","kind":"WebhookAdmissionConfiguration"}`,
			`kubeConfigFile: Invalid value: "": must be an absolute file path`},
		{"no such file", `{"apiVersion":"apiserver.config.k8s.io/v1","kind":"WebhookAdmissionConfiguration","kubeConfigFile":"/nonexistent/kubeconfig"}`,
			"no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := decodeWebhookAdmission([]byte(tt.config))
			if tt.err == "" {
				if err != nil || c.userFor("x:443") == nil {
					t.Fatalf("got %v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want %q", err, tt.err)
			}
		})
	}
}

// As kube-apiserver's resolver, a kubeconfig user impersonates only when
// it names the user to impersonate (as): its groups then go with it, and
// as-uid is never sent. Every call says User-Agent
// kube-apiserver-admission, with credentials or without.
func TestWebhookImpersonationAndUserAgent(t *testing.T) {
	servers := []*credServer{newCredServer(t), newCredServer(t), newCredServer(t)}
	host := func(i int) string { return strings.TrimPrefix(servers[i].URL, "https://") }
	creds, err := LoadWebhookCredentials(writeKubeconfig(t, map[string]map[string]any{
		host(0): {"token": "t", "as-groups": []string{"g1"}},
		host(1): {"token": "t", "as": "someone", "as-groups": []string{"g1", "g2"}, "as-uid": "42"},
	}, ""))
	if err != nil {
		t.Fatal(err)
	}
	validateWithCredentials(t, servers, creds, "Bearer t agent kube-apiserver-admission",
		"Bearer t as someone groups g1,g2 agent kube-apiserver-admission", " agent kube-apiserver-admission")
}

// A kubeConfigFile that is missing or does not load stops the plugin as
// kube-apiserver's resolver does, with client-go's loading errors.
func TestWebhookKubeconfigLoadErrors(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed")
	if err := os.WriteFile(malformed, []byte("users: {"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, loadErr := clientcmd.Load([]byte("users: {"))
	if loadErr == nil {
		t.Fatal("the malformed kubeconfig loads")
	}
	missing := filepath.Join(dir, "missing")
	for _, tt := range []struct{ file, want string }{
		{missing, "stat " + missing + ": no such file or directory"},
		{malformed, fmt.Sprintf("error loading config file %q: %v", malformed, loadErr)},
	} {
		_, err := decodeWebhookAdmission([]byte(`{"apiVersion":"apiserver.config.k8s.io/v1","kind":"WebhookAdmissionConfiguration","kubeConfigFile":"` + tt.file + `"}`))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.file, err, tt.want)
		}
	}
}
