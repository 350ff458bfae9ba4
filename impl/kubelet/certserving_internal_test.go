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
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestServingCertificateFollowsNodeAddresses: the serving certificate
// manager asks for the node's status addresses, as upstream's kubelet:
// nothing while the node has none, a request for them once it has, and
// when they change while that request waits for a user's approval, a new
// request for the new ones (the wait for the old one given up); the one
// issued is the certificate served. Before, the SANs were fixed from the
// flags when the manager was made.
func TestServingCertificateFollowsNodeAddresses(t *testing.T) {
	var mu sync.Mutex
	var addresses []corev1.NodeAddress
	looked := 0
	setAddresses := func(a ...corev1.NodeAddress) {
		mu.Lock()
		defer mu.Unlock()
		addresses = a
	}
	m, err := NewServingCertificateManager(ServingCertificateManagerConfig{CertDir: t.TempDir(), NodeName: "n1", Addresses: func() []corev1.NodeAddress {
		mu.Lock()
		defer mu.Unlock()
		looked++
		return slices.Clone(addresses)
	}})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var created []*x509.CertificateRequest
	var names []string
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		created = append(created, req)
		csr.Name = "csr-" + strconv.Itoa(len(created)) // the fake does not generate names
		names = append(names, csr.Name)
		return false, nil, nil // stored, pending
	})
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(created)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, client) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// No addresses: the manager keeps looking and asks for nothing.
	waitFor("the manager to look at the addresses again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return looked >= 3
	})
	if n := requests(); n != 0 {
		t.Fatalf("%d requests before the node had addresses", n)
	}

	setAddresses(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"})
	waitFor("a request for the node's addresses", func() bool { return requests() >= 1 })
	sans := func(r *x509.CertificateRequest) string {
		return strconv.Quote(r.Subject.CommonName) + " " + strconv.Quote(r.DNSNames[0]) + " " + ipStrings(r.IPAddresses)[0]
	}
	mu.Lock()
	first := created[0]
	mu.Unlock()
	if r := first; len(r.DNSNames) != 1 || len(r.IPAddresses) != 1 || sans(r) != `"system:node:n1" "n1" 10.0.0.1` {
		t.Errorf("first request for %v %v %v, want n1 and 10.0.0.1", r.Subject.CommonName, r.DNSNames, r.IPAddresses)
	}

	// The node's IP changes while that request waits for approval.
	setAddresses(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"})
	waitFor("a request for the changed addresses", func() bool { return requests() >= 2 })
	mu.Lock()
	second, name := created[1], names[1]
	mu.Unlock()
	if len(second.DNSNames) != 1 || len(second.IPAddresses) != 1 || sans(second) != `"system:node:n1" "n1" 10.0.0.2` {
		t.Errorf("second request for %v %v, want n1 and 10.0.0.2", second.DNSNames, second.IPAddresses)
	}

	// A user approves it and it is issued: it is the certificate served.
	issueCSR(t, ctx, client, name, second)
	waitFor("the issued certificate in use", func() bool { return m.Current() != nil })
	if leaf := m.Current().Leaf; !slices.Equal(ipStrings(leaf.IPAddresses), []string{"10.0.0.2"}) || !slices.Equal(leaf.DNSNames, []string{"n1"}) {
		t.Errorf("serving %v %v, want n1 and 10.0.0.2", leaf.DNSNames, leaf.IPAddresses)
	}
	if n := requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// issueCSR approves the fake's request name and sets its certificate, for
// what req asks, as a signer would.
func issueCSR(t *testing.T, ctx context.Context, client *fake.Clientset, name string, req *x509.CertificateRequest) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2),
		Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}, ca, req.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	csrs := client.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeAddressesArePosted: NodeAddresses, which the serving
// certificate asks for, are the addresses of the node status the kubelet
// posted, none before it posted one.
func TestNodeAddressesArePosted(t *testing.T) {
	h := newHarness(t, nil)
	if a := h.k.NodeAddresses(); a != nil {
		t.Fatalf("addresses %v before the node was registered", a)
	}
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	node, err := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.7"}, {Type: corev1.NodeHostName, Address: "node-7"}}
	if got := h.k.NodeAddresses(); !slices.Equal(got, want) || !slices.Equal(node.Status.Addresses, want) {
		t.Errorf("NodeAddresses %v, node status %v, want %v", got, node.Status.Addresses, want)
	}
}

// countingHandler counts the records logged with message msg.
type countingHandler struct {
	msg string
	n   *atomic.Int32
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }

// TestTemplateChangeLoggedOnce: a serving template whose request the
// API server refuses stays changed (no request made for it) at each
// second's look, but is logged as a change once. Before, each second
// logged "certificate template changed, rotating" again for as long as
// the creation was refused.
func TestTemplateChangeLoggedOnce(t *testing.T) {
	var n atomic.Int32
	logger := slog.New(countingHandler{msg: "certificate template changed, rotating", n: &n})
	m, err := NewServingCertificateManager(ServingCertificateManagerConfig{CertDir: t.TempDir(), NodeName: "n1", Addresses: func() []corev1.NodeAddress {
		return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
	}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "", errors.New("no"))
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	if err := m.Run(ctx, refusingClientset(forbidden)); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("template change logged %d times in 3.5s, want once", got)
	}
}
