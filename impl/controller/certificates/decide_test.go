package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newCA(t *testing.T, notAfter time.Time) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubeproof-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	ca, err := ParseCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func csrFor(t *testing.T, requester string, subject pkix.Name, ips ...net.IP) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   requester,
			Groups:     []string{"system:bootstrappers"},
		},
	}
}

var joiner = pkix.Name{CommonName: "system:node:joiner", Organization: []string{"system:nodes"}}

func TestDecideApproval(t *testing.T) {
	cases := map[string]struct {
		csr  func() *certificatesv1.CertificateSigningRequest
		want []string // the checks' subresources, in order
	}{
		"bootstrap token asks for a node": {func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:bootstrap:abcdef", joiner)
		}, []string{"nodeclient"}},
		"node renews itself": {func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:node:joiner", joiner)
		}, []string{"selfnodeclient", "nodeclient"}},
		"wrong organization": {func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "u", pkix.Name{CommonName: "system:node:joiner", Organization: []string{"system:masters"}})
		}, nil},
		"not a node name": {func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "u", pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}})
		}, nil},
		"with a SAN": {func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "u", joiner, net.ParseIP("10.0.0.1"))
		}, nil},
		"server auth usage": {func() *certificatesv1.CertificateSigningRequest {
			c := csrFor(t, "u", joiner)
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageServerAuth)
			return c
		}, nil},
		"other signer": {func() *certificatesv1.CertificateSigningRequest {
			c := csrFor(t, "u", joiner)
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
			return c
		}, nil},
		"already approved": {func() *certificatesv1.CertificateSigningRequest {
			return Approve(csrFor(t, "u", joiner), time.Now())
		}, nil},
		"denied": {func() *certificatesv1.CertificateSigningRequest {
			c := csrFor(t, "u", joiner)
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
			return c
		}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, c := range DecideApproval(tc.csr()) {
				got = append(got, c.Subresource)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("checks %v, want %v", got, tc.want)
			}
		})
	}
}

func TestApproveAppendsAutoApproved(t *testing.T) {
	c := csrFor(t, "u", joiner)
	a := Approve(c, time.Now())
	if len(c.Status.Conditions) != 0 {
		t.Error("Approve changed its input")
	}
	if !Approved(a) || a.Status.Conditions[0].Reason != ReasonAutoApproved || a.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions %+v", a.Status.Conditions)
	}
}

func TestDecideSigning(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now.Add(48*time.Hour))

	if d, err := DecideSigning(csrFor(t, "u", joiner), ca, 0, now); d != nil || err != nil {
		t.Fatalf("pending request signed: %+v %v", d, err)
	}

	approved := Approve(csrFor(t, "u", joiner), now)
	d, err := DecideSigning(approved, ca, 0, now)
	if err != nil || d == nil || d.Failed {
		t.Fatalf("decision %+v, %v", d, err)
	}
	block, _ := pem.Decode(d.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}
	if cert.Subject.CommonName != "system:node:joiner" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject %v", cert.Subject)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("ext key usage %v", cert.ExtKeyUsage)
	}
	if !cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("notAfter %v, want capped at the CA's %v", cert.NotAfter, ca.Cert.NotAfter)
	}
	if !cert.NotBefore.Before(now) {
		t.Errorf("notBefore %v not backdated", cert.NotBefore)
	}

	// expirationSeconds shortens the lifetime.
	short := approved.DeepCopy()
	e := int32(3600)
	short.Spec.ExpirationSeconds = &e
	d, _ = DecideSigning(short, ca, 0, now)
	block, _ = pem.Decode(d.Certificate)
	cert, _ = x509.ParseCertificate(block.Bytes)
	if got := cert.NotAfter.Sub(now); got > time.Hour+time.Second || got < time.Hour-time.Second {
		t.Errorf("lifetime %v, want 1h", got)
	}

	// Issued requests are left alone; invalid approved ones fail.
	issued := Apply(approved, d, now)
	if d, _ := DecideSigning(issued, ca, 0, now); d != nil {
		t.Error("issued request signed again")
	}
	bad := Approve(csrFor(t, "u", pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}), now)
	d, err = DecideSigning(bad, ca, 0, now)
	if err != nil || d == nil || !d.Failed {
		t.Fatalf("invalid approved request: %+v %v", d, err)
	}
	if f := Apply(bad, d, now); !Failed(f) || len(f.Status.Certificate) != 0 {
		t.Errorf("failed request %+v", f.Status)
	}
}

// TestSignedValidityAsPermissivePolicy: as kube-controller-manager's
// permissive signing policy, a certificate starts five minutes back; one
// of 8 hours or more ends its ttl less those five minutes after now (a
// lifetime of exactly ttl), a shorter one its ttl after now; none outlives
// the CA, and an expired CA signs nothing (an error, retried).
func TestSignedValidityAsPermissivePolicy(t *testing.T) {
	now := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	ca := newCA(t, now.Add(10*365*24*time.Hour))
	seconds := func(d time.Duration) *int32 { s := int32(d / time.Second); return &s }
	cases := map[string]struct {
		expiration *int32
		wantEnd    time.Duration // after now
	}{
		"default year":       {nil, DefaultSigningDuration - 5*time.Minute},
		"eight hours":        {seconds(8 * time.Hour), 8*time.Hour - 5*time.Minute},
		"one hour":           {seconds(time.Hour), time.Hour},
		"under ten minutes":  {seconds(time.Minute), 10 * time.Minute},
		"beyond the maximum": {seconds(2 * DefaultSigningDuration), DefaultSigningDuration - 5*time.Minute},
		"just under 8 hours": {seconds(8*time.Hour - time.Second), 8*time.Hour - time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			csr := Approve(csrFor(t, "u", joiner), now)
			csr.Spec.ExpirationSeconds = tc.expiration
			d, err := DecideSigning(csr, ca, 0, now)
			if err != nil || d == nil || d.Failed {
				t.Fatalf("decision %+v, %v", d, err)
			}
			block, _ := pem.Decode(d.Certificate)
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if want := now.Add(-5 * time.Minute); !cert.NotBefore.Equal(want) {
				t.Errorf("notBefore %v, want %v", cert.NotBefore, want)
			}
			if want := now.Add(tc.wantEnd); !cert.NotAfter.Equal(want) {
				t.Errorf("notAfter %v, want %v", cert.NotAfter, want)
			}
		})
	}

	for name, caEnd := range map[string]time.Duration{"expired before the backdate": -10 * time.Minute, "expired since the backdate": -time.Minute} {
		t.Run(name, func(t *testing.T) {
			ca := newCA(t, now.Add(caEnd))
			d, err := DecideSigning(Approve(csrFor(t, "u", joiner), now), ca, 0, now)
			want := "the signer has expired: NotAfter=" + ca.Cert.NotAfter.String()
			if caEnd > -5*time.Minute {
				want = "refusing to sign a certificate that expired in the past: NotAfter=" + ca.Cert.NotAfter.String()
			}
			if d != nil || err == nil || err.Error() != want {
				t.Errorf("decided %v, error %v; want no decision and the error %q", d != nil, err, want)
			}
		})
	}
}
