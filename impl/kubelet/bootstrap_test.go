package kubelet_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestTLSBootstrapJoinsNode is a kubelet joining with a bootstrap token:
// against a `kubeproof up` cluster with no nodes, a kubelet holding only a
// bootstrap kubeconfig asks for its client certificate, the csrapproving
// controller approves the request and csrsigning signs it, the written
// kubeconfig authenticates as system:node:joiner, and the kubelet then
// registers Node joiner with that identity.
func TestTLSBootstrapJoinsNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(dir, "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true, Auth: cluster.AuthOptions{EnableBootstrapTokenAuth: true}})
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
	if _, err := admin.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Type: "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
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
	if err := kubelet.Bootstrap(ctx, kubeconfigPath, bootPath, certDir, "joiner", nil); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}

	// One CSR, requested by the bootstrap token user, auto-approved and issued.
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csrs.Items) != 1 {
		t.Fatalf("%d CSRs, want 1", len(csrs.Items))
	}
	csr := csrs.Items[0]
	if csr.Spec.Username != "system:bootstrap:abcdef" || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Errorf("CSR requester %q signer %q", csr.Spec.Username, csr.Spec.SignerName)
	}
	approved := false
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Reason == "AutoApproved" && cond.Status == corev1.ConditionTrue {
			approved = true
		}
	}
	if !approved || len(csr.Status.Certificate) == 0 {
		t.Fatalf("CSR status %+v", csr.Status)
	}
	block, _ := pem.Decode(csr.Status.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(c.CA.Cert); err != nil {
		t.Errorf("certificate not signed by the cluster CA: %v", err)
	}
	if st, err := os.Stat(kubeconfigPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig %v %v, want mode 0600", st, err)
	}

	// As upstream's kubelet: the certificate and key are one file of
	// --cert-dir, kubelet-client-<timestamp>.pem (0600), behind the symlink
	// kubelet-client-current.pem the kubeconfig names.
	checkClientCertFiles(t, certDir, kubeconfigPath, csr.Status.Certificate)

	// The written kubeconfig is the node's identity.
	nodeCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := nodeClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:node:joiner" || !contains(u.Groups, "system:nodes") {
		t.Fatalf("new kubeconfig authenticates as %+v", u)
	}
	// With a valid kubeconfig in place, a second bootstrap asks for nothing.
	if err := kubelet.Bootstrap(ctx, kubeconfigPath, bootPath, certDir, "joiner", nil); err != nil {
		t.Fatal(err)
	}
	if l, _ := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); len(l.Items) != 1 {
		t.Errorf("%d CSRs after a second bootstrap, want still 1", len(l.Items))
	}

	// The kubelet runs with it and registers its Node.
	rt, err := sim.New(sim.Config{PodCIDR: "10.244.9.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	kctx, kcancel := context.WithCancel(ctx)
	k, err := kubelet.New(kctx, nodeClient, kubelet.Config{NodeName: "joiner", PodCIDR: "10.244.9.0/24",
		CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi")}, rt)
	if err != nil {
		kcancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(kctx) }()
	var node *corev1.Node
	for node == nil && ctx.Err() == nil {
		n, err := nodeClient.CoreV1().Nodes().Get(ctx, "joiner", metav1.GetOptions{})
		switch {
		case err == nil:
			node = n
		case !apierrors.IsNotFound(err):
			t.Errorf("getting Node joiner as the node: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	kcancel()
	<-done
	if node == nil {
		t.Fatal("Node joiner was not registered")
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

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkClientCertFiles checks cert-dir's client certificate layout:
// kubelet-client-current.pem a symlink to a kubelet-client-<timestamp>.pem
// of mode 0600 holding certPEM and a key, named by the kubeconfig.
func checkClientCertFiles(t *testing.T, certDir, kubeconfigPath string, certPEM []byte) {
	t.Helper()
	current := filepath.Join(certDir, "kubelet-client-current.pem")
	target, err := os.Readlink(current)
	if err != nil {
		t.Fatalf("%s is not a symlink: %v", current, err)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(certDir, target)
	}
	if ok, _ := filepath.Match(filepath.Join(certDir, "kubelet-client-????-??-??-??-??-??.pem"), target); !ok {
		t.Errorf("kubelet-client-current.pem points to %s, want %s/kubelet-client-<timestamp>.pem", target, certDir)
	}
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s mode %v, want 0600", target, st.Mode().Perm())
	}
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, bytes.TrimSpace(certPEM)) || !bytes.Contains(data, []byte("PRIVATE KEY")) {
		t.Errorf("%s holds no issued certificate and key:\n%s", target, data)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, ai := range kc.AuthInfos {
		if ai.ClientCertificate != current || ai.ClientKey != current || len(ai.ClientCertificateData) > 0 || len(ai.ClientKeyData) > 0 {
			t.Errorf("kubeconfig user %s: client-certificate %q client-key %q (embedded %d/%d bytes), want both %s", name,
				ai.ClientCertificate, ai.ClientKey, len(ai.ClientCertificateData), len(ai.ClientKeyData), current)
		}
	}
}
