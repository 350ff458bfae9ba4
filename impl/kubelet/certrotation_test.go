package kubelet_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestClientCertificateRotation is --rotate-certificates against a
// `kubeproof up` cluster: the kubelet's client certificate in --cert-dir
// (signed by the cluster CA) is at 90% of a ten-minute lifetime, past its
// rotation deadline; the certificate manager asks for a new one as
// system:node:rotor, the csrapproving controller approves the renewal and
// csrsigning signs it, the new one becomes kubelet-client-current.pem
// and the kubelet, on the same client, keeps renewing its Lease and
// authenticates as the node. Everything stops with its context.
func TestClientCertificateRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(dir, "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}

	// A client certificate signed by the cluster CA nine minutes ago,
	// valid for one more: its 70-90% deadline has passed.
	caKeyPEM, err := os.ReadFile(filepath.Join(dir, "cluster", "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.ParsePrivateKeyPEM(caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:rotor", Organization: []string{"system:nodes"}},
		NotBefore: now.Add(-9 * time.Minute), NotAfter: now.Add(time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, c.CA.Cert, &key.PublicKey, caKey.(crypto.Signer))
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certDir := filepath.Join(dir, "pki")
	store, err := certificate.NewFileStore("kubelet-client", certDir, certDir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(certDir, "kubelet-client-current.pem"))
	if err != nil {
		t.Fatal(err)
	}

	m, err := kubelet.NewClientCertificateManager(certDir, "rotor", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cur := m.Current(); cur == nil || cur.Leaf.SerialNumber.Int64() != 7 {
		t.Fatalf("manager's current certificate %v, want the stored one", cur)
	}
	rotated := m.Rotated()
	cfg, err := m.ClientConfig(&rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.CertPEM}})
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{PodCIDR: "10.244.7.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	k, err := kubelet.New(kctx, nodeClient, kubelet.Config{NodeName: "rotor", PodCIDR: "10.244.7.0/24",
		CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), NodeLeaseRenewInterval: 200 * time.Millisecond}, rt)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- k.Run(kctx) }()
	go func() { done <- m.Run(kctx, nodeClient) }()

	select {
	case <-rotated:
	case <-ctx.Done():
		t.Fatal("no rotation")
	}
	rotatedAt := time.Now()

	// One CSR, by the node itself, for the kubelet client signer,
	// approved and issued by the controller manager.
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csrs.Items) != 1 {
		t.Fatalf("%d CSRs, want 1", len(csrs.Items))
	}
	csr := csrs.Items[0]
	if csr.Spec.Username != "system:node:rotor" || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Errorf("CSR requester %q signer %q", csr.Spec.Username, csr.Spec.SignerName)
	}
	cur := m.Current()
	if cur == nil || cur.Leaf.SerialNumber.Int64() == 7 || cur.Leaf.Subject.CommonName != "system:node:rotor" {
		t.Fatalf("current certificate after rotation %+v", cur)
	}
	if err := cur.Leaf.CheckSignatureFrom(c.CA.Cert); err != nil {
		t.Errorf("rotated certificate not signed by the cluster CA: %v", err)
	}
	if block, _ := pem.Decode(csr.Status.Certificate); block == nil || string(block.Bytes) != string(cur.Leaf.Raw) {
		t.Error("the current certificate is not the CSR's")
	}
	// kubelet-client-current.pem points to the new certificate's
	// kubelet-client-<timestamp>.pem (the first one's when in the same
	// second, which the store then overwrites, as upstream's).
	if ok, _ := filepath.Match(filepath.Join(certDir, "kubelet-client-????-??-??-??-??-??.pem"), first); !ok {
		t.Errorf("first certificate file %s", first)
	}
	if got, err := store.Current(); err != nil || got.Leaf.SerialNumber.Cmp(cur.Leaf.SerialNumber) != 0 {
		t.Errorf("store's current certificate %v %v, want the rotated one", got, err)
	}

	// The kubelet keeps working on its client: its Lease is renewed after
	// the rotation, and it is still the node.
	for ctx.Err() == nil {
		l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "rotor", metav1.GetOptions{})
		if err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(rotatedAt) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("Lease rotor not renewed after the rotation")
	}
	review, err := nodeClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:node:rotor" {
		t.Errorf("after rotation the kubelet's client is %+v", u)
	}

	kcancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after stop\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
