package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// approvedFor is an approved request for signer with usages and the
// given subject alternative names.
func approvedFor(t *testing.T, signer string, subject pkix.Name, usages []certificatesv1.KeyUsage, dns []string, ips ...net.IP) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	c := csrFor(t, "u", subject)
	c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	c.Spec.SignerName = signer
	c.Spec.Usages = usages
	return Approve(c, time.Now())
}

func issuedCert(t *testing.T, d *SignDecision) *x509.Certificate {
	t.Helper()
	if d == nil || d.Failed {
		t.Fatalf("decision %+v, want a certificate", d)
	}
	block, _ := pem.Decode(d.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	n1            = pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
)

// TestSignsKubeAPIServerClient: kubernetes.io/kube-apiserver-client
// requests get a client certificate for any subject, with usages limited
// to digital signature, key encipherment and (required) client auth, as
// kube-controller-manager's csrsigning-kube-apiserver-client.
func TestSignsKubeAPIServerClient(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now.Add(48*time.Hour))
	alice := pkix.Name{CommonName: "alice", Organization: []string{"devs"}}
	d, err := DecideSigning(approvedFor(t, certificatesv1.KubeAPIServerClientSignerName, alice, clientUsages, nil), ca, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	cert := issuedCert(t, d)
	if cert.Subject.CommonName != "alice" || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) ||
		cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || cert.IsCA {
		t.Errorf("certificate subject %v ext usages %v usages %v CA %v", cert.Subject, cert.ExtKeyUsage, cert.KeyUsage, cert.IsCA)
	}
	for usages, want := range map[string]struct {
		u   []certificatesv1.KeyUsage
		msg string
	}{
		"server auth":    {[]certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}, "invalid usage for client certificate: server auth"},
		"no client auth": {[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, "missing required usage for client certificate: client auth"},
	} {
		d, err := DecideSigning(approvedFor(t, certificatesv1.KubeAPIServerClientSignerName, alice, want.u, nil), ca, 0, now)
		if err != nil || d == nil || !d.Failed || d.Message != want.msg {
			t.Errorf("%s: decision %+v %v, want Failed %q", usages, d, err, want.msg)
		}
	}
}

// TestSignsKubeletServing: kubernetes.io/kubelet-serving requests get a
// serving certificate with their DNS and IP names when the subject is a
// node's and the usages are exactly the serving ones, as
// csrsigning-kubelet-serving; otherwise Failed with upstream's messages.
func TestSignsKubeletServing(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now.Add(48*time.Hour))
	ip := net.ParseIP("10.0.0.7")
	d, err := DecideSigning(approvedFor(t, certificatesv1.KubeletServingSignerName, n1, servingUsages, []string{"n1"}, ip), ca, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	cert := issuedCert(t, d)
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || !slices.Equal(cert.DNSNames, []string{"n1"}) ||
		len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(ip) {
		t.Errorf("certificate ext usages %v DNS %v IPs %v", cert.ExtKeyUsage, cert.DNSNames, cert.IPAddresses)
	}
	cases := map[string]struct {
		subject pkix.Name
		usages  []certificatesv1.KeyUsage
		dns     []string
		msg     string
	}{
		"no names":     {n1, servingUsages, nil, "DNS or IP subjectAltName is required"},
		"client usage": {n1, clientUsages, []string{"n1"}, "usages did not match [digital signature key encipherment server auth]"},
		"not nodes":    {pkix.Name{CommonName: "system:node:n1", Organization: []string{"devs"}}, servingUsages, []string{"n1"}, "subject organization is not system:nodes"},
		"not a node":   {pkix.Name{CommonName: "n1", Organization: []string{"system:nodes"}}, servingUsages, []string{"n1"}, "subject common name does not begin with system:node:"},
	}
	for name, tc := range cases {
		d, err := DecideSigning(approvedFor(t, certificatesv1.KubeletServingSignerName, tc.subject, tc.usages, tc.dns), ca, 0, now)
		if err != nil || d == nil || !d.Failed || d.Message != tc.msg {
			t.Errorf("%s: decision %+v %v, want Failed %q", name, d, err, tc.msg)
		}
	}
}

// TestKubeletClientRules: the kubelet client signer's checks and the
// approver's are upstream's ValidateKubeletClientCSR: usages exactly
// {digital signature, client auth} with or without key encipherment.
func TestKubeletClientRules(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now.Add(48*time.Hour))
	onlyClientAuth := []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
	c := csrFor(t, "system:bootstrap:abcdef", joiner)
	c.Spec.Usages = onlyClientAuth
	if got := DecideApproval(c); got != nil {
		t.Errorf("client auth alone: approval check %+v, want none", got)
	}
	c.Spec.Usages = clientUsages
	if got := DecideApproval(c); len(got) != 1 || got[0].Subresource != "nodeclient" {
		t.Errorf("with key encipherment: approval check %+v, want nodeclient", got)
	}
	d, err := DecideSigning(approvedFor(t, certificatesv1.KubeAPIServerClientKubeletSignerName, joiner, onlyClientAuth, nil), ca, 0, now)
	if want := "usages did not match [client auth digital signature key encipherment]"; err != nil || d == nil || !d.Failed || d.Message != want {
		t.Errorf("client auth alone: decision %+v %v, want Failed %q", d, err, want)
	}
	d, err = DecideSigning(approvedFor(t, certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "system:node:joiner", Organization: []string{"system:masters"}}, clientUsages, nil), ca, 0, now)
	if want := "subject organization is not system:nodes"; err != nil || d == nil || !d.Failed || d.Message != want {
		t.Errorf("system:masters: decision %+v %v, want Failed %q", d, err, want)
	}
	// Signers kube-controller-manager does not run are left alone.
	if d, err := DecideSigning(approvedFor(t, "example.com/signer", joiner, clientUsages, nil), ca, 0, now); d != nil || err != nil {
		t.Errorf("example.com/signer: decision %+v %v, want none", d, err)
	}
}
