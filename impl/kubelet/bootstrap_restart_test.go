package kubelet_test

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// TestBootstrapRestartWaitsForItsPendingRequest is upstream's kubelet
// restarted while its bootstrap request waits for approval: the key is
// kept in <cert-dir>/kubelet-client.key.tmp and names the request, so the
// restarted bootstrap finds the same request (approved meanwhile) instead
// of making another with a new key; the key file is removed once the
// certificate is stored.
func TestBootstrapRestartWaitsForItsPendingRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// No controller manager: only the test approves and signs.
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(dir, "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Auth: cluster.AuthOptions{EnableBootstrapTokenAuth: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Type: "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As kubeadm's binding (the cluster makes it only with its controller
	// manager): bootstrap token users may ask; nothing approves.
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:kubelet-bootstrap"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:bootstrappers"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	boot := clientcmdapi.NewConfig()
	boot.Clusters["c"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CA.CertPEM}
	boot.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"}
	boot.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "bootstrap"}
	boot.CurrentContext = "c"
	bootPath, kubeconfigPath := filepath.Join(dir, "bootstrap-kubelet.conf"), filepath.Join(dir, "kubelet", "kubelet.conf")
	if err := clientcmd.WriteToFile(*boot, bootPath); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "kubelet", "pki")

	// The first start asks, and stops before anyone answers.
	listCSRs := func() []certificatesv1.CertificateSigningRequest {
		t.Helper()
		l, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	firstCtx, stopFirst := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { first <- kubelet.Bootstrap(firstCtx, kubeconfigPath, bootPath, certDir, "restarted", nil) }()
	for len(listCSRs()) == 0 {
		select {
		case err := <-first:
			t.Fatalf("the first bootstrap ended before asking: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stopFirst()
	if err := <-first; err == nil {
		t.Fatal("the first bootstrap returned without a certificate")
	}
	if st, err := os.Stat(filepath.Join(certDir, "kubelet-client.key.tmp")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubelet-client.key.tmp after the first start: %v %v, want mode 0600", st, err)
	}

	// Meanwhile a user approves it and the signer signs it.
	pending := listCSRs()
	if len(pending) != 1 {
		t.Fatalf("%d requests after the first start, want 1", len(pending))
	}
	req := pending[0]
	req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test",
	})
	approved, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, req.Name, &req, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(approved.Spec.Request)
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(dir, "cluster", "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.ParsePrivateKeyPEM(caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(nil, &x509.Certificate{SerialNumber: big.NewInt(42), Subject: cr.Subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, c.CA.Cert, cr.PublicKey, caKey.(crypto.Signer))
	if err != nil {
		t.Fatal(err)
	}
	approved.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, approved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The restarted kubelet takes that certificate.
	secondCtx, stopSecond := context.WithTimeout(ctx, 30*time.Second)
	defer stopSecond()
	if err := kubelet.Bootstrap(secondCtx, kubeconfigPath, bootPath, certDir, "restarted", nil); err != nil {
		t.Fatalf("restarted bootstrap: %v (requests: %d)", err, len(listCSRs()))
	}
	if n := len(listCSRs()); n != 1 {
		t.Errorf("%d requests after the restart, want the first one only", n)
	}
	if _, err := os.Stat(filepath.Join(certDir, "kubelet-client.key.tmp")); !os.IsNotExist(err) {
		t.Errorf("kubelet-client.key.tmp still there once the certificate is stored: %v", err)
	}
	checkClientCertFiles(t, certDir, kubeconfigPath, approved.Status.Certificate)
}
