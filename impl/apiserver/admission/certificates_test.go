package admission

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

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// signerGrants allows exactly the listed "verb name" pairs on
// certificates.k8s.io signers, and records what it was asked.
type signerGrants struct {
	allow []string
	asked []string
}

func (g *signerGrants) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	i := a.Info
	if !i.IsResourceRequest || i.APIGroup != certificatesv1.GroupName || i.Resource != "signers" || i.APIVersion != "*" || a.User.Name != "approver" {
		return auth.DecisionNoOpinion, "", nil
	}
	g.asked = append(g.asked, i.Verb+" "+i.Name)
	if slices.Contains(g.allow, i.Verb+" "+i.Name) {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "", nil
}

func csrUpdate(sub string, obj, old *certificatesv1.CertificateSigningRequest) *Attributes {
	return &Attributes{Operation: Update, Resource: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"),
		Kind: certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), Subresource: sub,
		Name: old.Name, Object: obj, OldObject: old, User: &request.User{Name: "approver"}}
}

func pendingCSR(signer string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
}

// TestCertificateApprovalNeedsApproveOnSigner: an /approval update needs
// approve on the stored request's signer, by name or "<domain>/*", as
// kube-apiserver's CertificateApproval; other writes are not its concern.
func TestCertificateApprovalNeedsApproveOnSigner(t *testing.T) {
	old := pendingCSR("example.com/signer")
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	// The signer the request claims now is not the one checked.
	approved.Spec.SignerName = "other.example/mine"
	const refused = `certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: user not permitted to approve requests with signerName "example.com/signer"`
	cases := map[string]struct {
		allow []string
		authz bool
		sub   string
		want  string
		asked []string
	}{
		"no permission":        {authz: true, sub: "approval", want: refused, asked: []string{"approve example.com/signer", "approve example.com/*"}},
		"by name":              {allow: []string{"approve example.com/signer"}, authz: true, sub: "approval", asked: []string{"approve example.com/signer"}},
		"by domain":            {allow: []string{"approve example.com/*"}, authz: true, sub: "approval", asked: []string{"approve example.com/signer", "approve example.com/*"}},
		"sign is not it":       {allow: []string{"sign example.com/signer"}, authz: true, sub: "approval", want: refused, asked: []string{"approve example.com/signer", "approve example.com/*"}},
		"no authorizer":        {sub: "approval", want: refused},
		"status":               {authz: true, sub: "status"},
		"main update":          {authz: true, sub: ""},
		"new signer unchecked": {allow: []string{"approve other.example/mine"}, authz: true, sub: "approval", want: refused, asked: []string{"approve example.com/signer", "approve example.com/*"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := &signerGrants{allow: tc.allow}
			p := &CertificateApproval{}
			if tc.authz {
				p.Authorizer = g
			}
			err := p.Validate(context.Background(), csrUpdate(tc.sub, approved, old))
			if tc.want == "" {
				wantForbidden(t, err, "")
			} else if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !slices.Equal(g.asked, tc.asked) {
				t.Errorf("asked %q, want %q", g.asked, tc.asked)
			}
		})
	}
}

// TestCertificateSigningNeedsSignOnSigner: a /status update that changes
// the certificate (an empty one where none is stored included) needs sign
// on the stored request's signer, as kube-apiserver's CertificateSigning;
// one that changes anything else (a Failed condition, a label) does not.
func TestCertificateSigningNeedsSignOnSigner(t *testing.T) {
	old := pendingCSR("kubernetes.io/kube-apiserver-client-kubelet")
	issued := old.DeepCopy()
	issued.Status.Certificate = []byte("cert")
	failed := old.DeepCopy()
	failed.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}}
	emptyCert := old.DeepCopy()
	emptyCert.Status.Certificate = []byte{}
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	const refused = `certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client-kubelet"`
	cases := map[string]struct {
		obj   *certificatesv1.CertificateSigningRequest
		sub   string
		allow []string
		want  string
	}{
		"certificate, no permission": {obj: issued, sub: "status", want: refused},
		"certificate, by name":       {obj: issued, sub: "status", allow: []string{"sign kubernetes.io/kube-apiserver-client-kubelet"}},
		"certificate, by domain":     {obj: issued, sub: "status", allow: []string{"sign kubernetes.io/*"}},
		"failed, no permission":      {obj: failed, sub: "status"},
		"empty certificate":          {obj: emptyCert, sub: "status", want: refused},
		"approve is not it":          {obj: issued, sub: "status", allow: []string{"approve kubernetes.io/*"}, want: refused},
		"label only":                 {obj: labelled, sub: "status"},
		"approval subresource":       {obj: failed, sub: "approval"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &CertificateSigning{Authorizer: &signerGrants{allow: tc.allow}}
			err := p.Validate(context.Background(), csrUpdate(tc.sub, tc.obj, old))
			if tc.want == "" {
				wantForbidden(t, err, "")
			} else if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func csrRequestPEM(t *testing.T, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "someone", Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestCertificateSubjectRestriction: creating a kube-apiserver-client
// request for a system:masters subject is refused, as kube-apiserver's
// CertificateSubjectRestriction; other signers and groups pass.
func TestCertificateSubjectRestriction(t *testing.T) {
	create := func(signer string, request []byte) *Attributes {
		csr := pendingCSR(signer)
		csr.Spec.Request = request
		return &Attributes{Operation: Create, Resource: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"),
			Kind: certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), Name: csr.Name, Object: csr}
	}
	masters := csrRequestPEM(t, "team", "system:masters")
	p := CertificateSubjectRestriction{}
	err := p.Validate(context.Background(), create(certificatesv1.KubeAPIServerClientSignerName, masters))
	if want := `certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`; err == nil || err.Error() != want {
		t.Errorf("system:masters for kube-apiserver-client: error %v, want %q", err, want)
	}
	wantForbidden(t, p.Validate(context.Background(), create(certificatesv1.KubeAPIServerClientSignerName, csrRequestPEM(t, "team"))), "")
	wantForbidden(t, p.Validate(context.Background(), create("example.com/signer", masters)), "")
	wantForbidden(t, p.Validate(context.Background(), create(certificatesv1.KubeAPIServerClientSignerName, []byte("junk"))), "failed to parse CSR: PEM block type must be CERTIFICATE REQUEST")
}

// TestCertificatePluginsOnByDefault: the three run by default, after
// RuntimeClass, as in kube-apiserver's plugin order.
func TestCertificatePluginsOnByDefault(t *testing.T) {
	d := DefaultPlugins()
	i := slices.Index(d, "RuntimeClass")
	if i < 0 || len(d) < i+4 || !slices.Equal(d[i+1:i+4], []string{"CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"}) {
		t.Errorf("default plugins %v", d)
	}
}
