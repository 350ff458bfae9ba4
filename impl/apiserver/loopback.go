package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The server's loopback identity, as kube-apiserver's loopback client
// configuration: what the server uses to call itself (the admission
// webhooks addressed to the service default/kubernetes on port 443).
//
//   - A certificate of its own, self-signed for the name
//     LoopbackServerName and made at New (kube-apiserver generates one in
//     memory at start), which the server presents to TLS clients asking
//     for that server name, whatever its serving certificate (a
//     --tls-cert-file need not name the loopback address).
//   - A random bearer token, known to this process only, authenticating
//     as system:apiserver (a UID made at New) in the groups
//     system:authenticated and system:masters, in that order, tried
//     before every other credential (another bearer token is left to the
//     authenticators after it). Those are kube-apiserver 1.37's: its
//     AuthorizeClientBearerToken (k8s.io/apiserver pkg/server/config.go)
//     maps the token to exactly that user, and since kubernetes#127902
//     (1.32, backported to 1.29-1.31) lists system:authenticated in it
//     (before, system:masters alone, as 1.24's audit events show). Its
//     authenticated-group adder cannot add it: it wraps only the
//     configured authenticators (pkg/kubeapiserver/authenticator
//     config.go), and the token's authenticator is put in a union in
//     front of them. Ours adds system:authenticated to every user after
//     the chain, which for this user, already in it, changes nothing.
//   - The address Run listens on, an unspecified host (0.0.0.0, ::)
//     replaced by the first loopback interface address of its family
//     ("localhost" when there is none), as kube-apiserver's
//     LoopbackHostPort.

// LoopbackServerName is the TLS server name of the loopback certificate
// (kube-apiserver's LoopbackClientServerNameOverride).
const LoopbackServerName = "apiserver-loopback-client"

// APIServerUser is the user of the loopback token.
const APIServerUser = "system:apiserver"

// loopbackTokenBytes is the token's entropy (256 bits).
const loopbackTokenBytes = 32

// loopbackCertValidity is how long the loopback certificate is valid
// (kube-apiserver's self-signed one: a year).
const loopbackCertValidity = 365 * 24 * time.Hour

type loopback struct {
	token string
	user  *request.User
	cert  tls.Certificate
	roots *x509.CertPool
	// bearer reads the request's bearer token for Authenticate.
	bearer auth.BearerToken
	// addr is the host:port to call, once Run listens.
	addr atomic.Pointer[string]
}

func newLoopback() (*loopback, error) {
	b := make([]byte, loopbackTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("making the loopback token: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the loopback certificate's key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("making the loopback certificate's serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: LoopbackServerName},
		DNSNames:     []string{LoopbackServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(loopbackCertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("making the loopback certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading the loopback certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	l := &loopback{
		token: base64.RawURLEncoding.EncodeToString(b),
		user: &request.User{Name: APIServerUser, UID: string(uuid.NewUUID()),
			Groups: []string{auth.AuthenticatedGroup, bootstrappolicy.SystemMastersGroup}},
		cert:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		roots: roots,
	}
	l.bearer = auth.BearerToken{Tokens: []auth.TokenAuthenticator{l}}
	return l, nil
}

// AuthenticateToken implements auth.TokenAuthenticator. The user is
// shared: callers must not change it.
func (l *loopback) AuthenticateToken(_ context.Context, token string) (*request.User, bool, error) {
	if subtle.ConstantTimeCompare([]byte(token), []byte(l.token)) == 1 {
		return l.user, true, nil
	}
	return nil, false, nil
}

// Authenticate implements auth.Authenticator: a request carrying the
// loopback token as its bearer token is the server's own. Another bearer
// token is no error here but left to the authenticators after this one
// (kube-apiserver's union goes on past its loopback authenticator's
// refusal): with none that knows tokens, it is no credential at all.
func (l *loopback) Authenticate(r *http.Request) (*request.User, bool, error) {
	u, ok, _ := l.bearer.Authenticate(r)
	return u, ok, nil
}

// getCertificate presents the loopback certificate to clients asking for
// LoopbackServerName; others get the serving certificate.
func (l *loopback) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName == LoopbackServerName {
		return &l.cert, nil
	}
	return nil, nil
}

// listening records where Run serves.
func (l *loopback) listening(addr net.Addr) {
	hostPort := loopbackHostPort(addr.String(), net.InterfaceAddrs)
	l.addr.Store(&hostPort)
}

// loopbackHostPort is the address to call a server listening on addr at.
func loopbackHostPort(addr string, interfaceAddrs func() ([]net.Addr, error)) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
		want6 := ip.To4() == nil
		if addrs, err := interfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.IsLoopback() && (n.IP.To4() == nil) == want6 {
					host = n.IP.String()
					break
				}
			}
		}
	}
	return net.JoinHostPort(host, port)
}

// LoopbackClient is how this server is called by itself: a TLS
// configuration trusting its loopback certificate under
// LoopbackServerName, and the bearer token of its own identity.
func (s *Server) LoopbackClient() (tlsConfig *tls.Config, bearerToken string) {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.loopback.roots, ServerName: LoopbackServerName}, s.loopback.token
}

// LoopbackAddress is the host:port this server is called at by itself;
// an error until Run listens.
func (s *Server) LoopbackAddress() (string, error) {
	if a := s.loopback.addr.Load(); a != nil {
		return *a, nil
	}
	return "", errors.New("the API server is not listening yet")
}
