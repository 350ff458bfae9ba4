package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
	"github.com/kubeproof/kubeproof/impl/pki"
)

// KubeletAPIClientUser is the identity the API server presents to kubelets
// (kube-apiserver's --kubelet-client-certificate, as kubeadm names it).
const KubeletAPIClientUser = "kube-apiserver-kubelet-client"

// KubeletAPI is the one HTTPS server of the kubelet API (impl/kubelet/server)
// serving every in-process simulated kubelet: each is registered with Mux
// and reports Port (on its NodeIP, 127.0.0.1) in status.daemonEndpoints, so
// N nodes share one port. Its serving certificate and the client
// certificate it requires both come from the cluster CA.
//
// Wiring into Start (when cfg.Nodes > 0): NewKubeletAPI before the API
// server, Serve in the components' wait group on compsCtx, ClientTLS as the
// API server's KubeletClientTLS (APIServerConfig → apiserver.Config), and
// in startKubelets kubelet.Config.Port = Port and Mux.Add(k) for each
// kubelet.
type KubeletAPI struct {
	Mux  *server.Mux
	Port int32
	// ClientTLS is what the API server reaches kubelets with: the
	// kube-apiserver-kubelet-client certificate. Kubelet serving
	// certificates are not verified, as kube-apiserver does without
	// --kubelet-certificate-authority (kubeadm's default), so standalone
	// `kubeproof kubelet`s with self-signed certificates can join too.
	ClientTLS *tls.Config

	ln        net.Listener
	tlsConfig *tls.Config
	authOn    atomic.Bool // enableAuth ran
}

// NewKubeletAPI listens on 127.0.0.1 (a free port) for the kubelet API;
// certificates are issued once into pkiDir. Serve it with Serve.
func NewKubeletAPI(ca *pki.CA, pkiDir string, logger *slog.Logger) (*KubeletAPI, error) {
	if logger == nil {
		logger = slog.Default()
	}
	serving, err := pki.LoadOrIssue(pkiDir, "kubelet-serving", func() (pki.KeyPair, error) {
		return ca.IssueServing("kubelet", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet API serving certificate: %w", err)
	}
	servingCert, err := serving.TLSCertificate()
	if err != nil {
		return nil, err
	}
	client, err := pki.LoadOrIssue(pkiDir, "apiserver-kubelet-client", func() (pki.KeyPair, error) {
		return ca.IssueClient(KubeletAPIClientUser, []string{"kubeadm:cluster-admins"})
	})
	if err != nil {
		return nil, fmt.Errorf("API server's kubelet client certificate: %w", err)
	}
	clientCert, err := client.TLSCertificate()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := server.TLSConfig(server.TLSOptions{Certificate: &servingCert, ClientCAs: ca.Pool(), OptionalClientCert: true})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	return &KubeletAPI{
		Mux:       server.NewMux(server.Options{Logger: logger}),
		Port:      int32(ln.Addr().(*net.TCPAddr).Port),
		ClientTLS: &tls.Config{Certificates: []tls.Certificate{clientCert}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see ClientTLS
		ln:        ln,
		tlsConfig: tlsConfig,
	}, nil
}

// Serve serves the kubelet API until ctx ends, then closes the listener.
// The TLS layer lets clients without a certificate in (bearer tokens are
// reviewed once enableAuth switched webhook auth on); until then only
// clients with a verified certificate of the cluster CA are served.
func (k *KubeletAPI) Serve(ctx context.Context) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !k.authOn.Load() && (req.TLS == nil || len(req.TLS.VerifiedChains) == 0) {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		k.Mux.ServeHTTP(w, req)
	})
	return server.Serve(ctx, k.ln, h, k.tlsConfig)
}

// Close releases the listener of a KubeletAPI that is never served.
func (k *KubeletAPI) Close() error { return k.ln.Close() }

// enableAuth switches the kubelet API's webhook authentication and
// authorization on once the API server is up, and lets the API server's
// kubelet client identity use it (system:kubelet-api-admin).
func (k *KubeletAPI) enableAuth(ctx context.Context, admin kubernetes.Interface) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeproof:kube-apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: KubeletAPIClientUser}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding the API server's kubelet client to system:kubelet-api-admin: %w", err)
	}
	k.Mux.SetAuth(server.NewAuth(server.AuthOptions{Client: admin, TokenWebhook: true}))
	k.authOn.Store(true)
	return nil
}
