package kubelet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestRotationDeadline: upstream's certificate manager renews at 70% to
// 90% of a certificate's lifetime, jitter choosing where.
func TestRotationDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		lifetime time.Duration
		jitter   float64
		want     time.Duration // after notBefore
	}{
		{"no jitter: 70%", 100 * time.Hour, 0, 70 * time.Hour},
		{"half: 80%", 100 * time.Hour, 0.5, 80 * time.Hour},
		{"most: just under 90%", 100 * time.Hour, 0.999, 89*time.Hour + 58*time.Minute + 48*time.Second},
		{"above 1 clamps to 90%", 100 * time.Hour, 7, 90 * time.Hour},
		{"below 0 clamps to 70%", 100 * time.Hour, -1, 70 * time.Hour},
		{"a year", 365 * 24 * time.Hour, 0.5, 292 * 24 * time.Hour},
		{"short-lived", 10 * time.Minute, 0, 7 * time.Minute},
		{"empty lifetime: at once", 0, 0.5, 0},
		{"notAfter before notBefore: at once", -time.Hour, 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RotationDeadline(start, start.Add(tc.lifetime), tc.jitter)
			if got.Sub(start) != tc.want {
				t.Errorf("deadline %v after notBefore, want %v", got.Sub(start), tc.want)
			}
		})
	}
}

// TestNextRotation: no certificate, or one that does not say what the
// template asks, is replaced now; no template asks for nothing.
func TestNextRotation(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		DNSNames:  []string{"n1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(9 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
	}
	serving := ServingCertificateTemplate("n1", []string{"10.0.0.1", "n1"})
	for _, tc := range []struct {
		name     string
		cert     *x509.Certificate
		template *x509.CertificateRequest
		want     time.Time
		ok       bool
	}{
		{"no template: nothing", cert, nil, time.Time{}, false},
		{"no certificate: now", nil, serving, now, true},
		{"matching: 70% of its lifetime", cert, serving, now.Add(-time.Hour).Add(7 * time.Hour), true},
		{"client template, certificate with SANs: differ, now", cert, ClientCertificateTemplate("n1"), now, true},
		{"another node: now", cert, ServingCertificateTemplate("n2", []string{"10.0.0.1", "n2"}), now, true},
		{"another address: now", cert, ServingCertificateTemplate("n1", []string{"10.0.0.2", "n1"}), now, true},
		{"addresses in another order: matching", cert, ServingCertificateTemplate("n1", []string{"n1", "10.0.0.1"}), now.Add(6 * time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nextRotation(tc.cert, tc.template, 0, now)
			if !got.Equal(tc.want) || ok != tc.ok {
				t.Errorf("nextRotation = %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if ServingCertificateTemplate("n1", nil) != nil || ServingCertificateTemplate("n1", []string{""}) != nil {
		t.Error("a serving template without addresses, want none (upstream waits for the node's addresses)")
	}
}

// TestClientConfigHandshakesWithRotatedCertificate: the rotating client
// presents the current certificate, and once another is in use its next
// request handshakes again and presents that one (the connections made
// with the previous one are closed, as upstream's kubelet's transport).
func TestClientConfigHandshakesWithRotatedCertificate(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64) *tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "system:node:n1"},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(der)
		return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	}
	var mu sync.Mutex
	var seen []int64 // serials presented, one per handshake
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{}"))
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, cs.PeerCertificates[0].SerialNumber.Int64())
			return nil
		}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	m, err := NewCertificateManager(CertificateManagerConfig{CertDir: t.TempDir(), Prefix: clientCertPrefix, Template: ClientCertificateTemplate("n1")})
	if err != nil {
		t.Fatal(err)
	}
	m.use(issue(10))
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg, err := m.ClientConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		t.Helper()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	get()
	rotated := m.Rotated()
	m.use(issue(11))
	select {
	case <-rotated:
	default:
		t.Error("Rotated not closed by a new certificate")
	}
	get()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 10 || seen[1] != 11 {
		t.Errorf("handshakes presented serials %v, want [10 11] (one connection per certificate)", seen)
	}
}
