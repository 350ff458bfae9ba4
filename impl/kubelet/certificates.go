package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/connrotation"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// Certificates of --cert-dir, named as upstream's kubelet names them.
const (
	// servingCertPrefix names the requested serving certificate's
	// (--rotate-server-certificates).
	servingCertPrefix = "kubelet-server"
	// certificateWaitTimeout bounds the wait for one request to be issued,
	// as upstream's certificate manager's.
	certificateWaitTimeout = 15 * time.Minute
	// rotationRetryPoll is the beat of the attempts after a failed
	// request once rotationBackoff is spent, as upstream's manager's poll.
	rotationRetryPoll = 32 * time.Second
	// rotationPeriod is the least time between two requests, as
	// upstream's manager's loop period.
	rotationPeriod = time.Second
	// templateCheckPeriod is how often a manager whose request follows
	// the node (the serving certificate's) looks at it again: for the
	// node's first addresses, and for changed ones, as upstream's
	// manager each second.
	templateCheckPeriod = time.Second
)

// rotationBackoff is upstream's manager's back-off after a failed
// request: five attempts, the waits between them 2s doubling, each up to
// 10% longer (jitter).
var rotationBackoff = wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.1, Steps: 5}

// rotationRetry is where the manager is in upstream's schedule of
// attempts after failed requests: rotationBackoff's attempts, then, when
// they all failed, one on each rotationRetryPoll beat from then on until
// one succeeds.
type rotationRetry struct {
	backoff wait.Backoff
	// pollFrom, once the back-off is spent, is when the beat started.
	pollFrom time.Time
}

// newRotationRetry is the schedule before any failure.
func newRotationRetry() rotationRetry {
	return rotationRetry{backoff: rotationBackoff}
}

// failed is when to attempt again after one that failed at now, and
// whether that failure spent the back-off (upstream logs it then). As
// upstream's: the back-off's next jittered wait from now while it has
// attempts left; after its last one, the first beat rotationRetryPoll
// later; on the beat, the first beat after now (one the attempt
// overran is skipped, as a poll's tick is while its condition runs).
// Pure but for the jitter's random draw.
func (r *rotationRetry) failed(now time.Time) (time.Time, bool) {
	if !r.pollFrom.IsZero() {
		beats := now.Sub(r.pollFrom)/rotationRetryPoll + 1
		return r.pollFrom.Add(beats * rotationRetryPoll), false
	}
	if r.backoff.Steps > 1 {
		return now.Add(r.backoff.Step()), false
	}
	r.pollFrom = now
	return now.Add(rotationRetryPoll), true
}

// succeeded starts the schedule again: the next failure waits the
// back-off's first step, as upstream's next rotation starts a new
// back-off.
func (r *rotationRetry) succeeded() {
	*r = newRotationRetry()
}

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is to be replaced, as upstream's certificate manager decides it: after
// 70% to 90% of its lifetime, jitter in [0, 1) choosing where (so nodes
// that joined together do not all renew at once). Pure.
func RotationDeadline(notBefore, notAfter time.Time, jitter float64) time.Time {
	jitter = min(max(jitter, 0), 1)
	lifetime := notAfter.Sub(notBefore)
	if lifetime <= 0 {
		return notBefore
	}
	seventy := lifetime/10*7 + lifetime%10*7/10
	return notBefore.Add(seventy + time.Duration(float64(lifetime)*0.2*jitter))
}

// nextRotation is when the manager asks for a new certificate: now when
// it has none, when its certificate does not say what template asks
// (another node name, other addresses), else RotationDeadline. A nil
// template (addresses not known yet) asks for nothing: the zero time
// with ok false. Pure.
func nextRotation(cert *x509.Certificate, template *x509.CertificateRequest, jitter float64, now time.Time) (time.Time, bool) {
	if template == nil {
		return time.Time{}, false
	}
	if cert == nil || !satisfies(cert, template) {
		return now, true
	}
	return RotationDeadline(cert.NotBefore, cert.NotAfter, jitter), true
}

// satisfies reports whether cert says what template asks: its subject
// common name, and each of its organizations, DNS names and IP addresses
// (in any order). As upstream's manager, names and addresses the
// certificate has beyond the template's do not matter: a node that lost
// an address keeps its certificate until its deadline.
func satisfies(cert *x509.Certificate, template *x509.CertificateRequest) bool {
	if cert.Subject.CommonName != template.Subject.CommonName {
		return false
	}
	covers := func(have, want []string) bool {
		for _, w := range want {
			if !slices.Contains(have, w) {
				return false
			}
		}
		return true
	}
	return covers(cert.Subject.Organization, template.Subject.Organization) &&
		covers(cert.DNSNames, template.DNSNames) &&
		covers(ipStrings(cert.IPAddresses), ipStrings(template.IPAddresses))
}

// ipStrings is each address of l in its text form.
func ipStrings(l []net.IP) []string {
	s := make([]string, len(l))
	for i, ip := range l {
		s[i] = ip.String()
	}
	return s
}

// sameRequest reports whether a and b (nil: no request) ask for the same
// subject, DNS names and IP addresses, in the same order (templates are
// built sorted).
func sameRequest(a, b *x509.CertificateRequest) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Subject.CommonName == b.Subject.CommonName &&
		slices.Equal(a.Subject.Organization, b.Subject.Organization) &&
		slices.Equal(a.DNSNames, b.DNSNames) &&
		slices.Equal(ipStrings(a.IPAddresses), ipStrings(b.IPAddresses))
}

// templateChanged is upstream's manager's check, each second, of a
// request that follows the node: the certificate (nil: none) does not
// say what template asks, and template is not what was last requested
// (nil: nothing yet). Then a wait for the next rotation, or for the last
// request to be issued, ends, and the new template is asked for. Pure.
func templateChanged(cert *x509.Certificate, lastRequested, template *x509.CertificateRequest) bool {
	satisfied := cert != nil && (template == nil || satisfies(cert, template))
	return !satisfied && !sameRequest(lastRequested, template)
}

// ClientCertificateTemplate is the request of a kubelet's client
// certificate: system:node:<nodeName> in group system:nodes.
func ClientCertificateTemplate(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: pkix.Name{CommonName: nodeUserPrefix + nodeName, Organization: []string{nodesGroup}}}
}

// ServingCertificateTemplate is the request of a kubelet's serving
// certificate for a node with addresses (its status's), as upstream's:
// system:node:<nodeName> in group system:nodes; as DNS names its
// InternalDNS and ExternalDNS addresses and its Hostname ones that are
// not IP addresses, as IP addresses its InternalIP and ExternalIP ones
// that are and its Hostname ones that are; each once, sorted. A node
// without an IP address asks for nothing yet (nil), as upstream's without
// its AllowDNSOnlyNodeCSR gate. Pure.
func ServingCertificateTemplate(nodeName string, addresses []v1.NodeAddress) *x509.CertificateRequest {
	return servingTemplate(nodeName, addresses, false)
}

// servingTemplate is ServingCertificateTemplate, allowDNSOnly being
// upstream's AllowDNSOnlyNodeCSR gate: with it, a node with DNS names but
// no IP address asks for its DNS names alone (still nothing without
// either). Pure.
func servingTemplate(nodeName string, addresses []v1.NodeAddress, allowDNSOnly bool) *x509.CertificateRequest {
	var dns, ipText []string
	for _, a := range addresses {
		if a.Address == "" {
			continue
		}
		ip := netutils.ParseIPSloppy(a.Address) // IPv4 with leading zeros too, as upstream's
		switch a.Type {
		case v1.NodeHostName:
			if ip != nil {
				ipText = append(ipText, a.Address)
			} else {
				dns = append(dns, a.Address)
			}
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip != nil {
				ipText = append(ipText, a.Address)
			}
		case v1.NodeInternalDNS, v1.NodeExternalDNS:
			dns = append(dns, a.Address)
		}
	}
	if len(ipText) == 0 && (!allowDNSOnly || len(dns) == 0) {
		return nil
	}
	slices.Sort(dns)
	dns = slices.Compact(dns)
	// Distinct as written, ordered by their canonical form, as upstream's.
	slices.Sort(ipText)
	ipText = slices.Compact(ipText)
	var ips []net.IP // nil, as upstream's, when there are none
	if len(ipText) > 0 {
		ips = make([]net.IP, len(ipText))
	}
	for i, t := range ipText {
		ips[i] = netutils.ParseIPSloppy(t)
	}
	slices.SortStableFunc(ips, func(a, b net.IP) int { return strings.Compare(a.String(), b.String()) })
	return &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: nodeUserPrefix + nodeName, Organization: []string{nodesGroup}},
		DNSNames: dns, IPAddresses: ips,
	}
}

// CertificateManagerConfig says which certificate a CertificateManager
// keeps current.
type CertificateManagerConfig struct {
	// CertDir is --cert-dir; Prefix names the files
	// (<Prefix>-<timestamp>.pem, <Prefix>-current.pem).
	CertDir, Prefix string
	// CertFile and KeyFile, when <Prefix>-current.pem is missing, are
	// the pair loaded instead (then <CertDir>/<Prefix>.crt and .key), as
	// upstream's file store's fallback: the serving certificate's
	// --tls-cert-file and --tls-private-key-file.
	CertFile, KeyFile string
	// SignerName and Template are the requests' signer and subject;
	// GetTemplate, when set, is asked for the template at each request
	// and each second (templateCheckPeriod) instead, as upstream's
	// dynamic template: nil is no request yet, another template than the
	// last requested is requested at once.
	SignerName  string
	Template    *x509.CertificateRequest
	GetTemplate func() *x509.CertificateRequest
	// Usages are the requests' key usages for their ECDSA keys.
	Usages []certificatesv1.KeyUsage
	// BootstrapCertPEM and BootstrapKeyPEM, when the store has no valid
	// certificate, are stored as the current one and replaced at once, as
	// upstream's (the kubeconfig's own client certificate).
	BootstrapCertPEM, BootstrapKeyPEM []byte
	Logger                            *slog.Logger
}

// CertificateManager keeps a certificate of --cert-dir current, as
// upstream's kubelet's certificate managers (--rotate-certificates for
// its client certificate, --rotate-server-certificates for its serving
// one): Run asks for a new one (a fresh ECDSA P-256 key, a
// CertificateSigningRequest) at nextRotation, waits for it to be issued,
// stores it with client-go's file store (<prefix>-<timestamp>.pem behind
// <prefix>-current.pem), makes it Current and closes the connections the
// clients of ClientConfig opened with the previous one.
type CertificateManager struct {
	cfg   CertificateManagerConfig
	store certificate.Store

	mu         sync.RWMutex
	cert       *tls.Certificate
	force      bool // rotate at once, until one is issued (a bootstrap certificate)
	transports []rotatingTransport
	// rotated is closed and replaced at each new certificate (tests wait
	// on it).
	rotated chan struct{}
	// metrics are the renewal errors and rotations /metrics reports
	// (its NotAfter unused: Current's is).
	metrics server.CertificateManagerMetrics
	// serverHealthy is whether the API server is taken as responsive
	// (ServerHealthy).
	serverHealthy bool
	// lastRequest is the template of the last request created, and
	// lastCancel ends the wait for it to be issued (templateChanged).
	lastRequest *x509.CertificateRequest
	lastCancel  context.CancelFunc
	// templateChanged (one slot) wakes Run when the template changed.
	templateChanged chan struct{}
}

// rotatingTransport is a client transport of ClientConfig and the dialer
// of its connections.
type rotatingTransport struct {
	transport *http.Transport
	dialer    *connrotation.Dialer
}

// NewCertificateManager opens cfg.CertDir's store and loads its current
// certificate, if any.
func NewCertificateManager(cfg CertificateManagerConfig) (*CertificateManager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	store, err := certificate.NewFileStore(cfg.Prefix, cfg.CertDir, cfg.CertDir, cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("opening the %s certificate store in %s: %w", cfg.Prefix, cfg.CertDir, err)
	}
	m := &CertificateManager{cfg: cfg, store: store, rotated: make(chan struct{}), templateChanged: make(chan struct{}, 1)}
	cert, err := store.Current()
	var none *certificate.NoCertKeyError
	switch {
	case errors.As(err, &none):
	case err != nil:
		return nil, fmt.Errorf("loading the current %s certificate of %s: %w", cfg.Prefix, cfg.CertDir, err)
	default:
		m.cert = cert
	}
	if (m.cert == nil || !time.Now().Before(m.cert.Leaf.NotAfter)) && len(cfg.BootstrapCertPEM) > 0 {
		if m.cert, err = store.Update(cfg.BootstrapCertPEM, cfg.BootstrapKeyPEM); err != nil {
			return nil, fmt.Errorf("storing the bootstrap %s certificate in %s: %w", cfg.Prefix, cfg.CertDir, err)
		}
		m.force = true
	}
	return m, nil
}

// Current is the certificate in use: nil when there is none yet or it
// has expired.
func (m *CertificateManager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.cert == nil || m.cert.Leaf == nil || !time.Now().Before(m.cert.Leaf.NotAfter) {
		return nil
	}
	return m.cert
}

// Rotated is closed when the next certificate is in use.
func (m *CertificateManager) Rotated() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.rotated
}

// ServingCertificate is tls.Config.GetCertificate for the kubelet API:
// the current certificate at each handshake.
func (m *CertificateManager) ServingCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.Current(); c != nil {
		return c, nil
	}
	return nil, errors.New("no serving certificate available for the kubelet")
}

// ClientConfig is base authenticating with the current certificate: each
// TLS handshake presents Current, and the connections are closed when it
// changes, so the next request handshakes with the new one (as upstream's
// kubelet's client transport). base's own client certificate is not used.
func (m *CertificateManager) ClientConfig(base *rest.Config) (*rest.Config, error) {
	cfg := rest.CopyConfig(base)
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the rotating client's TLS configuration: %w", err)
	}
	if tlsConfig == nil {
		return nil, errors.New("certificate rotation needs an https API server")
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := m.Current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil // no certificate: the server decides
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         dialer.DialContext,
	})
	m.mu.Lock()
	m.transports = append(m.transports, rotatingTransport{transport, dialer})
	m.mu.Unlock()
	cfg.Transport = transport
	// A custom transport carries the TLS settings itself.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg, nil
}

// template is the request to make now (nil: none yet).
func (m *CertificateManager) template() *x509.CertificateRequest {
	if m.cfg.GetTemplate != nil {
		return m.cfg.GetTemplate()
	}
	return m.cfg.Template
}

// Run rotates the certificate until ctx ends, asking with client; it
// returns nil then. A failed request is retried as upstream's manager
// does (rotationRetry: a jittered back-off from 2s for five attempts,
// then every 32s); an issued one is followed by the next request a second later at
// the earliest (upstream's loop period), even when what was issued does
// not satisfy the template and is asked for again at once. Without a
// template yet it looks again each second; with GetTemplate, a changed
// template is asked for at once (watchTemplate).
func (m *CertificateManager) Run(ctx context.Context, client kubernetes.Interface) error {
	if m.cfg.GetTemplate != nil {
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { m.watchTemplate(wctx) })
	}
	retry := newRotationRetry() // the schedule after failed requests
	var notBefore time.Time     // no request before then
	for {
		var leaf *x509.Certificate
		m.mu.Lock()
		if c := m.cert; c != nil && !m.force {
			leaf = c.Leaf
		}
		m.mu.Unlock()
		now := time.Now()
		at, ok := nextRotation(leaf, m.template(), mathrand.Float64(), now)
		if !ok {
			at = now.Add(templateCheckPeriod) // no template yet: look again
		}
		at = later(at, notBefore)
		if wait := at.Sub(now); wait > 0 {
			if ok {
				m.cfg.Logger.Debug("waiting for the next certificate rotation", "certificate", m.cfg.Prefix, "deadline", at)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-m.templateChanged:
				t.Stop()
				continue
			case <-t.C:
			}
		}
		if !ok {
			continue
		}
		if err := m.rotate(ctx, client); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			now := time.Now()
			at, spent := retry.failed(now)
			notBefore = at
			m.cfg.Logger.Error("rotating certificate", "certificate", m.cfg.Prefix, "err", err, "retry", at.Sub(now))
			if spent {
				m.cfg.Logger.Error("Reached backoff limit, still unable to rotate certs", "certificate", m.cfg.Prefix, "retryEvery", rotationRetryPoll)
			}
			continue
		}
		retry.succeeded()
		notBefore = time.Now().Add(rotationPeriod)
	}
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// watchTemplate looks at the template every templateCheckPeriod until
// ctx ends; when it changed (templateChanged), it ends the wait for the
// last request to be issued and wakes Run, as upstream's manager. The
// change is logged once per template: while its request cannot be made
// (a refused creation keeps the last request the old one) it stays a
// change each second, which is no news.
func (m *CertificateManager) watchTemplate(ctx context.Context) {
	t := time.NewTicker(templateCheckPeriod)
	defer t.Stop()
	var logged *x509.CertificateRequest // the last change logged
	loggedAny := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		template := m.template()
		var leaf *x509.Certificate
		m.mu.RLock()
		if m.cert != nil {
			leaf = m.cert.Leaf
		}
		last, cancel := m.lastRequest, m.lastCancel
		m.mu.RUnlock()
		if !templateChanged(leaf, last, template) {
			continue
		}
		if !loggedAny || !sameRequest(logged, template) {
			m.cfg.Logger.Info("certificate template changed, rotating", "certificate", m.cfg.Prefix)
			logged, loggedAny = template, true
		}
		if cancel != nil {
			cancel()
		}
		select {
		case m.templateChanged <- struct{}{}:
		default: // Run has not yet taken the last one
		}
	}
}

// Metrics is what /metrics reports of m: the current certificate's
// expiry, the failed requests, and the ages of the certificates
// replaced (now less their NotBefore, as upstream's manager observes).
func (m *CertificateManager) Metrics() server.CertificateManagerMetrics {
	m.mu.RLock()
	s := m.metrics
	s.RotationBuckets = maps.Clone(s.RotationBuckets)
	m.mu.RUnlock()
	if c := m.Current(); c != nil {
		s.NotAfter = c.Leaf.NotAfter
	}
	return s
}

// rotate is request, counting its failures and the replaced
// certificate's age.
func (m *CertificateManager) rotate(ctx context.Context, client kubernetes.Interface) error {
	m.mu.RLock()
	old := m.cert
	m.mu.RUnlock()
	err := m.request(ctx, client)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.metrics.RenewErrors++
		}
	case old != nil && old.Leaf != nil:
		age := time.Since(old.Leaf.NotBefore).Seconds()
		m.metrics.Rotations++
		m.metrics.RotationSeconds += age
		if m.metrics.RotationBuckets == nil {
			m.metrics.RotationBuckets = map[float64]uint64{}
		}
		for _, b := range server.CertificateRotationBuckets {
			if age <= b {
				m.metrics.RotationBuckets[b]++
			}
		}
	}
	return err
}

// request asks for a certificate of the template for a fresh key, waits
// for it, stores it and puts it in use. What the API server answered to
// the CertificateSigningRequest's creation, and an issued certificate,
// say whether it is responsive (ServerAnswered).
func (m *CertificateManager) request(ctx context.Context, client kubernetes.Interface) error {
	template := m.template()
	if template == nil {
		return errors.New("no certificate template yet")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating a key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
	if err != nil {
		return fmt.Errorf("creating a certificate request: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the key: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, certificateWaitTimeout)
	defer cancel()
	reqPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, reqPEM, "", m.cfg.SignerName, nil, m.cfg.Usages, key)
	if err != nil {
		m.mu.Lock()
		m.serverHealthy = ServerAnswered(err)
		m.mu.Unlock()
		return fmt.Errorf("creating a CertificateSigningRequest for signer %s: %w", m.cfg.SignerName, err)
	}
	m.mu.Lock()
	m.lastRequest, m.lastCancel = template, cancel
	m.mu.Unlock()
	m.cfg.Logger.Info("certificate requested", "certificate", m.cfg.Prefix, "csr", name)
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return fmt.Errorf("waiting for CertificateSigningRequest %s: %w", name, err)
	}
	cert, err := m.store.Update(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return fmt.Errorf("storing the certificate of CertificateSigningRequest %s: %w", name, err)
	}
	m.use(cert)
	m.cfg.Logger.Info("certificate rotated", "certificate", m.cfg.Prefix, "csr", name, "notAfter", cert.Leaf.NotAfter)
	return nil
}

// use makes cert the current certificate and closes the connections
// made with the previous one, so the next requests handshake with cert.
// A certificate issued says the API server is responsive.
func (m *CertificateManager) use(cert *tls.Certificate) {
	m.mu.Lock()
	m.cert, m.force, m.serverHealthy = cert, false, true
	transports := slices.Clone(m.transports)
	close(m.rotated)
	m.rotated = make(chan struct{})
	m.mu.Unlock()
	for _, t := range transports {
		// Idle connections leave the pool before the next request picks
		// one; busy ones (watches) are cut, their clients start again.
		t.transport.CloseIdleConnections()
		t.dialer.CloseAll()
	}
}

// NewClientCertificateManager is --rotate-certificates' manager: the
// client certificate of system:node:<nodeName> from the
// kubernetes.io/kube-apiserver-client-kubelet signer, in certDir's
// kubelet-client-current.pem; bootstrapCertPEM and bootstrapKeyPEM (the
// kubeconfig's) are used when certDir has none, and replaced at once.
func NewClientCertificateManager(certDir, nodeName string, bootstrapCertPEM, bootstrapKeyPEM []byte, logger *slog.Logger) (*CertificateManager, error) {
	return NewCertificateManager(CertificateManagerConfig{
		CertDir: certDir, Prefix: clientCertPrefix,
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		Template:         ClientCertificateTemplate(nodeName),
		Usages:           []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		BootstrapCertPEM: bootstrapCertPEM, BootstrapKeyPEM: bootstrapKeyPEM,
		Logger: logger,
	})
}

// ServingCertificateManagerConfig says which serving certificate
// NewServingCertificateManager keeps current.
type ServingCertificateManagerConfig struct {
	// CertDir is --cert-dir, NodeName the node's name.
	CertDir, NodeName string
	// Addresses are the node's addresses the request asks for (as
	// upstream's kubelet, those of the last node status it posted).
	Addresses func() []v1.NodeAddress
	// TLSCertFile and TLSKeyFile are --tls-cert-file and
	// --tls-private-key-file: the certificate served until one is issued.
	TLSCertFile, TLSKeyFile string
	// AllowDNSOnlyNodeCSR is upstream's (deprecated) gate of that name:
	// a node with DNS names but no IP address asks for a certificate of
	// its DNS names alone, instead of nothing until it has an IP.
	AllowDNSOnlyNodeCSR bool
	Logger              *slog.Logger
}

// NewServingCertificateManager is serverTLSBootstrap's
// (--rotate-server-certificates) manager: the kubelet API's certificate
// from the kubernetes.io/kubelet-serving signer for the node's addresses
// (ServingCertificateTemplate of what cfg.Addresses returns: none, or
// no IP address without cfg.AllowDNSOnlyNodeCSR, is no request yet;
// changed ones a new request), in cfg.CertDir's
// kubelet-server-current.pem. Until that exists, as upstream's, the
// certificate is --tls-cert-file's (cfg.TLSCertFile and TLSKeyFile, else
// cert-dir's kubelet-server.crt and .key), served while valid and
// replaced at once unless it is already what the request would ask.
// Nothing approves such requests but a user (kubectl certificate
// approve), as upstream.
func NewServingCertificateManager(cfg ServingCertificateManagerConfig) (*CertificateManager, error) {
	return NewCertificateManager(CertificateManagerConfig{
		CertDir: cfg.CertDir, Prefix: servingCertPrefix,
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile,
		SignerName: certificatesv1.KubeletServingSignerName,
		GetTemplate: func() *x509.CertificateRequest {
			return servingTemplate(cfg.NodeName, cfg.Addresses(), cfg.AllowDNSOnlyNodeCSR)
		},
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		Logger: cfg.Logger,
	})
}

// ClientCertificateExitAfter is how long the kubelet goes on without a
// valid client certificate before it exits, as upstream's kubelet passes
// its rotating client transport (5m); ClientCertificateCheckPeriod is how often it
// looks, as upstream's transport.
const (
	ClientCertificateExitAfter   = 5 * time.Minute
	ClientCertificateCheckPeriod = 10 * time.Second
)

// ClientCertificateExit decides whether the kubelet exits for want of a
// client certificate, as upstream's rotating transport: when it has had
// no valid one (none, or expired) for longer than exitAfter since
// lastValid and the API server answers its requests (serverHealthy); an
// unanswering server only logs, a restart being what might help. The
// message is upstream's (its structured one, the times in the log's
// attributes); "" is no exit. Pure.
func ClientCertificateExit(now, lastValid time.Time, valid, serverHealthy bool, exitAfter time.Duration) string {
	if valid || exitAfter <= 0 || !now.After(lastValid.Add(exitAfter)) || !serverHealthy {
		return ""
	}
	return "No valid client certificate is found and the server is responsive, exiting."
}

// ServerAnswered is what the error of a CertificateSigningRequest's
// creation says of the API server, as upstream's certificate manager
// reads it: responsive when it answered 401 Unauthorized (a TLS
// terminating proxy may answer so for it), 403 Forbidden or 404 Not
// Found; not when the answer was not the API server's (not a Status: a
// proxy's or load balancer's) or any other error (no answer, another
// status). Pure.
func ServerAnswered(err error) bool {
	switch {
	case apierrors.IsUnauthorized(err):
		return true
	case apierrors.IsUnexpectedServerError(err):
		return false
	default:
		return apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
	}
}

// ServerHealthy is whether m takes the API server as responsive, as
// upstream's manager: not until it has asked, then as the last
// CertificateSigningRequest creation's answer says (ServerAnswered), and
// yes once a certificate was issued. A wait for a request to be issued
// that fails changes nothing.
func (m *CertificateManager) ServerHealthy() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.serverHealthy
}

// WatchExpiry checks every period whether the kubelet must exit for want
// of a client certificate (ClientCertificateExit), returning that error
// then, or nil when ctx ends; the API server is responsive as
// ServerHealthy says.
func (m *CertificateManager) WatchExpiry(ctx context.Context, exitAfter, period time.Duration) error {
	lastValid := time.Now()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := time.Now()
		valid := m.Current() != nil
		if valid {
			lastValid = now
		}
		healthy := m.ServerHealthy()
		if msg := ClientCertificateExit(now, lastValid, valid, healthy, exitAfter); msg != "" {
			m.cfg.Logger.Error(msg, "lastCertificateAvailabilityTime", lastValid, "shutdownThreshold", exitAfter)
			return errors.New(msg)
		} else if !valid && now.After(lastValid.Add(exitAfter)) {
			m.cfg.Logger.Error("No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
				"lastCertificateAvailabilityTime", lastValid, "shutdownThreshold", exitAfter)
		}
	}
}

// NodeAddresses are the node's addresses in the last status this kubelet
// posted (none before its first), which its serving certificate's
// request asks for, as upstream's kubelet's last observed addresses.
func (k *Kubelet) NodeAddresses() []v1.NodeAddress {
	if a := k.addresses.Load(); a != nil {
		return *a
	}
	return nil
}
