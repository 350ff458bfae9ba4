package secureserving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/pki"
)

// fakeTokens accepts the token "good" as user alice.
type fakeTokens struct{}

func (fakeTokens) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	if r.Spec.Token == "good" || r.Spec.Token == "bob" {
		r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: map[string]string{"good": "alice", "bob": "bob"}[r.Spec.Token], Groups: []string{"readers"}}}
	}
	return r, nil
}

// fakeAccess allows alice get /metrics and records what it was asked.
type fakeAccess struct {
	asked []authorizationv1.SubjectAccessReviewSpec
}

func (f *fakeAccess) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.asked = append(f.asked, r.Spec)
	if r.Spec.User == "alice" && r.Spec.NonResourceAttributes != nil && *r.Spec.NonResourceAttributes == (authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}) {
		r.Status.Allowed = true
	} else if r.Spec.User == "bob" {
		r.Status.Reason = "no RBAC policy matched"
	}
	return r, nil
}

type brokenAccess struct{}

func (brokenAccess) Create(context.Context, *authorizationv1.SubjectAccessReview, metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	return nil, errors.New("connection refused")
}

// start serves a mux of /healthz and /metrics with o on an ephemeral port
// of 127.0.0.1 and returns its base URL.
func start(t *testing.T, o *Options, prepare func(*Server)) string {
	t.Helper()
	return startWith(t, o, prepare, nil)
}

// startWith is start with more handlers on the mux.
func startWith(t *testing.T, o *Options, prepare func(*Server), more func(*http.ServeMux)) string {
	t.Helper()
	o.BindAddress, o.SecurePort = "127.0.0.1", 0
	srv, err := New(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil || srv != nil {
		t.Fatalf("New with --secure-port 0: %v %v, want nothing served", srv, err)
	}
	if o.Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv, err = New(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(srv)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
	if more != nil {
		more(mux)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, mux) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "https://" + srv.Addr().String()
}

type result struct {
	code   int
	body   string
	status metav1.Status
}

func get(t *testing.T, client *http.Client, url, token string) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := result{code: resp.StatusCode, body: string(body)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, &r.status); err != nil {
			t.Fatalf("status body %s: %v", body, err)
		}
	}
	return r
}

func insecureClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}, //nolint:gosec // a test of a self-signed server
	}}
}

// TestSecureServing: as kube-scheduler's and kube-controller-manager's
// secure port, /healthz is served over HTTPS to anyone (an always-allowed
// path), /metrics without credentials is 403 for system:anonymous, with a
// refused token 401, with a token whose user a SubjectAccessReview allows
// 200 (nonResourceAttributes /metrics get), with one it denies 403 with the
// review's reason, and when the review cannot be made 500.
func TestSecureServing(t *testing.T) {
	access := &fakeAccess{}
	base := start(t, NewOptions(10259, "kube-scheduler"), func(s *Server) {
		s.authn.tokens = fakeTokens{}
		s.authz.reviews = access
	})
	client := insecureClient()
	if r := get(t, client, base+"/healthz", ""); r.code != 200 || r.body != "ok" {
		t.Errorf("/healthz: %d %q, want 200 ok", r.code, r.body)
	}
	r := get(t, client, base+"/metrics", "")
	if r.code != 403 || r.status.Reason != metav1.StatusReasonForbidden || r.status.Message != `forbidden: User "system:anonymous" cannot get path "/metrics"` || r.status.Details == nil {
		t.Errorf("/metrics without credentials: %d %s", r.code, r.body)
	}
	if r := get(t, client, base+"/metrics", "bad"); r.code != 401 || r.status.Reason != metav1.StatusReasonUnauthorized || r.status.Message != "Unauthorized" {
		t.Errorf("/metrics with a refused token: %d %s", r.code, r.body)
	}
	if r := get(t, client, base+"/healthz", "bad"); r.code != 401 {
		t.Errorf("/healthz with a refused token: %d %s, want 401 (authentication comes first)", r.code, r.body)
	}
	access.asked = nil
	if r := get(t, client, base+"/metrics", "good"); r.code != 200 || r.body != "# metrics\n" {
		t.Errorf("/metrics as alice: %d %s", r.code, r.body)
	}
	if len(access.asked) != 1 || access.asked[0].User != "alice" || strings.Join(access.asked[0].Groups, ",") != "readers,system:authenticated" {
		t.Errorf("reviews asked: %+v", access.asked)
	}
	if r := get(t, client, base+"/metrics", "bob"); r.code != 403 || r.status.Message != `forbidden: User "bob" cannot get path "/metrics": no RBAC policy matched` {
		t.Errorf("/metrics as bob: %d %s", r.code, r.body)
	}

	broken := start(t, NewOptions(10257, "kube-controller-manager"), func(s *Server) { s.authz.reviews = brokenAccess{} })
	if r := get(t, client, broken+"/metrics", ""); r.code != 500 || !strings.Contains(r.body, "connection refused") {
		t.Errorf("/metrics when the review fails: %d %s", r.code, r.body)
	}
	if r := get(t, client, broken+"/healthz", ""); r.code != 200 {
		t.Errorf("/healthz when the review fails: %d %s", r.code, r.body)
	}
}

// TestSecureServingClientCertificates: with --client-ca-file, a client
// certificate it signs authenticates its CN and O; system:masters is
// always allowed, another user is reviewed, and a certificate of another
// CA is 401. The self-signed serving certificate is for localhost and
// 127.0.0.1 and, with --cert-dir, kept there as <pair name>.crt/.key.
func TestSecureServingClientCertificates(t *testing.T) {
	ca, err := pki.NewCA("clients")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "certs")
	o := NewOptions(10257, "kube-controller-manager")
	o.ClientCAFile, o.CertDir = caFile, certDir
	base := start(t, o, nil)
	cert := func(ca *pki.CA, user string, groups ...string) tls.Certificate {
		kp, err := ca.IssueClient(user, groups)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kp.TLSCertificate()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if r := get(t, insecureClient(cert(ca, "admin", "system:masters")), base+"/metrics", ""); r.code != 200 {
		t.Errorf("/metrics as system:masters: %d %s", r.code, r.body)
	}
	if r := get(t, insecureClient(cert(ca, "carol")), base+"/metrics", ""); r.code != 403 || r.status.Message != `forbidden: User "carol" cannot get path "/metrics"` {
		t.Errorf("/metrics as carol: %d %s", r.code, r.body)
	}
	other, err := pki.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	// The server names its client CA as acceptable (as upstream's serving
	// certificate controller sets ClientCAs), so a Go client holding only
	// another CA's certificate sends none and is anonymous; a client that
	// sends it anyway (curl, openssl) is refused: 401.
	if r := get(t, insecureClient(cert(other, "admin", "system:masters")), base+"/metrics", ""); r.code != 403 {
		t.Errorf("/metrics as a Go client with only another CA's certificate: %d %s, want 403 (anonymous)", r.code, r.body)
	}
	otherCert := cert(other, "admin", "system:masters")
	var acceptable [][]byte
	always := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // a test of a self-signed server
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			acceptable = cri.AcceptableCAs
			return &otherCert, nil
		},
	}}}
	if r := get(t, always, base+"/metrics", ""); r.code != 401 {
		t.Errorf("/metrics sending another CA's certificate anyway: %d %s", r.code, r.body)
	}
	if len(acceptable) != 1 || string(acceptable[0]) != string(ca.Cert.RawSubject) {
		t.Errorf("acceptable client CAs: %q, want the client CA's subject", acceptable)
	}

	pemBytes, err := os.ReadFile(filepath.Join(certDir, "kube-controller-manager.crt"))
	if err != nil {
		t.Fatalf("--cert-dir: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemBytes)
	verifying := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	port := base[strings.LastIndex(base, ":"):]
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if r := get(t, verifying, "https://"+host+port+"/healthz", ""); r.code != 200 {
			t.Errorf("%s: %d", host, r.code)
		}
	}
}

// TestOptionsValidate: upstream's refusals.
func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{BindAddress: "0.0.0.0", SecurePort: 70000},
		{BindAddress: "nowhere", SecurePort: 1},
		{BindAddress: "0.0.0.0", SecurePort: 1, TLSCertFile: "x"},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := NewOptions(10259, "kube-scheduler").Validate(); err != nil {
		t.Error(err)
	}
}
