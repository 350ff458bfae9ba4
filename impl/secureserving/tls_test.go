package secureserving

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/pki"
)

// handshake dials base's host with c and returns the certificate served,
// or the handshake's error.
func handshake(t *testing.T, base string, c *tls.Config) (string, error) {
	t.Helper()
	c.InsecureSkipVerify = true //nolint:gosec // the test looks at what is served
	conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), c)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// TestTLSVersionAndCipherSuites: --tls-min-version refuses older clients
// (default TLS 1.2: a TLS 1.1 client is refused); --tls-cipher-suites
// limits TLS 1.2 to the suites named (upstream's names, as
// k8s.io/component-base/cli/flag knows them); unknown names are refused
// by Validate.
func TestTLSVersionAndCipherSuites(t *testing.T) {
	base := start(t, NewOptions(10259, "kube-scheduler"), nil)
	if _, err := handshake(t, base, &tls.Config{MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("TLS 1.1 client accepted by default")
	}
	if _, err := handshake(t, base, &tls.Config{MaxVersion: tls.VersionTLS12}); err != nil {
		t.Errorf("TLS 1.2 client by default: %v", err)
	}

	o := NewOptions(10259, "kube-scheduler")
	o.TLSMinVersion = "VersionTLS13"
	base13 := start(t, o, nil)
	if _, err := handshake(t, base13, &tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("--tls-min-version VersionTLS13: TLS 1.2 client accepted")
	}
	if _, err := handshake(t, base13, &tls.Config{}); err != nil {
		t.Errorf("--tls-min-version VersionTLS13: TLS 1.3 client: %v", err)
	}

	o = NewOptions(10259, "kube-scheduler")
	o.TLSCipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}
	baseSuites := start(t, o, nil)
	if _, err := handshake(t, baseSuites, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}); err == nil {
		t.Error("--tls-cipher-suites: a client without the suite accepted")
	}
	if _, err := handshake(t, baseSuites, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}); err != nil {
		t.Errorf("--tls-cipher-suites: a client with the suite: %v", err)
	}

	for _, bad := range []Options{
		{BindAddress: "0.0.0.0", SecurePort: 1, TLSMinVersion: "VersionTLS14"},
		{BindAddress: "0.0.0.0", SecurePort: 1, TLSCipherSuites: []string{"TLS_NOT_A_SUITE"}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestSNICertificates: --tls-sni-cert-key serves a pair to clients asking
// for its names: the names given after ':' (wildcards match one label),
// else the certificate's own DNS names; exact names before wildcards;
// anything else gets the default certificate.
func TestSNICertificates(t *testing.T) {
	ca, err := pki.NewCA("sni-ca")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(cn string, dns ...string) (string, string) {
		kp, err := ca.IssueServing(cn, dns, []net.IP{net.IPv4(10, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		crt, key := filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
		if err := os.WriteFile(crt, kp.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, kp.KeyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		return crt, key
	}
	fooCrt, fooKey := write("foo", "foo.example.com")
	wildCrt, wildKey := write("wild", "ignored.example.com")
	exactCrt, exactKey := write("exact", "other.example.com")
	o := NewOptions(10259, "kube-scheduler")
	f := newFlagSet(o)
	for _, v := range []string{fooCrt + "," + fooKey, wildCrt + "," + wildKey + ":*.bar.example.com", exactCrt + "," + exactKey + ":one.bar.example.com"} {
		if err := f.Set("tls-sni-cert-key", v); err != nil {
			t.Fatal(err)
		}
	}
	base := start(t, o, nil)
	for serverName, want := range map[string]string{
		"foo.example.com":     "foo",
		"FOO.example.com":     "foo",
		"two.bar.example.com": "wild",
		"one.bar.example.com": "exact",
		"ignored.example.com": "", // the wildcard pair's own name: given names replace it
		"other.example.com":   "",
		"localhost":           "",
	} {
		got, err := handshake(t, base, &tls.Config{ServerName: serverName})
		if err != nil {
			t.Fatalf("%s: %v", serverName, err)
		}
		if want == "" {
			if !strings.HasPrefix(got, "localhost@") {
				t.Errorf("%s: served %q, want the default self-signed certificate", serverName, got)
			}
		} else if got != want {
			t.Errorf("%s: served %q, want %q", serverName, got, want)
		}
	}
}

// TestSNICertificateForAddress: a client that sends no SNI (one dialing an
// IP address) gets the --tls-sni-cert-key pair whose given names list the
// address it connected to, as upstream's secure serving picks by the
// connection's local address; a pair naming another address is not
// served, and with none the default certificate is.
func TestSNICertificateForAddress(t *testing.T) {
	ca, err := pki.NewCA("sni-ca")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var pairs []string
	for _, cn := range []string{"loopback", "elsewhere"} {
		kp, err := ca.IssueServing(cn, nil, []net.IP{net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		crt, key := filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
		if err := os.WriteFile(crt, kp.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, kp.KeyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, crt+","+key)
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{pairs[1] + ":10.9.9.9", pairs[0] + ":127.0.0.1"}, "loopback"},
		{[]string{pairs[1] + ":10.9.9.9"}, ""},
	} {
		o := NewOptions(10259, "kube-scheduler")
		f := newFlagSet(o)
		for _, v := range tc.names {
			if err := f.Set("tls-sni-cert-key", v); err != nil {
				t.Fatal(err)
			}
		}
		base := start(t, o, nil)
		got, err := handshake(t, base, &tls.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" {
			if !strings.HasPrefix(got, "localhost@") {
				t.Errorf("%v: served %q, want the default self-signed certificate", tc.names, got)
			}
		} else if got != tc.want {
			t.Errorf("%v: served %q, want %q", tc.names, got, tc.want)
		}
	}
}

// newFlagSet is a flag set with o's flags.
func newFlagSet(o *Options) *pflag.FlagSet {
	f := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(f)
	return f
}
