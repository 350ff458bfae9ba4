package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestCSRApprovalNeedsSignerPermission: in a cluster as `kubeproof up`
// starts it (Node,RBAC, the default admission plugins), a user allowed to
// update certificatesigningrequests/approval still cannot approve until
// RBAC also grants approve on the request's signer (the synthetic
// certificates.k8s.io resource signers, here by "<domain>/*"), as
// kube-apiserver's CertificateApproval plugin; and /status cannot approve
// at all.
func TestCSRApprovalNeedsSignerPermission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, CompactionInterval: -1})
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
	asApprover := rest.CopyConfig(c.AdminConfig)
	asApprover.Impersonate = rest.ImpersonationConfig{UserName: "approver"}
	approver, err := kubernetes.NewForConfig(asApprover)
	if err != nil {
		t.Fatal(err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "someone"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "someone"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "example.com/signer", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approved := csr.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "ByHand"}}

	// /status cannot approve, whoever asks.
	_, err = csrs.UpdateStatus(ctx, approved, metav1.UpdateOptions{})
	if want := `CertificateSigningRequest.certificates.k8s.io "someone" is invalid: status.conditions: Forbidden: updates may not add a condition of type "Approved"`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("approving through /status: %v, want 422 %q", err, want)
	}

	rbac := admin.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "csr-approver"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"update"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "csr-approver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "csr-approver"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "approver"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Allowed to update /approval (once RBAC's cache has the binding), but
	// not to approve for the signer.
	const refused = `certificatesigningrequests.certificates.k8s.io "someone" is forbidden: user not permitted to approve requests with signerName "example.com/signer"`
	approveUntil := func(done func(error) bool) error {
		for {
			_, err := approver.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "someone", approved, metav1.UpdateOptions{})
			if done(err) || ctx.Err() != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	err = approveUntil(func(err error) bool { return err != nil && err.Error() == refused })
	if err == nil || err.Error() != refused || !apierrors.IsForbidden(err) {
		t.Fatalf("approving without approve on the signer: %v, want 403 %q", err, refused)
	}

	role, err := rbac.ClusterRoles().Get(ctx, "csr-approver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{Verbs: []string{"approve"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})
	if _, err := rbac.ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := approveUntil(func(err error) bool { return err == nil }); err != nil {
		t.Fatalf("approving with approve on example.com/*: %v", err)
	}
	got, err := csrs.Get(ctx, "someone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved || got.Status.Conditions[0].LastUpdateTime.IsZero() {
		t.Errorf("conditions after approval: %+v", got.Status.Conditions)
	}
}
