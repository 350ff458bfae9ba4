package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func testCSR(t *testing.T) (*certificatesv1.CertificateSigningRequest, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, key
}

func testCertPEM(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestCSRCreateRecordsRequestingUser(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	csr, _ := testCSR(t)
	csr.Spec.Username = "forged"
	csr.Status.Certificate = []byte("x")
	ctx := request.WithUser(context.Background(), &request.User{Name: "system:bootstrap:abcdef", UID: "u1", Groups: []string{"system:bootstrappers"}})
	r.Strategy.PrepareForCreate(ctx, csr)
	if csr.Spec.Username != "system:bootstrap:abcdef" || csr.Spec.UID != "u1" || len(csr.Spec.Groups) != 1 || csr.Spec.Groups[0] != "system:bootstrappers" {
		t.Errorf("spec user = %q %q %v", csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups)
	}
	if len(csr.Status.Certificate) != 0 {
		t.Error("status not cleared on create")
	}
	if errs := r.Strategy.Validate(ctx, csr); len(errs) != 0 {
		t.Errorf("valid CSR refused: %v", errs)
	}
}

func TestCSRValidation(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	cases := map[string]struct {
		mutate func(*certificatesv1.CertificateSigningRequest)
		field  string
	}{
		"request not PEM":   {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("junk") }, "spec.request"},
		"signerName empty":  {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, "spec.signerName"},
		"signerName no dom": {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "signer" }, "spec.signerName"},
		"no usages":         {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, "spec.usages"},
		"bad usage":         {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = []certificatesv1.KeyUsage{"fly"} }, "spec.usages[0]"},
		"short expiration": {func(c *certificatesv1.CertificateSigningRequest) {
			d := int32(60)
			c.Spec.ExpirationSeconds = &d
		}, "spec.expirationSeconds"},
		"approved and denied": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
				{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue},
				{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		}, "status.conditions[1].type"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			csr, _ := testCSR(t)
			tc.mutate(csr)
			errs := r.Strategy.Validate(context.Background(), csr)
			found := false
			for _, e := range errs {
				if e.Field == tc.field {
					found = true
				}
			}
			if !found {
				t.Errorf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}
}

func TestCSRStatusUpdateRules(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	ctx := context.Background()
	old, key := testCSR(t)
	cert := testCertPEM(t, key)

	// Approve (through /approval), then issue (through /status).
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved"}}
	r.Approval.PrepareForUpdate(ctx, approved, old)
	if errs := r.Approval.ValidateUpdate(ctx, approved, old); len(errs) != 0 {
		t.Fatalf("approval refused: %v", errs)
	}
	issued := approved.DeepCopy()
	issued.Status.Certificate = cert
	issued.Spec.SignerName = "example.com/other"
	r.Status.PrepareForUpdate(ctx, issued, approved)
	if issued.Spec.SignerName != approved.Spec.SignerName {
		t.Error("status update changed the spec")
	}
	if errs := r.Status.ValidateUpdate(ctx, issued, approved); len(errs) != 0 {
		t.Fatalf("issuing refused: %v", errs)
	}
	// Neither the approval nor the certificate can be taken back.
	unapproved := issued.DeepCopy()
	unapproved.Status.Conditions = nil
	unapproved.Status.Certificate = nil
	if errs := r.Status.ValidateUpdate(ctx, unapproved, issued); len(errs) < 2 {
		t.Errorf("removing approval and certificate: errors %v, want 2", errs)
	}
	// The main endpoint cannot change status.
	viaMain := issued.DeepCopy()
	viaMain.Status = certificatesv1.CertificateSigningRequestStatus{}
	r.Strategy.PrepareForUpdate(ctx, viaMain, issued)
	if len(viaMain.Status.Certificate) == 0 {
		t.Error("main endpoint cleared the certificate")
	}
	// Table.
	tbl, err := r.Strategy.ConvertToTable(ctx, issued, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, strings.ToUpper(c.Name))
	}
	if got := strings.Join(names, " "); got != "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION" {
		t.Errorf("columns %q", got)
	}
	if got := tbl.Rows[0].Cells[5]; got != "Approved,Issued" {
		t.Errorf("condition cell %q", got)
	}
}

// TestCSRAnyName: kube-apiserver validates no CertificateSigningRequest
// name (upstream's kubelet names its bootstrap requests
// node-csr-<base64url digest>, upper case and "_" included).
func TestCSRAnyName(t *testing.T) {
	r := certificateSigningRequests(time.Now)
	for _, name := range []string{"node-csr-17jbO1X-Om4sbWBvhagAINQo6gKY1v7fB7pbjdsspEo", "Under_Score", "csr-1"} {
		csr, _ := testCSR(t)
		csr.Name = name
		if errs := r.Strategy.Validate(context.Background(), csr); len(errs) != 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
}
