package controllermanager_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestCSRCleanerUnderRBAC runs --controllers=csrcleaner alone, as
// kube-controller-manager does with its certificate-controller service
// account under RBAC, on a clock a day and a minute ahead: the pending
// request created now is more than 24 h old to it and is deleted.
func TestCSRCleanerUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	if _, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "stale"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.CSRCleaner}
	cfg.Clock = clocktesting.NewFakeClock(time.Now().Add(24*time.Hour + time.Minute))
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, root, cmCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()
	eventually(t, "the stale request deleted", func() (bool, error) {
		_, err := csrs.Get(ctx, "stale", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
