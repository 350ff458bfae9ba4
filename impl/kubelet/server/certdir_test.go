package server_test

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// TestSelfSignedCertificateInCertDir is upstream's kubelet without
// --tls-cert-file: the self-signed serving certificate is
// <cert-dir>/kubelet.crt and kubelet.key (0644 and 0600), generated once
// and served again by the next start.
func TestSelfSignedCertificateInCertDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	cfg, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"node-1", "10.0.0.9"}, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"kubelet.crt": 0o644, "kubelet.key": 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	again, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"node-1", "10.0.0.9"}, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cfg.Certificates[0].Certificate[0], again.Certificates[0].Certificate[0]) {
		t.Error("a second start generated another certificate instead of serving kubelet.crt")
	}
	file, err := tls.LoadX509KeyPair(filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file.Certificate[0], cfg.Certificates[0].Certificate[0]) {
		t.Error("the served certificate is not kubelet.crt")
	}
}

// TestServingCertificatePerHandshake: with GetCertificate (a rotated
// serving certificate) the TLS configuration asks it at each handshake.
func TestServingCertificatePerHandshake(t *testing.T) {
	a, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	current := &a.Certificates[0]
	cfg, err := server.TLSConfig(server.TLSOptions{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 0 || cfg.GetCertificate == nil {
		t.Fatalf("certificates %d, GetCertificate set %v", len(cfg.Certificates), cfg.GetCertificate != nil)
	}
	got, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || got != current {
		t.Fatalf("GetCertificate: %v %v", got, err)
	}
}

// TestCertDirPairNotOverwritten: as upstream's kubelet, a kubelet.crt
// without kubelet.key (or the other way round) is an error ("must be
// supplied as a pair"), and a pair that does not load is one too; the
// files are not replaced by a new self-signed certificate.
func TestCertDirPairNotOverwritten(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"certificate only": {"kubelet.crt": "a certificate\n"},
		"key only":         {"kubelet.key": "a key\n"},
		"pair not loading": {"kubelet.crt": "a certificate\n", "kubelet.key": "a key\n"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, data := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"node-1"}, CertDir: dir}); err == nil {
				t.Error("TLSConfig took a cert-dir with a broken kubelet.crt/kubelet.key pair")
			}
			for _, f := range []string{"kubelet.crt", "kubelet.key"} {
				data, err := os.ReadFile(filepath.Join(dir, f))
				if want, ok := files[f]; ok != (err == nil) || string(data) != want {
					t.Errorf("%s now %q (%v), want %q as it was", f, data, err, want)
				}
			}
		})
	}
}
