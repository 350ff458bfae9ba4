package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestBootstrapCertificateRotationRetried: the kubeconfig's own
// certificate (a bootstrap one, valid for a year) is replaced at once,
// and a failed request is asked again after the back-off, as upstream's
// manager keeps rotating until it succeeds; it is not put off to the
// bootstrap certificate's own deadline months later.
func TestBootstrapCertificateRotationRetried(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := ClientCertificateTemplate("n1")
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: tmpl.Subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(365 * 24 * time.Hour),
	}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: tmpl.Subject}, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	m, err := NewClientCertificateManager(t.TempDir(), "n1",
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var creates atomic.Int32
	second := make(chan struct{})
	client.PrependReactor("create", "certificatesigningrequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) == 2 {
			close(second)
		}
		return true, nil, errors.New("refused")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, client) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d request(s) in 30s; want a second one after the first was refused", creates.Load())
	}
}

// TestRotationsAtLeastASecondApart: a certificate issued without what the
// request asked (here another common name) is asked for again, but as
// upstream's manager loop (its one-second period) not within a second of
// the previous request; before, the requests followed each other at once.
func TestRotationsAtLeastASecondApart(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	m, err := NewClientCertificateManager(t.TempDir(), "n1", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var mu sync.Mutex
	var at []time.Time
	twice := make(chan struct{})
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		if len(at) == 2 {
			close(twice)
		}
		// Issued at once, to system:node:someone-else.
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(int64(len(at) + 1)),
			Subject:   pkix.Name{CommonName: "system:node:someone-else", Organization: []string{"system:nodes"}},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}, caTmpl, req.PublicKey, caKey)
		if err != nil {
			return true, nil, err
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		return false, nil, nil // stored by the fake's tracker
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, client) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-twice:
	case <-time.After(30 * time.Second):
		t.Fatal("no second request in 30s")
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := at[1].Sub(at[0]); gap < time.Second {
		t.Errorf("second request %v after the first, want at least 1s", gap)
	}
}
