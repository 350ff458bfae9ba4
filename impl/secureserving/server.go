package secureserving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeproof/kubeproof/impl/pki"
)

// Server is a bound HTTPS endpoint with its authenticator and authorizer.
type Server struct {
	ln    net.Listener
	tls   *tls.Config
	authn *authenticator
	authz *authorizer
	log   *slog.Logger
}

// New binds o's address and loads what serving needs: the certificate,
// the client CA, the reviewing API servers' clients. Nil (and no error)
// when o serves nothing (--secure-port 0).
func New(ctx context.Context, o *Options, log *slog.Logger) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	addr := o.Address()
	if addr == "" {
		return nil, nil
	}
	cert, err := servingCertificate(o)
	if err != nil {
		return nil, err
	}
	authn := &authenticator{}
	if o.AuthenticationKubeconfig != "" {
		c, err := clientFor(o.AuthenticationKubeconfig, "--authentication-kubeconfig")
		if err != nil {
			return nil, err
		}
		authn.tokens = c.AuthenticationV1().TokenReviews()
		if o.ClientCAFile == "" && !o.AuthenticationSkipLookup {
			if authn.clientCAs, err = lookupClientCA(ctx, c); err != nil {
				if !o.AuthenticationTolerateLookupFailure {
					return nil, fmt.Errorf("looking up the client CA in kube-system/extension-apiserver-authentication: %w", err)
				}
				log.Warn("no client CA: looking it up failed", "err", err)
			}
		}
	} else {
		log.Warn("no --authentication-kubeconfig: bearer tokens are not reviewed, requests without a client certificate are anonymous")
	}
	if o.ClientCAFile != "" {
		pemBytes, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading --client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("reading --client-ca-file %s: no PEM certificate", o.ClientCAFile)
		}
		authn.clientCAs = pool
	}
	authz := &authorizer{alwaysAllowPaths: o.AlwaysAllowPaths, alwaysAllowGroups: o.AlwaysAllowGroups}
	if o.AuthorizationKubeconfig != "" {
		c, err := clientFor(o.AuthorizationKubeconfig, "--authorization-kubeconfig")
		if err != nil {
			return nil, err
		}
		authz.reviews = c.AuthorizationV1().SubjectAccessReviews()
	} else {
		log.Warn("no --authorization-kubeconfig: only the always-allowed paths and groups are authorized")
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	if authn.clientCAs != nil {
		// Verified by the authenticator, so that a bad certificate is a
		// 401 rather than a failed handshake (as upstream).
		tlsConfig.ClientAuth = tls.RequestClientCert
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("listening on %s for HTTPS: %w", addr, err)
		}
	}
	return &Server{ln: ln, tls: tlsConfig, authn: authn, authz: authz, log: log}, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves handler behind authentication and authorization until ctx
// ends, then shuts down (5 s for requests in flight).
func (s *Server) Serve(ctx context.Context, handler http.Handler) error {
	srv := &http.Server{
		Handler:           s.filter(handler),
		TLSConfig:         s.tls,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(s.ln, "", "") }()
	select {
	case err := <-served:
		return fmt.Errorf("serving HTTPS on %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTPS on %s: %w", s.ln.Addr(), err)
	}
	return nil
}

// Close releases the listener of a server never served.
func (s *Server) Close() error { return s.ln.Close() }

// servingCertificate is the files' certificate, or a self-signed one for
// localhost and 127.0.0.1 as kube-scheduler's and
// kube-controller-manager's: in memory, or kept under CertDir.
func servingCertificate(o *Options) (tls.Certificate, error) {
	if o.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSPrivateKeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("loading --tls-cert-file and --tls-private-key-file: %w", err)
		}
		return cert, nil
	}
	issue := func() (pki.KeyPair, error) {
		stamp := time.Now().Unix()
		ca, err := pki.NewCA(fmt.Sprintf("localhost-ca@%d", stamp))
		if err != nil {
			return pki.KeyPair{}, fmt.Errorf("generating a self-signed certificate: %w", err)
		}
		kp, err := ca.IssueServing(fmt.Sprintf("localhost@%d", stamp), []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return pki.KeyPair{}, fmt.Errorf("generating a self-signed certificate: %w", err)
		}
		// The chain: the leaf, then its CA.
		kp.CertPEM = append(kp.CertPEM, ca.CertPEM...)
		return kp, nil
	}
	var kp pki.KeyPair
	var err error
	if o.CertDir == "" {
		kp, err = issue()
	} else {
		kp, err = pki.LoadOrIssue(o.CertDir, o.PairName, issue)
	}
	if err != nil {
		return tls.Certificate{}, err
	}
	return kp.TLSCertificate()
}

// clientFor is a clientset for the API server kubeconfig names (flag, for
// errors).
func clientFor(kubeconfig, flag string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", flag, err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client from %s: %w", flag, err)
	}
	return c, nil
}

// lookupClientCA reads the client CA kube-apiserver publishes in
// kube-system/extension-apiserver-authentication ("client-ca-file"); nil
// when the ConfigMap or the key is missing.
func lookupClientCA(ctx context.Context, c kubernetes.Interface) (*x509.CertPool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	pemBytes := cm.Data["client-ca-file"]
	if pemBytes == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pemBytes)) {
		return nil, errors.New("client-ca-file holds no PEM certificate")
	}
	return pool, nil
}
