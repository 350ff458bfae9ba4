package secureserving

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
)

// tlsSettings applies --tls-min-version (default TLS 1.2, as upstream's
// secure serving), --tls-cipher-suites (Go's defaults when empty; an
// insecure suite is a warning) and --tls-sni-cert-key to c, whose
// Certificates hold the default serving certificate.
func tlsSettings(c *tls.Config, o *Options, log *slog.Logger) error {
	minVersion, err := cliflag.TLSVersion(o.TLSMinVersion)
	if err != nil {
		return fmt.Errorf("--tls-min-version: %w", err)
	}
	c.MinVersion = tls.VersionTLS12
	if minVersion > 0 {
		c.MinVersion = minVersion
	}
	if len(o.TLSCipherSuites) > 0 {
		suites, err := cliflag.TLSCipherSuites(o.TLSCipherSuites)
		if err != nil {
			return fmt.Errorf("--tls-cipher-suites: %w", err)
		}
		insecure := cliflag.InsecureTLSCiphers()
		for _, name := range o.TLSCipherSuites {
			if _, bad := insecure[name]; bad {
				log.Warn("--tls-cipher-suites names an insecure cipher suite", "suite", name)
			}
		}
		c.CipherSuites = suites
	}
	if len(o.SNICertKeys) == 0 {
		return nil
	}
	byName, err := sniCertificates(o.SNICertKeys)
	if err != nil {
		return err
	}
	// The default moves into GetCertificate: crypto/tls serves
	// Certificates[0] to a client without SNI without asking
	// GetCertificate, which must pick by address then.
	defaultCert := &c.Certificates[0]
	c.Certificates = nil
	c.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		return pickCertificate(byName, hello.ServerName, localIP(hello), defaultCert), nil
	}
	return nil
}

// localIP is the address a client without SNI connected to ("" when
// unknown): SNI carries no IP address, so upstream's secure serving picks
// a pair whose given names list the IP the connection came in on.
func localIP(hello *tls.ClientHelloInfo) string {
	if hello.Conn == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(hello.Conn.LocalAddr().String())
	if err != nil {
		return ""
	}
	return host
}

// sniCertificates loads the --tls-sni-cert-key pairs and maps the names
// each serves to it: its explicit names, else those of its certificate
// (its CommonName when a domain name, and its DNS names; never IP
// addresses, which SNI does not carry). Explicit names win over extracted
// ones, and an earlier pair over a later one.
func sniCertificates(pairs []cliflag.NamedCertKey) (map[string]*tls.Certificate, error) {
	explicit := map[string]*tls.Certificate{}
	extracted := map[string]*tls.Certificate{}
	for _, p := range pairs {
		cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading --tls-sni-cert-key %s,%s: %w", p.CertFile, p.KeyFile, err)
		}
		if len(p.Names) > 0 {
			for _, n := range p.Names {
				n = strings.ToLower(n)
				if _, taken := explicit[n]; !taken {
					explicit[n] = &cert
				}
			}
			continue
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("parsing --tls-sni-cert-key %s: %w", p.CertFile, err)
		}
		for _, n := range certificateNames(leaf) {
			if _, taken := extracted[n]; !taken {
				extracted[n] = &cert
			}
		}
	}
	for n, c := range explicit {
		extracted[n] = c
	}
	return extracted, nil
}

// certificateNames are the names a certificate is picked for by SNI.
func certificateNames(c *x509.Certificate) []string {
	var names []string
	cn := c.Subject.CommonName
	if net.ParseIP(cn) == nil && (cn == "*" || len(validation.IsDNS1123Subdomain(strings.TrimPrefix(cn, "*."))) == 0) {
		names = append(names, strings.ToLower(cn))
	}
	for _, n := range c.DNSNames {
		if n = strings.ToLower(n); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// pickCertificate is the certificate for a client asking for serverName:
// an exact match, else a wildcard one for its first label, else the
// default. A client that asked for no name gets the pair named by the
// address it connected to (localIP), if any, else the default.
func pickCertificate(byName map[string]*tls.Certificate, serverName, localIP string, fallback *tls.Certificate) *tls.Certificate {
	if serverName == "" {
		if c, ok := byName[localIP]; ok && localIP != "" {
			return c
		}
		return fallback
	}
	name := strings.ToLower(serverName)
	if c, ok := byName[name]; ok {
		return c
	}
	if _, rest, ok := strings.Cut(name, "."); ok {
		if c, ok := byName["*."+rest]; ok {
			return c
		}
	}
	return fallback
}
