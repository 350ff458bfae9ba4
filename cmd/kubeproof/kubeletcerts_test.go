package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestKubeletRotatesCertificates is `kubeproof kubelet
// --rotate-certificates --rotate-server-certificates` against a cluster
// with its controller manager: its client certificate in --cert-dir is
// past its rotation deadline, so it asks for a new one, which the
// controller manager approves and signs, and it keeps renewing its Lease
// with it; it asks for a serving certificate (kubernetes.io/kubelet-serving,
// the node name and IP as SANs), which nobody approves until the test
// does, as `kubectl certificate approve` would; the kubelet API then
// serves it.
func TestKubeletRotatesCertificates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(dir, "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	// The node's client certificate, issued nine minutes ago for ten.
	caKeyPEM, err := os.ReadFile(filepath.Join(dir, "cluster", "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.ParsePrivateKeyPEM(caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:rotor", Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-9 * time.Minute), NotAfter: time.Now().Add(time.Minute),
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
	current := filepath.Join(certDir, "kubelet-client-current.pem")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CA.CertPEM}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: current, ClientKey: current}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "node"}
	kc.CurrentContext = "c"
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"kubelet", "--kubeconfig", kubeconfig, "--node-name", "rotor", "--cert-dir", certDir,
			"--rotate-certificates", "--rotate-server-certificates", "--node-lease-renew-interval", "200ms",
			"--address", "127.0.0.1", "--port", fmt.Sprint(port), "--root-dir", filepath.Join(dir, "root"), "--pod-logs-dir", filepath.Join(dir, "logs")})
		root.SetOut(new(discard))
		root.SetErr(new(discard))
		done <- root.ExecuteContext(kctx)
	}()

	// Both requests come; the client one is issued by the controller
	// manager, the serving one waits for a user.
	var serving *certificatesv1.CertificateSigningRequest
	clientIssued := false
	for ctx.Err() == nil && (serving == nil || !clientIssued) {
		l, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, csr := range l.Items {
			if csr.Spec.Username != "system:node:rotor" {
				t.Fatalf("CSR %s requested by %q", csr.Name, csr.Spec.Username)
			}
			switch csr.Spec.SignerName {
			case certificatesv1.KubeAPIServerClientKubeletSignerName:
				clientIssued = clientIssued || len(csr.Status.Certificate) > 0
			case certificatesv1.KubeletServingSignerName:
				serving = &l.Items[i]
			default:
				t.Fatalf("CSR %s for signer %s", csr.Name, csr.Spec.SignerName)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("client certificate issued %v, serving request %v", clientIssued, serving != nil)
	}
	rotatedAt := time.Now()
	if len(serving.Status.Conditions) != 0 {
		t.Fatalf("the kubelet-serving request was decided without a user: %+v", serving.Status.Conditions)
	}
	if !slices.Contains(serving.Spec.Usages, certificatesv1.UsageServerAuth) {
		t.Errorf("serving request usages %v", serving.Spec.Usages)
	}
	// Until then the kubelet API has no certificate to serve.
	tlsTo := func() (*x509.Certificate, error) {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: c.CA.Pool(), ServerName: "rotor"})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	if cert, err := tlsTo(); err == nil {
		t.Errorf("kubelet API served %v before its serving certificate was issued", cert.Subject)
	}
	serving.Status.Conditions = append(serving.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove", Message: "This CSR was approved by kubectl certificate approve.",
	})
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, serving.Name, serving, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cert *x509.Certificate
	for ctx.Err() == nil {
		if cert, err = tlsTo(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if cert == nil {
		t.Fatalf("kubelet API never served a certificate of the cluster CA: %v", err)
	}
	if cert.VerifyHostname("127.0.0.1") != nil || cert.Subject.CommonName != "system:node:rotor" {
		t.Errorf("serving certificate %v for %v %v", cert.Subject, cert.DNSNames, cert.IPAddresses)
	}
	if _, err := os.Stat(filepath.Join(certDir, "kubelet-server-current.pem")); err != nil {
		t.Errorf("serving certificate not stored: %v", err)
	}

	// The client certificate in use is the rotated one, and the kubelet
	// keeps renewing its Lease with it.
	if got, err := store.Current(); err != nil || got.Leaf.SerialNumber.Int64() == 7 {
		t.Errorf("kubelet-client-current.pem still the first certificate (%v)", err)
	}
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
	kcancel()
	if err := <-done; err != nil {
		t.Errorf("kubelet: %v", err)
	}
}

// TestKubeletConfigCertificateRotation: KubeletConfiguration's
// rotateCertificates and serverTLSBootstrap are the flags
// --rotate-certificates and --rotate-server-certificates (not warned of
// as not implemented).
func TestKubeletConfigCertificateRotation(t *testing.T) {
	f, err := applyConfigFile(t, writeKubeletConfig(t, kcHeader+"rotateCertificates: true\nserverTLSBootstrap: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"rotate-certificates", "rotate-server-certificates"} {
		if got := f.get(flag); got != "true" {
			t.Errorf("--%s = %q, want true", flag, got)
		}
	}
	if strings.Contains(f.logs, "not implemented by kubeproof") {
		t.Errorf("warned: %s", f.logs)
	}
	f, err = applyConfigFile(t, writeKubeletConfig(t, kcHeader+"maxPods: 9\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"rotate-certificates", "rotate-server-certificates"} {
		if got := f.get(flag); got != "false" {
			t.Errorf("without them --%s = %q, want false (upstream's default)", flag, got)
		}
	}
}

// TestKubeletExitsWithoutClientCertificate is `kubeproof kubelet
// --rotate-certificates` whose client certificate has expired, against
// an API server that answers (401 to its anonymous certificate requests):
// after the exit period (shortened here from upstream's 5m, checked every
// 100ms) the command returns upstream's message, as upstream's kubelet
// exits with it.
func TestKubeletExitsWithoutClientCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(dir, "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	// The node's client certificate, of the cluster CA, expired a minute ago.
	caKeyPEM, err := os.ReadFile(filepath.Join(dir, "cluster", "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.ParsePrivateKeyPEM(caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "system:node:lapsed", Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(-time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, c.CA.Cert, &key.PublicKey, caKey.(crypto.Signer))
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CA.CertPEM}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "node"}
	kc.CurrentContext = "c"
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"kubelet", "--kubeconfig", kubeconfig, "--node-name", "lapsed", "--cert-dir", filepath.Join(dir, "pki"),
			"--rotate-certificates", "--address", "127.0.0.1", "--port", fmt.Sprint(port),
			"--root-dir", filepath.Join(dir, "root"), "--pod-logs-dir", filepath.Join(dir, "logs")})
		root.SetOut(new(discard))
		root.SetErr(new(discard))
		done <- root.ExecuteContext(withClientCertExitPeriods(ctx, 2*time.Second, 100*time.Millisecond))
	}()
	select {
	case err := <-done:
		const want = "No valid client certificate is found and the server is responsive, exiting."
		if err == nil || err.Error() != want {
			t.Errorf("kubelet returned %v, want %q", err, want)
		}
	case <-ctx.Done():
		<-done // the kubelet ends with ctx: none left running
		t.Fatal("the kubelet did not exit without a valid client certificate")
	}
}
