package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TLSOptions say how the kubelet API authenticates itself and its clients.
type TLSOptions struct {
	// CertFile and KeyFile hold the serving certificate; when both are
	// empty a self-signed one is generated for Hosts (as upstream's kubelet
	// does without --tls-cert-file).
	CertFile, KeyFile string
	// Hosts are the DNS names and IPs the self-signed certificate covers.
	Hosts []string
	// CertDir, when set, is where the self-signed certificate lives, as
	// upstream's --cert-dir: kubelet.crt and kubelet.key, read if both
	// load, else generated and written there (0644 and 0600).
	CertDir string
	// GetCertificate, when set, gives the serving certificate at each
	// handshake (a rotated one, --rotate-server-certificates); the files
	// and CertDir are then not used.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAFile, when set, makes the server require a client
	// certificate signed by one of its CAs (upstream's --client-ca-file);
	// when empty, any client is served.
	ClientCAFile string
	// Certificate and ClientCAs are the in-memory forms (`kubeproof up`):
	// they take precedence over the files.
	Certificate *tls.Certificate
	ClientCAs   *x509.CertPool
	// OptionalClientCert verifies a client certificate only when one is
	// given (for bearer-token clients with Options.Auth, as upstream's
	// kubelet); requests without one are then Auth's to refuse.
	OptionalClientCert bool
}

// TLSConfig builds the kubelet API's TLS configuration.
func TLSConfig(o TLSOptions) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case o.GetCertificate != nil:
	case o.Certificate != nil:
		cert = *o.Certificate
	case o.CertFile != "" || o.KeyFile != "":
		if o.CertFile == "" || o.KeyFile == "" {
			return nil, errors.New("kubelet API: --tls-cert-file and --tls-private-key-file go together")
		}
		if cert, err = tls.LoadX509KeyPair(o.CertFile, o.KeyFile); err != nil {
			return nil, fmt.Errorf("kubelet API: loading serving certificate: %w", err)
		}
	case o.CertDir != "":
		if cert, err = selfSignedInDir(o.CertDir, o.Hosts); err != nil {
			return nil, err
		}
	default:
		if cert, err = selfSigned(o.Hosts); err != nil {
			return nil, err
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if o.GetCertificate != nil {
		cfg.GetCertificate = o.GetCertificate
	} else {
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.ClientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = o.ClientCAs, tls.RequireAndVerifyClientCert
	} else if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet API: reading client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kubelet API: no certificates in client CA file %s", o.ClientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	if cfg.ClientCAs != nil && o.OptionalClientCert {
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// selfSignedPEM is a self-signed serving certificate for hosts (DNS names
// and IPs; localhost when none).
func selfSignedPEM(hosts []string) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		hosts = []string{"localhost"}
	}
	var ips []net.IP
	var dns []string
	for _, h := range hosts[1:] {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	if certPEM, keyPEM, err = certutil.GenerateSelfSignedCertKey(hosts[0], ips, dns); err != nil {
		return nil, nil, fmt.Errorf("kubelet API: generating a self-signed certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// selfSigned is selfSignedPEM's certificate, in memory only.
func selfSigned(hosts []string) (tls.Certificate, error) {
	certPEM, keyPEM, err := selfSignedPEM(hosts)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API: self-signed certificate: %w", err)
	}
	return cert, nil
}

// selfSignedInDir is upstream's kubelet's serving certificate without
// --tls-cert-file: dir/kubelet.crt and dir/kubelet.key when both can be
// read (one that does not load is an error, as upstream's, never
// overwritten), else, when neither can, a self-signed one for hosts
// written there first; only one of them is an error too.
func selfSignedInDir(dir string, hosts []string) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	readable, err := certutil.CanReadCertAndKey(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API: self-signed certificate: %w", err)
	}
	if readable {
		cert, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("kubelet API: loading serving certificate %s: %w", certPath, err)
		}
		return cert, nil
	}
	certPEM, keyPEM, err := selfSignedPEM(hosts)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := certutil.WriteCert(certPath, certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API: writing the self-signed certificate: %w", err)
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API: writing the self-signed certificate's key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet API: self-signed certificate: %w", err)
	}
	return cert, nil
}

// Serve serves h over TLS on ln until ctx ends; then it closes the
// listener and every connection, and returns nil. Request contexts derive
// from ctx, so followed logs end with it.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          log.New(io.Discard, "", 0), // failed TLS handshakes are the client's problem
	}
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Serve(tls.NewListener(ln, tlsConfig)) }()
	select {
	case err := <-errCh:
		return fmt.Errorf("kubelet API: %w", err)
	case <-ctx.Done():
		_ = srv.Close()
		<-errCh
		return nil
	}
}
