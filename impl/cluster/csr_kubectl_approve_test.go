package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/controller/certificates"
)

// TestKubectlCertificateApproveSignsClientCertificate: in a cluster with
// the controller manager (service account credentials, as `kubeproof up`
// runs it), a system:masters user approves a kubernetes.io/kube-apiserver-client
// request the way `kubectl certificate approve` does (its KubectlApprove
// condition through /approval; the privileged group passes
// CertificateApproval), csrsigning — as system:controller:certificate-controller,
// which RBAC lets sign for that signer — issues a certificate whose
// lifetime is exactly the signing duration (backdated 5 minutes, as
// upstream's permissive signing policy), and the certificate
// authenticates as the requested user and group. A request for
// system:masters is refused by CertificateSubjectRestriction.
func TestKubectlCertificateApproveSignsClientCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, CompactionInterval: -1, ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	}()
	admin, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	request := func(name string, subject pkix.Name) *certificatesv1.CertificateSigningRequest {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
		if err != nil {
			t.Fatal(err)
		}
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}
	}

	_, err = csrs.Create(ctx, request("root", pkix.Name{CommonName: "root", Organization: []string{"system:masters"}}), metav1.CreateOptions{})
	if want := `certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("system:masters request: %v, want 403 %q", err, want)
	}

	if _, err := csrs.Create(ctx, request("alice", pkix.Name{CommonName: "alice", Organization: []string{"team"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What kubectl certificate approve sends.
	csr, err := csrs.Get(ctx, "alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved,
		Status: corev1.ConditionTrue, Reason: "KubectlApprove", Message: "This CSR was approved by kubectl certificate approve.", LastUpdateTime: metav1.Now()})
	if _, err := csrs.UpdateApproval(ctx, "alice", csr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approving as system:masters: %v", err)
	}

	for len(csr.Status.Certificate) == 0 {
		time.Sleep(50 * time.Millisecond)
		got, err := csrs.Get(ctx, "alice", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("no certificate issued (status %+v): %v", csr.Status, err)
		}
		csr = got
	}
	if certificates.Failed(csr) {
		t.Fatalf("request failed: %+v", csr.Status.Conditions)
	}
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		t.Fatalf("certificate %q is not PEM", csr.Status.Certificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(c.CA.Cert); err != nil {
		t.Errorf("not signed by the cluster CA: %v", err)
	}
	if cert.IsCA || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("certificate IsCA %v, usages %v %v", cert.IsCA, cert.KeyUsage, cert.ExtKeyUsage)
	}
	if got := cert.NotAfter.Sub(cert.NotBefore); got != certificates.DefaultSigningDuration {
		t.Errorf("lifetime %v, want %v", got, certificates.DefaultSigningDuration)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	asAlice := &rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.CertPEM, CertData: csr.Status.Certificate,
		KeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}}
	alice, err := kubernetes.NewForConfig(asAlice)
	if err != nil {
		t.Fatal(err)
	}
	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "alice" || !slices.Contains(u.Groups, "team") {
		t.Errorf("the certificate authenticates as %+v", u)
	}
}
