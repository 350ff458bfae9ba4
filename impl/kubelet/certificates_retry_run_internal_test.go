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
	"log/slog"
	"math/big"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// retryRecorder is a slog handler keeping the retry wait of each
// "rotating certificate" error the manager logs.
type retryRecorder struct {
	mu      sync.Mutex
	retries []time.Duration
}

func (r *retryRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *retryRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *retryRecorder) WithGroup(string) slog.Handler            { return r }
func (r *retryRecorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "rotating certificate" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "retry" {
			r.mu.Lock()
			r.retries = append(r.retries, a.Value.Duration())
			r.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestRunFollowsTheRetrySchedule: Run itself waits as rotationRetry
// decides (TestRotationRetrySchedule checks that decision alone): after
// two failed requests it waits the back-off's 2s then 4s (each up to 10%
// longer); a success starts the schedule again, so the failure after it
// waits 2s, not 8s.
func TestRunFollowsTheRetrySchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the back-off (about 7s)")
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	rec := &retryRecorder{}
	m, err := NewClientCertificateManager(t.TempDir(), "n1", nil, nil, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var creates atomic.Int32
	fourth := make(chan struct{})
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		n := creates.Add(1)
		switch n {
		case 3: // issued at once, to someone else: asked again a second later
		default:
			if n == 4 {
				close(fourth)
			}
			return true, nil, errors.New("refused by the test")
		}
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2),
			Subject:   pkix.Name{CommonName: "system:node:someone-else", Organization: []string{"system:nodes"}},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}, caTmpl, req.PublicKey, caKey)
		if err != nil {
			return true, nil, err
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, client) }()
	select {
	case <-fourth:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d requests in 60s, want 4", creates.Load())
	}
	logged := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.retries)
	}
	for deadline := time.Now().Add(10 * time.Second); logged() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []time.Duration{2 * time.Second, 4 * time.Second, 2 * time.Second}
	if len(rec.retries) != len(want) {
		t.Fatalf("retries logged %v, want %d (two failures, a success, a failure)", rec.retries, len(want))
	}
	for i, base := range want {
		// The wait is taken from the decision's now; the log's a moment
		// later, so allow it to be under the base by that moment.
		if d := rec.retries[i]; d < base-100*time.Millisecond || d >= base+base/10 {
			t.Errorf("retry %d waited %v, want in [%v, %v)", i+1, d, base, base+base/10)
		}
	}
}

// managerGoroutines are the stacks of goroutines running a
// CertificateManager's code.
func managerGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "kubelet.(*CertificateManager)") {
			out = append(out, g)
		}
	}
	return out
}

// TestRunStopsInTheRetryWait: a manager in its back-off after failed
// requests (the serving one, whose template watcher runs beside) stops
// when its context ends: Run returns without a further request, and none
// of its goroutines is left.
func TestRunStopsInTheRetryWait(t *testing.T) {
	m, err := NewServingCertificateManager(ServingCertificateManagerConfig{CertDir: t.TempDir(), NodeName: "n1",
		Addresses: func() []corev1.NodeAddress {
			return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var creates atomic.Int32
	second := make(chan struct{})
	client.PrependReactor("create", "certificatesigningrequests", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if creates.Add(1) == 2 {
			close(second)
		}
		return true, nil, errors.New("refused by the test")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, client) }()
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d requests in 30s, want 2", creates.Load())
	}
	cancel() // in the 4s wait after the second failure
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return in 30s after its context ended")
	}
	if n := creates.Load(); n != 2 {
		t.Errorf("%d requests, want none after the context ended", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(managerGoroutines()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := managerGoroutines(); len(left) > 0 {
		t.Errorf("%d manager goroutines left after Run returned:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
