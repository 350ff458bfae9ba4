package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestClientCertificateIdentity checks that a client certificate issued by the
// CA verifies against it over real TLS and carries the user as CN and the
// groups as O, which is what the API server's x509 authenticator reads.
func TestClientCertificateIdentity(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir, "kubeproof-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.IssueServing("kube-apiserver", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient("alice", []string{"system:masters", "dev"})
	if err != nil {
		t.Fatal(err)
	}

	var gotUser string
	var gotGroups []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.TLS.PeerCertificates[0]
		gotUser, gotGroups = c.Subject.CommonName, c.Subject.Organization
	}))
	sc, err := serving.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{sc}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()

	cfg := Kubeconfig(srv.URL, ca.CertPEM, "alice", client)
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := restTLS(restCfg.CAData, restCfg.CertData, restCfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Groups are an ASN.1 SET, so their order in the certificate is not kept.
	sort.Strings(gotGroups)
	if gotUser != "alice" || strings.Join(gotGroups, ",") != "dev,system:masters" {
		t.Fatalf("identity = %q %v, want alice [system:masters dev]", gotUser, gotGroups)
	}

	// A certificate from another CA is refused.
	other, err := NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.IssueClient("mallory", nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err = restTLS(ca.CertPEM, stranger.CertPEM, stranger.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a certificate from a foreign CA was accepted")
	}
}

// TestReloadKeepsCA checks that a second start on the same directory reuses
// the CA and key pairs instead of minting new ones.
func TestReloadKeepsCA(t *testing.T) {
	dir := t.TempDir()
	ca1, err := LoadOrCreateCA(dir, "kubeproof-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp1, err := LoadOrIssue(dir, "admin", func() (KeyPair, error) { return ca1.IssueClient("admin", nil) })
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := LoadOrCreateCA(dir, "kubeproof-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !ca1.Cert.Equal(ca2.Cert) {
		t.Fatal("CA changed across reload")
	}
	kp2, err := LoadOrIssue(dir, "admin", func() (KeyPair, error) { t.Fatal("reissued"); return KeyPair{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if string(kp1.CertPEM) != string(kp2.CertPEM) {
		t.Fatal("client certificate changed across reload")
	}
	// A certificate issued by the reloaded CA verifies against the first.
	kp3, err := ca2.IssueClient("bob", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kp3.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca1.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("reloaded CA issues unverifiable certificates: %v", err)
	}
}

func restTLS(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}, nil
}
