package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/pki"
)

// fakeLoopback is a LoopbackGetter whose loopback certificate is issued
// by its own CA for the server name "apiserver-loopback-client".
type fakeLoopback struct {
	roots *x509.CertPool
	token string
}

func (f fakeLoopback) LoopbackClient() (*tls.Config, string) {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: f.roots, ServerName: "apiserver-loopback-client"}, f.token
}

func (f fakeLoopback) LoopbackAddress() (string, error) {
	return "", errors.New("the loopback address is not where a URL webhook goes")
}

// A webhook given as clientConfig.url whose host is kubernetes.default.svc
// on port 443 (written or not) is called with the loopback client's TLS
// settings and token, as kube-apiserver's webhook authentication resolver
// answers the host:port "kubernetes.default.svc:443" with its loopback
// client configuration; the connection still goes to that name as DNS
// resolves it (the URL's host), not to the loopback address. Another
// port, or another spelling of the host, gets an ordinary client, which
// checks the certificate against the URL's host (so the loopback
// certificate does not do) and sends no token.
func TestWebhookURLAtKubernetesDefaultSvcUsesTheLoopbackClient(t *testing.T) {
	ca, err := pki.NewCA("loopback-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueServing("loopback", []string{"apiserver-loopback-client"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.CertPEM) {
		t.Fatal("CA PEM")
	}
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}
		rev.Request = nil
		_ = json.NewEncoder(w).Encode(rev)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	tests := []struct {
		url      string
		wantDial string
		wantErr  string // "" when the call succeeds with the loopback token
	}{
		{"https://kubernetes.default.svc/check", "kubernetes.default.svc:443", ""},
		{"https://kubernetes.default.svc:443/check", "kubernetes.default.svc:443", ""},
		{"https://kubernetes.default.svc:6443/check", "kubernetes.default.svc:6443", "certificate is valid for apiserver-loopback-client, not kubernetes.default.svc"},
		{"https://kubernetes.default.svc.cluster.local/check", "kubernetes.default.svc.cluster.local:443", "certificate is valid for apiserver-loopback-client, not kubernetes.default.svc.cluster.local"},
		{"https://kubernetes.default/check", "kubernetes.default:443", "certificate is valid for apiserver-loopback-client, not kubernetes.default"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			mu.Lock()
			auths = nil
			mu.Unlock()
			var dialed []string
			clients := &webhookClients{dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialed = append(dialed, addr)
				var d net.Dialer
				return d.DialContext(ctx, network, srv.Listener.Addr().String())
			}}
			fail := admissionregistrationv1.Fail
			none := admissionregistrationv1.SideEffectClassNone
			url := tt.url
			hooks := validatingWebhooks([]admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "url.example.com", FailurePolicy: &fail, SideEffects: &none, Rules: podRules, AdmissionReviewVersions: []string{"v1"},
					ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}}}})
			d := testDispatcher(hooks)
			d.clients = clients
			d.loopback = fakeLoopback{roots: roots, token: "loopback-token"}
			err := (&ValidatingWebhook{d}).Validate(context.Background(), podCreate(newPod("p")))
			if strings.Join(dialed, ",") != tt.wantDial {
				t.Errorf("dialed %q, want %q", dialed, tt.wantDial)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auths) != 1 || auths[0] != "Bearer loopback-token" {
				t.Fatalf("Authorization headers %q, want the loopback token", auths)
			}
		})
	}
}

// The webhook's caBundle is trusted besides the loopback certificate, as
// kube-apiserver appends it to the loopback configuration's CA data.
func TestWebhookURLAtKubernetesDefaultSvcTrustsTheCABundleToo(t *testing.T) {
	srv, caBundle, _, _ := serviceHookServer(t, "apiserver-loopback-client")
	clients := &webhookClients{dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	url := "https://kubernetes.default.svc/bundle"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	hooks := validatingWebhooks([]admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "url.example.com", FailurePolicy: &fail, SideEffects: &none, Rules: podRules, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}}}}})
	d := testDispatcher(hooks)
	d.clients = clients
	d.loopback = fakeLoopback{roots: x509.NewCertPool(), token: "t"}
	err := (&ValidatingWebhook{d}).Validate(context.Background(), podCreate(newPod("p")))
	// serviceHookServer denies, saying where it was called.
	if err == nil || !strings.Contains(err.Error(), "called at /bundle") {
		t.Fatalf("got %v, want the hook's denial", err)
	}
}
