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
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// TestCertificateManagerMetrics: the kubelet API's /metrics serves
// upstream's certificate manager metrics per node (ALPHA, upstream's
// names, types, help texts and buckets): the client certificate's TTL
// and renewal errors, the serving certificate's TTL (+Inf before it has
// one), renewal errors and rotation ages (observed when a certificate is
// replaced, not for the first). Before, there were none.
func TestCertificateManagerMetrics(t *testing.T) {
	h, _ := eventHarness(t)
	k := h.newKubelet(nil)
	node := k.NodeName()

	// The client manager starts from a bootstrap certificate valid for
	// a day; the serving one has none yet.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := ClientCertificateTemplate(node)
	notAfter := time.Now().Add(24 * time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: tmpl.Subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
	}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: tmpl.Subject}, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	clientMgr, err := NewClientCertificateManager(dir, node,
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil)
	if err != nil {
		t.Fatal(err)
	}
	servingMgr, err := NewServingCertificateManager(ServingCertificateManagerConfig{CertDir: dir, NodeName: node, Addresses: func() []corev1.NodeAddress {
		return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.7"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	k.SetCertificateManagers(clientMgr, servingMgr)
	mux := server.NewMux(server.Options{})
	mux.Add(k)
	metrics := func() map[string]string {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		got := map[string]string{}
		for _, l := range strings.Split(w.Body.String(), "\n") {
			if strings.Contains(l, "certificate_manager") || strings.Contains(l, "kubelet_server_expiration") {
				name, value, _ := strings.Cut(l, " ")
				if strings.HasPrefix(l, "#") {
					name, value = l, ""
				}
				got[name] = value
			}
		}
		return got
	}
	lbl := `{node="` + node + `"}`
	heads := []string{
		"# HELP kubelet_certificate_manager_client_ttl_seconds [ALPHA] Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.",
		"# TYPE kubelet_certificate_manager_client_ttl_seconds gauge",
		"# HELP kubelet_certificate_manager_client_expiration_renew_errors [ALPHA] Counter of certificate renewal errors.",
		"# TYPE kubelet_certificate_manager_client_expiration_renew_errors counter",
		"# HELP kubelet_certificate_manager_server_ttl_seconds [ALPHA] Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF.",
		"# TYPE kubelet_certificate_manager_server_ttl_seconds gauge",
		"# HELP kubelet_certificate_manager_server_rotation_seconds [ALPHA] Histogram of the number of seconds the previous certificate lived before being rotated.",
		"# TYPE kubelet_certificate_manager_server_rotation_seconds histogram",
		"# HELP kubelet_server_expiration_renew_errors [ALPHA] Counter of certificate renewal errors.",
		"# TYPE kubelet_server_expiration_renew_errors counter",
	}
	got := metrics()
	for _, hd := range heads {
		if _, ok := got[hd]; !ok {
			t.Errorf("no %q in /metrics", hd)
		}
	}
	ttl, err := strconv.ParseFloat(got["kubelet_certificate_manager_client_ttl_seconds"+lbl], 64)
	if want := time.Until(notAfter).Seconds(); err != nil || ttl > want+1 || ttl < want-60 {
		t.Errorf("client TTL %v (%v), want about %v", ttl, err, want)
	}
	for name, want := range map[string]string{
		"kubelet_certificate_manager_server_ttl_seconds" + lbl:                                      "+Inf",
		"kubelet_certificate_manager_client_expiration_renew_errors" + lbl:                          "0",
		"kubelet_server_expiration_renew_errors" + lbl:                                              "0",
		"kubelet_certificate_manager_server_rotation_seconds_count" + lbl:                           "0",
		`kubelet_certificate_manager_server_rotation_seconds_bucket{node="` + node + `",le="60"}`:   "0",
		`kubelet_certificate_manager_server_rotation_seconds_bucket{node="` + node + `",le="+Inf"}`: "0",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}

	// A refused client request counts as a client renewal error.
	refusing := fake.NewClientset()
	refusing.PrependReactor("create", "certificatesigningrequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("refused")
	})
	if err := clientMgr.rotate(context.Background(), refusing); err == nil {
		t.Fatal("rotation with a refusing API server succeeded")
	}
	// Two serving certificates issued: the second replaces the first.
	for range 2 {
		// A clientset each: the fake's watches do not select by name.
		if err := servingMgr.rotate(context.Background(), issuingClientset(t)); err != nil {
			t.Fatal(err)
		}
	}
	got = metrics()
	ttl, err = strconv.ParseFloat(got["kubelet_certificate_manager_server_ttl_seconds"+lbl], 64)
	if err != nil || ttl > 3600 || ttl < 3500 {
		t.Errorf("server TTL %v (%v), want about 3600", ttl, err)
	}
	for name, want := range map[string]string{
		"kubelet_certificate_manager_client_expiration_renew_errors" + lbl:                                 "1",
		"kubelet_server_expiration_renew_errors" + lbl:                                                     "0",
		"kubelet_certificate_manager_server_rotation_seconds_count" + lbl:                                  "1",
		`kubelet_certificate_manager_server_rotation_seconds_bucket{node="` + node + `",le="60"}`:          "0",
		`kubelet_certificate_manager_server_rotation_seconds_bucket{node="` + node + `",le="3600"}`:        "1",
		`kubelet_certificate_manager_server_rotation_seconds_bucket{node="` + node + `",le="1.24416e+08"}`: "1",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
}

// issuingClientset is a fake API server issuing every
// CertificateSigningRequest at once, for what it asks, valid from a
// minute ago for an hour.
func issuingClientset(t *testing.T) *fake.Clientset {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(2 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	client := fake.NewClientset()
	var serial int64 = 1
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		serial++
		if csr.Name == "" { // the fake does not generate names
			csr.Name = "csr-" + strconv.FormatInt(serial, 10)
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(serial),
			Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}, caTmpl, req.PublicKey, caKey)
		if err != nil {
			t.Error(err)
			return true, nil, err
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		return false, nil, nil // stored by the fake's tracker
	})
	return client
}
