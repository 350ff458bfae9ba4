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
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	addrs := func(ip, host string) []corev1.NodeAddress {
		return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: host}}
	}
	serving := ServingCertificateTemplate("n1", addrs("10.0.0.1", "n1"))
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
		{"client template, certificate with SANs: matching (more than asked)", cert, ClientCertificateTemplate("n1"), now.Add(6 * time.Hour), true},
		{"client template, certificate of another node: now", cert, ClientCertificateTemplate("n2"), now, true},
		{"another node: now", cert, ServingCertificateTemplate("n2", addrs("10.0.0.1", "n2")), now, true},
		{"another address: now", cert, ServingCertificateTemplate("n1", addrs("10.0.0.2", "n1")), now, true},
		{"another host name: now", cert, ServingCertificateTemplate("n1", addrs("10.0.0.1", "n1.example")), now, true},
		{"addresses in another order: matching", cert, ServingCertificateTemplate("n1", []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}), now.Add(6 * time.Hour), true},
		// As upstream's: only what the template asks and the certificate
		// lacks makes a new request (a node that lost an address keeps its
		// certificate).
		{"certificate with more than asked: matching", cert, ServingCertificateTemplate("n1", []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}), now.Add(6 * time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nextRotation(tc.cert, tc.template, 0, now)
			if !got.Equal(tc.want) || ok != tc.ok {
				t.Errorf("nextRotation = %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestServingCertificateTemplate: the serving certificate asks for the
// node's addresses as upstream's kubelet: host names and DNS addresses
// as DNS names, IP addresses (InternalIP, ExternalIP, a Hostname that is
// one) as IP addresses, each once and sorted; nothing until the node has
// an IP address.
func TestServingCertificateTemplate(t *testing.T) {
	a := func(typ corev1.NodeAddressType, addr string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: typ, Address: addr}
	}
	for _, tc := range []struct {
		name      string
		addresses []corev1.NodeAddress
		dns, ips  []string // nil dns and ips: no request
	}{
		{"none", nil, nil, nil},
		{"empty addresses", []corev1.NodeAddress{a(corev1.NodeInternalIP, ""), a(corev1.NodeHostName, "")}, nil, nil},
		{"host name only: no IP yet", []corev1.NodeAddress{a(corev1.NodeHostName, "n1")}, nil, nil},
		{"DNS only: no IP yet", []corev1.NodeAddress{a(corev1.NodeInternalDNS, "n1.internal")}, nil, nil},
		{"InternalIP not an IP: none", []corev1.NodeAddress{a(corev1.NodeInternalIP, "n1"), a(corev1.NodeHostName, "n1")}, nil, nil},
		{"kubeproof's node", []corev1.NodeAddress{a(corev1.NodeInternalIP, "192.168.0.7"), a(corev1.NodeHostName, "node-7")},
			[]string{"node-7"}, []string{"192.168.0.7"}},
		{"a host name that is an IP", []corev1.NodeAddress{a(corev1.NodeHostName, "10.0.0.9")}, []string{}, []string{"10.0.0.9"}},
		// As upstream's, an IPv4 address with leading zeros is one.
		{"IPv4 with leading zeros", []corev1.NodeAddress{a(corev1.NodeInternalIP, "010.000.000.007"), a(corev1.NodeHostName, "n1")},
			[]string{"n1"}, []string{"10.0.0.7"}},
		{"every type, repeated, sorted", []corev1.NodeAddress{
			a(corev1.NodeExternalIP, "203.0.113.5"), a(corev1.NodeInternalIP, "10.0.0.1"), a(corev1.NodeInternalIP, "10.0.0.1"),
			a(corev1.NodeInternalIP, "fd00::1"), a(corev1.NodeHostName, "node-b"), a(corev1.NodeExternalDNS, "node.example.com"),
			a(corev1.NodeInternalDNS, "node-b"), a(corev1.NodeInternalDNS, "a.internal"), a("Other", "10.9.9.9"),
		}, []string{"a.internal", "node-b", "node.example.com"}, []string{"10.0.0.1", "203.0.113.5", "fd00::1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ServingCertificateTemplate("n1", tc.addresses)
			if tc.ips == nil {
				if got != nil {
					t.Fatalf("template %v %v, want none", got.DNSNames, got.IPAddresses)
				}
				return
			}
			if got == nil {
				t.Fatal("no template")
			}
			if got.Subject.CommonName != "system:node:n1" || !slices.Equal(got.Subject.Organization, []string{"system:nodes"}) {
				t.Errorf("subject %v", got.Subject)
			}
			if !slices.Equal(got.DNSNames, tc.dns) && (len(got.DNSNames) != 0 || len(tc.dns) != 0) {
				t.Errorf("DNS names %q, want %q", got.DNSNames, tc.dns)
			}
			if ips := ipStrings(got.IPAddresses); !slices.Equal(ips, tc.ips) {
				t.Errorf("IP addresses %q, want %q", ips, tc.ips)
			}
		})
	}
}

// TestTemplateChanged: as upstream's manager, a template that the
// certificate does not satisfy and that was not the last request's is a
// change; one already requested, or satisfied, is not.
func TestTemplateChanged(t *testing.T) {
	cert := &x509.Certificate{
		Subject:  pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		DNSNames: []string{"n1"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
	}
	tmpl := func(ips ...string) *x509.CertificateRequest {
		var addrs []corev1.NodeAddress
		for _, ip := range ips {
			addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		return ServingCertificateTemplate("n1", append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}))
	}
	for _, tc := range []struct {
		name           string
		cert           *x509.Certificate
		last, template *x509.CertificateRequest
		want           bool
	}{
		{"no template, no certificate, nothing asked", nil, nil, nil, false},
		{"first addresses", nil, nil, tmpl("10.0.0.1"), true},
		{"first addresses already asked for", nil, tmpl("10.0.0.1"), tmpl("10.0.0.1"), false},
		{"addresses changed while a request waits", nil, tmpl("10.0.0.1"), tmpl("10.0.0.2"), true},
		{"satisfied", cert, tmpl("10.0.0.1"), tmpl("10.0.0.1"), false},
		{"satisfied, another last request", cert, tmpl("10.0.0.2"), tmpl("10.0.0.1"), false},
		{"new address", cert, tmpl("10.0.0.1"), tmpl("10.0.0.1", "10.0.0.2"), true},
		{"addresses gone", cert, tmpl("10.0.0.1"), nil, false},
	} {
		if got := templateChanged(tc.cert, tc.last, tc.template); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
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
