// Package pki makes the certificates kubeproof's components use: one cluster
// CA, the API server's serving certificate, and client certificates whose
// subject carries the identity (CN = user name, O = groups), as Kubernetes'
// x509 authenticator reads them. It also writes kubeconfig files.
//
// Everything is kept as PEM files in one directory so that restarting on the
// same data directory reuses the same CA and keys.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Validity of issued certificates. Long-lived on purpose: kubeproof's data
// directories are development clusters, not production PKI.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority that can issue serving and client
// certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// Pool returns a pool holding only this CA, for verifying peers.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// LoadOrCreateCA reads ca.crt and ca.key from dir, creating them (and dir)
// if they do not exist.
func LoadOrCreateCA(dir, commonName string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		return parseCA(certPEM, keyPEM)
	}
	if !errors.Is(certErr, os.ErrNotExist) && certErr != nil {
		return nil, fmt.Errorf("reading CA certificate: %w", certErr)
	}
	ca, err := NewCA(commonName)
	if err != nil {
		return nil, err
	}
	keyPEM, err = encodeKey(ca.key)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(dir, map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": keyPEM}); err != nil {
		return nil, fmt.Errorf("writing CA: %w", err)
	}
	return ca, nil
}

// NewCA makes a new self-signed CA in memory.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// TLSCertificate returns the pair as a tls.Certificate.
func (kp KeyPair) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
}

// IssueServing issues a server certificate for the given DNS names and IPs.
func (ca *CA) IssueServing(commonName string, dnsNames []string, ips []net.IP) (KeyPair, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// IssueClient issues a client certificate for user (CN) in groups (O).
func (ca *CA) IssueClient(user string, groups []string) (KeyPair, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (ca *CA) issue(tmpl *x509.Certificate) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating key for %q: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, err
	}
	now := time.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(leafValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// LoadOrIssue reads name.crt/name.key from dir, or issues them with issue
// and writes them there.
func LoadOrIssue(dir, name string, issue func() (KeyPair, error)) (KeyPair, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		kp := KeyPair{CertPEM: certPEM, KeyPEM: keyPEM}
		if _, err := kp.TLSCertificate(); err != nil {
			return KeyPair{}, fmt.Errorf("loading %s: %w", certPath, err)
		}
		return kp, nil
	}
	kp, err := issue()
	if err != nil {
		return KeyPair{}, err
	}
	if err := writeFiles(dir, map[string][]byte{name + ".crt": kp.CertPEM, name + ".key": kp.KeyPEM}); err != nil {
		return KeyPair{}, fmt.Errorf("writing %s key pair: %w", name, err)
	}
	return kp, nil
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("CA certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("CA key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key cannot sign")
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: signer}, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return s, nil
}

// writeFiles writes each file into dir with mode 0600 (keys are secrets).
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
