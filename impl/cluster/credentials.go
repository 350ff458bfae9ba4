package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/pki"
)

// credentials are the certificates a cluster needs at start.
type credentials struct {
	ca      *pki.CA
	serving tls.Certificate
	admin   pki.KeyPair
}

// loadCredentials loads or creates the CA, the API server's serving
// certificate (valid for loopback and the in-cluster service names, plus the
// bind host) and the admin client certificate in dir.
func loadCredentials(dir, bindAddress string) (*credentials, error) {
	ca, err := pki.LoadOrCreateCA(dir, "kubeproof-ca")
	if err != nil {
		return nil, err
	}
	dnsNames := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	if host, _, err := net.SplitHostPort(bindAddress); err == nil && host != "" {
		if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
			ips = append(ips, ip)
		} else if ip == nil && host != "localhost" {
			dnsNames = append(dnsNames, host)
		}
	}
	servingPair, err := pki.LoadOrIssue(dir, "apiserver", func() (pki.KeyPair, error) {
		return ca.IssueServing("kube-apiserver", dnsNames, ips)
	})
	if err != nil {
		return nil, err
	}
	serving, err := servingPair.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("loading serving certificate: %w", err)
	}
	admin, err := pki.LoadOrIssue(dir, "admin", func() (pki.KeyPair, error) {
		return ca.IssueClient(AdminUser, []string{bootstrappolicy.SystemMastersGroup})
	})
	if err != nil {
		return nil, err
	}
	return &credentials{ca: ca, serving: serving, admin: admin}, nil
}

// restConfigForRaw prepares cfg for a bare REST client used on non-resource
// paths such as /readyz.
func restConfigForRaw(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

// loadOrCreateServiceAccountKey returns the key that signs service account
// tokens, kept in dir/sa.key (PKCS#8 PEM, as kubeadm's sa.key), creating
// an ECDSA P-256 key the first time.
func loadOrCreateServiceAccountKey(dir string) (crypto.Signer, error) {
	path := filepath.Join(dir, "sa.key")
	if _, err := os.Stat(path); err == nil {
		return auth.LoadSigningKey(path)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the service account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the service account key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the service account key: %w", err)
	}
	return key, nil
}
