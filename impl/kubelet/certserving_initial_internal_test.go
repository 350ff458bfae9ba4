package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/keyutil"
)

// writePair writes a self-signed certificate for cn, valid until
// notAfter, and its key to certPath and keyPath, returning its DER.
func writePair(t *testing.T, certPath, keyPath, cn string, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return der
}

// TestServingCertificateStartsFromTLSCertFile: with
// --rotate-server-certificates, as upstream's kubelet server certificate
// manager (its store falls back to --tls-cert-file and
// --tls-private-key-file), the files' certificate is served until one is
// issued: before any request (the node has no addresses yet), and while
// the request made at once (it is not system:node:<name>'s) waits; an
// issued one in cert-dir (kubelet-server-current.pem) comes before the
// files, and an expired file certificate serves nothing. Before, the
// kubelet API refused every handshake until a certificate was issued.
func TestServingCertificateStartsFromTLSCertFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	fileDER := writePair(t, certFile, keyFile, "n1.example", time.Now().Add(time.Hour))
	var addresses atomic.Pointer[[]corev1.NodeAddress]
	cfg := ServingCertificateManagerConfig{
		CertDir: filepath.Join(dir, "pki"), NodeName: "n1",
		Addresses: func() []corev1.NodeAddress {
			if a := addresses.Load(); a != nil {
				return *a
			}
			return nil
		},
		TLSCertFile: certFile, TLSKeyFile: keyFile,
	}
	if err := os.MkdirAll(cfg.CertDir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := NewServingCertificateManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := func() []byte {
		t.Helper()
		c, err := m.ServingCertificate(nil)
		if err != nil {
			t.Fatalf("no serving certificate: %v", err)
		}
		return c.Certificate[0]
	}
	if got := served(); string(got) != string(fileDER) {
		t.Fatal("before any request the served certificate is not --tls-cert-file's")
	}

	client := fake.NewClientset()
	requested := make(chan struct{})
	var once atomic.Bool
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if once.CompareAndSwap(false, true) {
			close(requested)
		}
		a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest).Name = "csr-1" // the fake does not generate names
		return false, nil, nil                                                                             // stored, pending
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, client) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addresses.Store(&[]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}})
	select {
	case <-requested:
	case <-time.After(30 * time.Second):
		t.Fatal("no request in 30s for the node's addresses: --tls-cert-file's certificate is not system:node:n1's")
	}
	if got := served(); string(got) != string(fileDER) {
		t.Error("while the request waits the served certificate is not --tls-cert-file's")
	}

	t.Run("an issued one comes first", func(t *testing.T) {
		certDir := t.TempDir()
		store, err := certificate.NewFileStore(servingCertPrefix, certDir, certDir, "", "")
		if err != nil {
			t.Fatal(err)
		}
		issuedCert, issuedKey := filepath.Join(t.TempDir(), "c"), filepath.Join(t.TempDir(), "k")
		issuedDER := writePair(t, issuedCert, issuedKey, "system:node:n1", time.Now().Add(time.Hour))
		certPEM, _ := os.ReadFile(issuedCert)
		keyPEM, _ := os.ReadFile(issuedKey)
		if _, err := store.Update(certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.CertDir = certDir
		m, err := NewServingCertificateManager(c)
		if err != nil {
			t.Fatal(err)
		}
		if cur := m.Current(); cur == nil || string(cur.Certificate[0]) != string(issuedDER) {
			t.Error("the served certificate is not cert-dir's kubelet-server-current.pem")
		}
	})
	t.Run("expired", func(t *testing.T) {
		c := cfg
		c.CertDir = t.TempDir()
		c.TLSCertFile, c.TLSKeyFile = filepath.Join(c.CertDir, "old.crt"), filepath.Join(c.CertDir, "old.key")
		writePair(t, c.TLSCertFile, c.TLSKeyFile, "n1.example", time.Now().Add(-time.Hour))
		m, err := NewServingCertificateManager(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.ServingCertificate(nil); err == nil {
			t.Error("an expired --tls-cert-file is served")
		}
	})
}
