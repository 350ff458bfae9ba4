package secureserving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
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
	// http2Streams is the concurrent stream limit of an HTTP/2
	// connection.
	http2Streams int
}

// defaultHTTP2MaxStreams is upstream secure serving's stream limit when
// --http2-max-streams-per-connection is 0 (that of HTTP/2 clients'
// initial assumption).
const defaultHTTP2MaxStreams = 100

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
	t, err := loadTrust(o)
	if err != nil {
		return nil, err
	}
	authn := &authenticator{tokenTTL: o.TokenCacheTTL}
	if o.TokenCacheTTL > 0 {
		authn.tokenCache = cache.NewLRUExpireCache(tokenCacheSize)
	}
	if o.AuthenticationKubeconfig != "" {
		c, err := clientFor(o.AuthenticationKubeconfig, "--authentication-kubeconfig")
		if err != nil {
			return nil, err
		}
		authn.tokens = c.AuthenticationV1().TokenReviews()
		if !o.AuthenticationSkipLookup {
			if err := t.lookup(ctx, c, log); err != nil {
				if !o.AuthenticationTolerateLookupFailure {
					return nil, fmt.Errorf("looking up the client CAs in kube-system/extension-apiserver-authentication (--authentication-skip-lookup or --authentication-tolerate-lookup-failure to start without): %w", err)
				}
				log.Warn("looking up the client CAs failed, starting without those not given by flags", "err", err)
			}
		}
	} else {
		log.Warn("no --authentication-kubeconfig: bearer tokens are not reviewed, requests without a client certificate are anonymous")
	}
	if authn.clientCAs, err = certPool(t.clientCA, t.clientCAFrom); err != nil {
		return nil, err
	}
	if t.requestHeader.enabled() {
		roots, err := certPool(t.requestHeaderCA, t.requestHeaderCAFrom)
		if err != nil {
			return nil, err
		}
		authn.requestHeader = newRequestHeaderAuthenticator(roots, t.requestHeader)
	}
	authz := &authorizer{alwaysAllowPaths: o.AlwaysAllowPaths, alwaysAllowGroups: o.AlwaysAllowGroups, authorizedTTL: o.AuthorizedTTL, unauthorizedTTL: o.UnauthorizedTTL}
	if o.AuthorizedTTL > 0 || o.UnauthorizedTTL > 0 {
		authz.cache = cache.NewLRUExpireCache(accessCacheSize)
	}
	if o.AuthorizationKubeconfig != "" {
		c, err := clientFor(o.AuthorizationKubeconfig, "--authorization-kubeconfig")
		if err != nil {
			return nil, err
		}
		authz.reviews = c.AuthorizationV1().SubjectAccessReviews()
	} else {
		log.Warn("no --authorization-kubeconfig: only the always-allowed paths and groups are authorized")
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	if err := tlsSettings(tlsConfig, o, log); err != nil {
		return nil, err
	}
	if authn.clientCAs != nil || authn.requestHeader != nil {
		// Verified by the authenticator, so that a bad certificate is a
		// 401 rather than a failed handshake (as upstream). The CAs are
		// named as acceptable in the handshake, as upstream's serving
		// certificate controller sets ClientCAs to the client CA and
		// front-proxy CA bundles: a client picks a certificate they sign.
		tlsConfig.ClientAuth = tls.RequestClientCert
		if tlsConfig.ClientCAs, err = certPool(slices.Concat(t.clientCA, t.requestHeaderCA), "the client CAs"); err != nil {
			return nil, err
		}
	}
	ln := o.Listener
	if ln == nil {
		var lc net.ListenConfig
		if o.PermitPortSharing || o.PermitAddressSharing {
			lc.Control = socketOptions(o.PermitPortSharing, o.PermitAddressSharing)
		}
		if ln, err = lc.Listen(ctx, "tcp", addr); err != nil {
			return nil, fmt.Errorf("listening on %s for HTTPS: %w", addr, err)
		}
	}
	streams := o.HTTP2MaxStreamsPerConnection
	if streams <= 0 {
		streams = defaultHTTP2MaxStreams
	}
	return &Server{ln: ln, tls: tlsConfig, authn: authn, authz: authz, log: log, http2Streams: streams}, nil
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
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: s.http2Streams},
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

// Sizes of the review caches, as upstream's delegating authenticator and
// webhook authorizer keep.
const (
	tokenCacheSize  = 4096
	accessCacheSize = 8192
)

// trust is what client certificates and front-proxy headers are checked
// against: PEM bundles (nil: none) and the request-header options.
type trust struct {
	clientCA, requestHeaderCA []byte
	// clientCAFrom and requestHeaderCAFrom say where the bundles came
	// from, for errors.
	clientCAFrom, requestHeaderCAFrom string
	requestHeader                     RequestHeaderOptions
}

// loadTrust reads the CA files the flags name.
func loadTrust(o *Options) (*trust, error) {
	t := &trust{requestHeader: o.RequestHeader, clientCAFrom: "--client-ca-file", requestHeaderCAFrom: "--requestheader-client-ca-file"}
	var err error
	if o.ClientCAFile != "" {
		if t.clientCA, err = os.ReadFile(o.ClientCAFile); err != nil {
			return nil, fmt.Errorf("reading --client-ca-file: %w", err)
		}
	}
	if o.RequestHeader.ClientCAFile != "" {
		if t.requestHeaderCA, err = os.ReadFile(o.RequestHeader.ClientCAFile); err != nil {
			return nil, fmt.Errorf("reading --requestheader-client-ca-file: %w", err)
		}
	}
	return t, nil
}

// certPool is the bundle's pool, nil for no bundle.
func certPool(pemBytes []byte, what string) (*x509.CertPool, error) {
	if pemBytes == nil {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("reading %s: no PEM certificate", what)
	}
	return pool, nil
}

// The ConfigMap kube-apiserver publishes its client CAs and front-proxy
// settings in, and its keys.
const (
	authConfigMapNamespace = "kube-system"
	authConfigMapName      = "extension-apiserver-authentication"
)

// lookup fills what the flags left out from the ConfigMap kube-apiserver
// publishes, as the delegating authentication options do: the client CA
// ("client-ca-file") when there is no --client-ca-file; when there is no
// --requestheader-client-ca-file, the whole front-proxy configuration
// ("requestheader-client-ca-file" and the JSON lists
// "requestheader-allowed-names", "-username-headers", "-uid-headers",
// "-group-headers", "-extra-headers-prefix"), replacing the header flags.
// A missing ConfigMap or key leaves that authentication off.
func (t *trust) lookup(ctx context.Context, c kubernetes.Interface, log *slog.Logger) error {
	if t.clientCA != nil && t.requestHeaderCA != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cm, err := c.CoreV1().ConfigMaps(authConfigMapNamespace).Get(ctx, authConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		log.Warn("no configmap " + authConfigMapNamespace + "/" + authConfigMapName + ": client certificates are not authenticated unless --client-ca-file and --requestheader-client-ca-file say how")
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w (the role %s/extension-apiserver-authentication-reader grants reading it)", err, authConfigMapNamespace)
	case err != nil:
		return err
	}
	if t.clientCA == nil {
		if ca := cm.Data["client-ca-file"]; ca != "" {
			t.clientCA, t.clientCAFrom = []byte(ca), "client-ca-file of configmap "+authConfigMapNamespace+"/"+authConfigMapName
		} else {
			log.Warn("the cluster publishes no client-ca-file: client certificate authentication is off")
		}
	}
	if t.requestHeaderCA == nil {
		ca := cm.Data["requestheader-client-ca-file"]
		if ca == "" {
			log.Warn("the cluster publishes no requestheader-client-ca-file: front-proxy authentication is off")
			return nil
		}
		rh := RequestHeaderOptions{ClientCAFile: authConfigMapName}
		for key, into := range map[string]*[]string{
			"requestheader-allowed-names":        &rh.AllowedNames,
			"requestheader-username-headers":     &rh.UsernameHeaders,
			"requestheader-uid-headers":          &rh.UIDHeaders,
			"requestheader-group-headers":        &rh.GroupHeaders,
			"requestheader-extra-headers-prefix": &rh.ExtraHeaderPrefixes,
		} {
			if v := cm.Data[key]; v != "" {
				if err := json.Unmarshal([]byte(v), into); err != nil {
					return fmt.Errorf("reading %s of configmap %s/%s: %w", key, authConfigMapNamespace, authConfigMapName, err)
				}
			}
		}
		t.requestHeaderCA, t.requestHeader = []byte(ca), rh
		t.requestHeaderCAFrom = "requestheader-client-ca-file of configmap " + authConfigMapNamespace + "/" + authConfigMapName
	}
	return nil
}
