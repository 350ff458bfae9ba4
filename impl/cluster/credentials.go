package cluster

import (
	"crypto/tls"
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

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
		return ca.IssueClient(AdminUser, []string{"system:masters"})
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
