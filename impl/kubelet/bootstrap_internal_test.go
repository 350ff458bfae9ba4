package kubelet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestValidKubeconfig decides when TLS bootstrapping is needed: no file,
// no client certificate, or an expired one.
func TestValidKubeconfig(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:a"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name string, auth *clientcmdapi.AuthInfo) string {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
		cfg.AuthInfos["u"] = auth
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "c"
		p := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*cfg, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withCert := write("cert", &clientcmdapi.AuthInfo{ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})})
	tokenOnly := write("token", &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"})

	cases := []struct {
		path string
		at   time.Time
		ok   bool
		why  string
	}{
		{filepath.Join(dir, "missing"), now, false, "not found"},
		{tokenOnly, now, false, "no client certificate"},
		{withCert, now, true, ""},
		{withCert, now.Add(2 * time.Hour), false, "expired"},
	}
	for _, c := range cases {
		ok, why := validKubeconfig(c.path, c.at)
		if ok != c.ok || !strings.Contains(why, c.why) {
			t.Errorf("%s at %v: %v %q, want %v %q", filepath.Base(c.path), c.at.Sub(now).Round(time.Hour), ok, why, c.ok, c.why)
		}
	}
}
