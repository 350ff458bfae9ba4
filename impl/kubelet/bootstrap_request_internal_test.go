package kubelet

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// bootstrapRequestOf is the CertificateSigningRequest a bootstrap of node
// with key creates (its creation refused, so it asks once).
func bootstrapRequestOf(t *testing.T, key crypto.Signer, node string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	client := fake.NewClientset()
	var created *certificatesv1.CertificateSigningRequest
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest).DeepCopy()
		return true, nil, errors.New("refused by the test")
	})
	if _, err := requestClientCertificate(context.Background(), client, key, node); err == nil {
		t.Fatal("bootstrap request succeeded though its creation was refused")
	}
	if created == nil {
		t.Fatal("no CertificateSigningRequest created")
	}
	return created
}

// TestBootstrapRequestUsages: the bootstrap request asks for upstream
// 1.37's usages, which depend on the key: digital signature and client
// auth for the ECDSA key a kubelet makes, key encipherment after them for
// an RSA key (one reused from cert-dir's pair or kubelet-client.key.tmp).
// Before, key encipherment was never asked for.
func TestBootstrapRequestUsages(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  crypto.Signer
		want []certificatesv1.KeyUsage
	}{
		{"ECDSA P-256", ecKey, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
		{"RSA", rsaKey, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageKeyEncipherment}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bootstrapRequestOf(t, tc.key, "n1")
			if !slices.Equal(got.Spec.Usages, tc.want) {
				t.Errorf("usages %q, want %q", got.Spec.Usages, tc.want)
			}
			if got.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
				t.Errorf("signer %q", got.Spec.SignerName)
			}
		})
	}
}
