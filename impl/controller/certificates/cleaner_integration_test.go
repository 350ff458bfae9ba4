package certificates_test

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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/impl/controller/certificates"
)

// TestCleanerDeletesOldPendingKeepsFresh: against a real API server, the
// csrcleaner's first pass (once its cache has synced) deletes a pending
// request created more than 24 h ago by its clock and keeps one created
// a second later, which is still younger than 24 h; its next pass, an
// hour later by its clock, deletes that one too. The cleaner stops when
// its context ends.
func TestCleanerDeletesOldPendingKeepsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, client := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	csrs := client.CertificatesV1().CertificateSigningRequests()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) *certificatesv1.CertificateSigningRequest {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
		if err != nil {
			t.Fatal(err)
		}
		csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return csr
	}
	old := create("old")
	// Creation timestamps have a resolution of one second: wait for the
	// API server's clock to reach the next one.
	var fresh *certificatesv1.CertificateSigningRequest
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return time.Now().Truncate(time.Second).After(old.CreationTimestamp.Time), nil
	}); err != nil {
		t.Fatal(err)
	}
	fresh = create("fresh")
	if !fresh.CreationTimestamp.After(old.CreationTimestamp.Time) {
		t.Fatalf("fresh created at %v, not after old %v", fresh.CreationTimestamp, old.CreationTimestamp)
	}

	clk := clocktesting.NewFakeClock(old.CreationTimestamp.Add(certificates.PendingExpiration + 500*time.Millisecond))
	factory := informers.NewSharedInformerFactory(client, 0)
	c := certificates.NewCleaner(client, factory.Certificates().V1().CertificateSigningRequests(), clk)
	runCtx, stop := context.WithCancel(ctx)
	factory.Start(runCtx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(runCtx); err != nil {
			t.Error(err)
		}
	}()
	defer func() {
		stop()
		wg.Wait()
		factory.Shutdown()
	}()

	gone := func(name string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := csrs.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("%s not deleted: %v", name, err)
		}
	}
	gone("old")
	// The first pass is over once the cleaner waits for the next one.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := csrs.Get(ctx, "fresh", metav1.GetOptions{}); err != nil {
		t.Fatalf("fresh request after the first pass: %v", err)
	}
	clk.Step(certificates.CleanerInterval)
	gone("fresh")
}
