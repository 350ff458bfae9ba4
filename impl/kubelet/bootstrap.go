package kubelet

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
)

// Node identity of a kubelet's client certificate.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// Client certificate files of --cert-dir, as upstream's kubelet names them.
const (
	// clientKeyTmpFile keeps the bootstrap request's key until its
	// certificate is issued.
	clientKeyTmpFile = "kubelet-client.key.tmp"
	// DefaultCertDir is --cert-dir's default.
	DefaultCertDir = "/var/lib/kubelet/pki"
	// clientCertPrefix names the client certificate files:
	// kubelet-client-<timestamp>.pem and kubelet-client-current.pem.
	clientCertPrefix = "kubelet-client"
)

// Bootstrap is TLS bootstrapping (the kubelet's --bootstrap-kubeconfig):
// when kubeconfigPath does not exist or its client certificate is missing,
// unreadable or expired, it authenticates with bootstrapPath's credentials
// (normally a bootstrap token), waits up to a minute for the API server
// to answer /healthz (waitForAPIServer), asks for a client certificate for
// system:node:<nodeName> in group system:nodes with a
// CertificateSigningRequest for the kubernetes.io/kube-apiserver-client-kubelet
// signer (bootstrapKey: the key of cert-dir's current pair, expired
// or not, else an ECDSA P-256 key kept in <certDir>/kubelet-client.key.tmp
// until the certificate is issued; the request named from it, so a
// restarted kubelet waits for its pending request, as upstream's), waits
// for it to be issued, and writes
// the certificate and key, as upstream's kubelet, to
// <certDir>/kubelet-client-<timestamp>.pem (mode 0600) behind the symlink
// kubelet-client-current.pem (client-go's certificate file store, which
// --rotate-certificates then keeps current), and kubeconfigPath naming
// that file, with bootstrapPath's server and certificate authority. It
// returns once kubeconfigPath holds a valid certificate; a denied or
// failed request is an error.
func Bootstrap(ctx context.Context, kubeconfigPath, bootstrapPath, certDir, nodeName string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ok, why := validKubeconfig(kubeconfigPath, time.Now())
	if ok {
		return nil
	}
	logger.Info("bootstrapping client certificate", "node", nodeName, "reason", why)
	bootCfg, err := clientcmd.BuildConfigFromFlags("", bootstrapPath)
	if err != nil {
		return fmt.Errorf("loading bootstrap kubeconfig %s: %w", bootstrapPath, err)
	}
	client, err := kubernetes.NewForConfig(bootCfg)
	if err != nil {
		return fmt.Errorf("building bootstrap client: %w", err)
	}
	store, err := certificate.NewFileStore(clientCertPrefix, certDir, certDir, "", "")
	if err != nil {
		return fmt.Errorf("opening the client certificate store in %s: %w", certDir, err)
	}
	keyPEM, err := bootstrapKey(store, certDir)
	if err != nil {
		return err
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("reading the client key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return errors.New("the client key cannot sign")
	}
	// As upstream's, a server that never answers is only logged: the
	// request is made anyway, and fails or waits on its own.
	if err := waitForAPIServer(ctx, bootCfg, bootstrapServerWait, logger); err != nil {
		logger.Info("Error waiting for apiserver to come up", "err", err)
	}
	certPEM, err := requestClientCertificate(ctx, client, key, nodeName)
	if err != nil {
		return err
	}
	caPEM, err := caData(bootCfg)
	if err != nil {
		return err
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("storing the client certificate in %s: %w", certDir, err)
	}
	keyPath := filepath.Join(certDir, clientKeyTmpFile)
	if err := os.Remove(keyPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the stored client key %s: %w", keyPath, err)
	}
	certPath, err := filepath.Abs(store.CurrentPath())
	if err != nil {
		return fmt.Errorf("storing the client certificate in %s: %w", certDir, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default-cluster"] = &clientcmdapi.Cluster{Server: bootCfg.Host, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: certPath, ClientKey: certPath}
	cfg.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	cfg.CurrentContext = "default-context"
	if err := os.MkdirAll(filepath.Dir(kubeconfigPath), 0o755); err != nil {
		return fmt.Errorf("creating the kubeconfig's directory: %w", err)
	}
	// Written to a temporary file and renamed, so a crash never leaves a
	// half-written kubeconfig behind.
	tmp := kubeconfigPath + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Rename(tmp, kubeconfigPath); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	logger.Info("client certificate issued", "node", nodeName, "kubeconfig", kubeconfigPath, "certificate", certPath)
	return nil
}

// How the bootstrap waits for the API server before asking, as
// upstream's kubelet: /healthz at once and then every healthzPollPeriod
// (up to healthzPollJitter longer) after each answer, each attempt given
// healthzAttemptTimeout, for bootstrapServerWait at most (a variable for
// tests).
const (
	healthzPollPeriod     = 2 * time.Second
	healthzPollJitter     = 0.2
	healthzAttemptTimeout = time.Second
)

var bootstrapServerWait = time.Minute

// errAPIServerWait is waitForAPIServer's error when the server did not
// answer in time: upstream's words.
var errAPIServerWait = errors.New("timed out waiting to connect to apiserver")

// waitForAPIServer asks cfg's server for /healthz (with cfg's
// credentials, as upstream's bootstrap) until it answers with success or
// deadline has passed (or ctx ended): nil once it answered, else
// errAPIServerWait. Each failed attempt is logged with upstream's
// "Failed to connect to apiserver".
func waitForAPIServer(ctx context.Context, cfg *rest.Config, deadline time.Duration, logger *slog.Logger) error {
	hc := rest.CopyConfig(cfg)
	hc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	hc.Timeout = healthzAttemptTimeout
	cli, err := rest.UnversionedRESTClientFor(hc)
	if err != nil {
		return fmt.Errorf("couldn't create client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	for ctx.Err() == nil {
		_, err := cli.Get().AbsPath("/healthz").Do(ctx).Raw()
		if err == nil {
			return nil
		}
		logger.Info("Failed to connect to apiserver", "err", err)
		t := time.NewTimer(wait.Jitter(healthzPollPeriod, healthzPollJitter))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return errAPIServerWait
}

// bootstrapKey is the key a bootstrap asks with, as upstream's: the key
// of store's current pair when it has one (its certificate expired or
// not: a kubelet whose certificate expired keeps its key), else the one
// kept in <certDir>/kubelet-client.key.tmp, made there when missing; it
// waits there until its certificate is issued and names the request, so
// a kubelet restarted while its request is pending waits for that
// request rather than making another. A pair that cannot be loaded, or
// whose key cannot be encoded, is passed over as upstream's does.
func bootstrapKey(store certificate.Store, certDir string) ([]byte, error) {
	if pair, err := store.Current(); err == nil && pair.PrivateKey != nil {
		if keyPEM, err := keyutil.MarshalPrivateKeyToPEM(pair.PrivateKey); err == nil {
			if _, err := keyutil.ParsePrivateKeyPEM(keyPEM); err == nil {
				return keyPEM, nil
			}
		}
	}
	keyPath := filepath.Join(certDir, clientKeyTmpFile)
	keyPEM, _, err := keyutil.LoadOrGenerateKeyFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("loading or generating the client key %s: %w", keyPath, err)
	}
	return keyPEM, nil
}

// validKubeconfig reports whether path is a kubeconfig whose client
// certificate can be loaded and has not expired at now (and why not).
func validKubeconfig(path string, now time.Time) (bool, string) {
	if _, err := os.Stat(path); err != nil {
		return false, "kubeconfig " + path + " not found"
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return false, "kubeconfig unreadable: " + err.Error()
	}
	certPEM := restCfg.CertData
	if len(certPEM) == 0 && restCfg.CertFile != "" {
		if certPEM, err = os.ReadFile(restCfg.CertFile); err != nil {
			return false, "client certificate unreadable: " + err.Error()
		}
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false, "kubeconfig has no client certificate"
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false, "client certificate unreadable: " + err.Error()
	}
	if !now.Before(cert.NotAfter) {
		return false, "client certificate expired at " + cert.NotAfter.String()
	}
	return true, ""
}

// requestClientCertificate creates the CSR, named from key and what it
// asks (bootstrapCSRName), or finds the one made before with the same
// key, and waits until it is issued.
func requestClientCertificate(ctx context.Context, client kubernetes.Interface, key crypto.Signer, nodeName string) ([]byte, error) {
	subject := pkix.Name{CommonName: nodeUserPrefix + nodeName, Organization: []string{nodesGroup}}
	usages := bootstrapUsages(key)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate request: %w", err)
	}
	name, err := bootstrapCSRName(key.Public(), subject, usages)
	if err != nil {
		return nil, err
	}
	reqPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	name, _, err = csr.RequestCertificateWithContext(ctx, client, reqPEM, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return nil, fmt.Errorf("creating CertificateSigningRequest: %w", err)
	}
	return waitForCertificate(ctx, client, name)
}

// bootstrapUsages are the key usages a bootstrap request asks for with
// key, as upstream's bootstrap: digital signature and client auth, then
// key encipherment for an RSA key only (an ECDSA key, the one a kubelet
// makes, cannot encipher). The order matters: it is part of the request's
// name (bootstrapCSRName). Pure.
func bootstrapUsages(key crypto.Signer) []certificatesv1.KeyUsage {
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if _, ok := key.(*rsa.PrivateKey); ok {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	return usages
}

// bootstrapCSRName is the bootstrap request's name, byte for byte as
// upstream's kubelet names it, so the same key asking the same again
// names the same request (a restarted kubelet finds its pending one):
// node-csr- and the unpadded base64url SHA-512/256 of, in this order, the
// key's PKIX public key, the subject's common name, each organization and
// each usage, every one written unpadded-base64url-encoded and followed
// by "|" (a byte outside that alphabet, so no two inputs run together
// into the same stream). Pure.
func bootstrapCSRName(pub crypto.PublicKey, subject pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding the client public key: %w", err)
	}
	h := sha512.New512_256()
	field := func(b []byte) {
		h.Write([]byte(base64.RawURLEncoding.EncodeToString(b)))
		h.Write([]byte{'|'})
	}
	field(der)
	field([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		field([]byte(o))
	}
	for _, u := range usages {
		field([]byte(u))
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

// waitForCertificate watches CSR name until it carries a certificate, or
// is denied or failed.
func waitForCertificate(ctx context.Context, client kubernetes.Interface, name string) ([]byte, error) {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	// Wrapped as client-go's own wait for a certificate wraps it, so a
	// client that cannot stream a watch's initial list (a fake) is listed.
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return csrs.List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return csrs.Watch(ctx, opts)
		},
	}, client)
	var certPEM []byte
	var refused error
	_, err := watchtools.UntilWithSync(ctx, lw, &certificatesv1.CertificateSigningRequest{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("CertificateSigningRequest %s was deleted", name)
		}
		csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
		if !ok {
			return false, nil
		}
		for _, c := range csr.Status.Conditions {
			switch c.Type {
			case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
				refused = fmt.Errorf("CertificateSigningRequest %s is %s: %s %s", name, c.Type, c.Reason, c.Message)
				return true, nil
			}
		}
		if len(csr.Status.Certificate) > 0 {
			certPEM = csr.Status.Certificate
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for CertificateSigningRequest %s: %w", name, err)
	}
	if refused != nil {
		return nil, refused
	}
	return certPEM, nil
}

// caData is the PEM certificate authority of cfg.
func caData(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the bootstrap kubeconfig's certificate authority: %w", err)
		}
		return b, nil
	}
	return nil, errors.New("the bootstrap kubeconfig has no certificate authority")
}
