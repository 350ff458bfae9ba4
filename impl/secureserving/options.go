// Package secureserving is the HTTPS endpoint of kubeproof's standalone
// scheduler and controller manager, as kube-scheduler's and
// kube-controller-manager's: --secure-port and --bind-address, a
// certificate from --tls-cert-file/--tls-private-key-file or generated
// self-signed (in memory, or under --cert-dir), more by SNI
// (--tls-sni-cert-key), --tls-min-version and --tls-cipher-suites, and
// every request
// authenticated (a front proxy's headers when --requestheader-client-ca-file
// verifies its client certificate, a client certificate against
// --client-ca-file, a bearer token by a TokenReview to the API server
// --authentication-kubeconfig names, else anonymous; the CAs and header
// names the flags leave out looked up in
// kube-system/extension-apiserver-authentication) and authorized
// (--authorization-always-allow-paths, the system:masters group, else a
// SubjectAccessReview to the API server --authorization-kubeconfig names)
// before the component's handler sees it. Both reviews' answers are cached
// for upstream's 10 s (--authentication-token-webhook-cache-ttl,
// --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl).
package secureserving

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// Options are the secure serving, authentication and authorization flags.
type Options struct {
	// BindAddress and SecurePort are where HTTPS is served; port 0 serves
	// nothing.
	BindAddress string
	SecurePort  int
	// Listener, when set, is served instead of binding the address (tests,
	// an ephemeral port).
	Listener net.Listener
	// CertDir holds <PairName>.crt and .key, generated when missing; empty:
	// a certificate generated in memory.
	CertDir  string
	PairName string
	// TLSCertFile and TLSPrivateKeyFile, when given, are the serving
	// certificate (CertDir is then unused).
	TLSCertFile, TLSPrivateKeyFile string
	// TLSCipherSuites (empty: Go's defaults) and TLSMinVersion (empty:
	// VersionTLS12) are upstream's names.
	TLSCipherSuites []string
	TLSMinVersion   string
	// SNICertKeys are served to clients asking for their names; others
	// get the default certificate.
	SNICertKeys []cliflag.NamedCertKey
	// HTTP2MaxStreamsPerConnection is the HTTP/2 concurrent stream limit
	// a connection gets (0: upstream's 100).
	HTTP2MaxStreamsPerConnection int
	// PermitPortSharing (SO_REUSEPORT) and PermitAddressSharing
	// (SO_REUSEADDR) are set on the listening socket.
	PermitPortSharing, PermitAddressSharing bool

	// ClientCAFile verifies client certificates (user CN, groups O).
	ClientCAFile string
	// AuthenticationKubeconfig names the API server that reviews bearer
	// tokens; empty: tokens are not looked at, every request without a
	// client certificate is anonymous.
	AuthenticationKubeconfig string
	// AuthenticationSkipLookup: do not read the client CA from the
	// kube-system/extension-apiserver-authentication ConfigMap when
	// ClientCAFile is empty.
	AuthenticationSkipLookup bool
	// AuthenticationTolerateLookupFailure: a failed lookup is a warning,
	// not an error.
	AuthenticationTolerateLookupFailure bool
	// TokenCacheTTL is how long a TokenReview's answer (authenticated or
	// not) is reused for the same token; 0: not cached.
	TokenCacheTTL time.Duration
	// RequestHeader is front-proxy authentication.
	RequestHeader RequestHeaderOptions

	// AuthorizationKubeconfig names the API server that answers
	// SubjectAccessReviews; empty: what the always-allowed paths and
	// groups do not allow is denied.
	AuthorizationKubeconfig string
	// AlwaysAllowPaths are served to anyone authenticated or anonymous
	// ("/foo/*" a prefix).
	AlwaysAllowPaths []string
	// AlwaysAllowGroups are allowed everything.
	AlwaysAllowGroups []string
	// AuthorizedTTL and UnauthorizedTTL are how long a
	// SubjectAccessReview's allowed and not-allowed answers are reused for
	// the same request attributes; 0: not cached.
	AuthorizedTTL, UnauthorizedTTL time.Duration
}

// RequestHeaderOptions are front-proxy authentication: a request whose
// client certificate ClientCAFile verifies (and whose CommonName is one of
// AllowedNames, when any) is from the user its headers name.
type RequestHeaderOptions struct {
	ClientCAFile string
	AllowedNames []string
	// UsernameHeaders, UIDHeaders and GroupHeaders are read in order (the
	// first non-empty username and UID; every group);
	// ExtraHeaderPrefixes start headers whose rest (lower-cased,
	// %-unescaped) is a user.Extra key.
	UsernameHeaders, UIDHeaders, GroupHeaders, ExtraHeaderPrefixes []string
}

// enabled is whether request headers are trusted at all: a CA and a
// username header.
func (o RequestHeaderOptions) enabled() bool {
	return o.ClientCAFile != "" && slices.ContainsFunc(o.UsernameHeaders, func(h string) bool { return strings.TrimSpace(h) != "" })
}

// NewOptions are kube-scheduler's (port 10259, pair name kube-scheduler)
// or kube-controller-manager's (10257, kube-controller-manager) defaults.
func NewOptions(port int, pairName string) *Options {
	return &Options{
		BindAddress:       "0.0.0.0",
		SecurePort:        port,
		PairName:          pairName,
		AlwaysAllowPaths:  []string{"/healthz", "/readyz", "/livez"},
		AlwaysAllowGroups: []string{"system:masters"},
		TokenCacheTTL:     10 * time.Second,
		AuthorizedTTL:     10 * time.Second,
		UnauthorizedTTL:   10 * time.Second,
		RequestHeader: RequestHeaderOptions{
			UsernameHeaders:     []string{"x-remote-user"},
			GroupHeaders:        []string{"x-remote-group"},
			ExtraHeaderPrefixes: []string{"x-remote-extra-"},
		},
	}
}

// AddFlags registers the flags under upstream's names.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address the --secure-port listens on (0.0.0.0 or :: for every interface)")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port serving /healthz and /metrics over HTTPS, authenticated and authorized (0: no HTTPS)")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "directory of the self-signed serving certificate ("+o.PairName+".crt and .key, generated when missing); empty: generated in memory. Unused with --tls-cert-file")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "PEM serving certificate (followed by its intermediates); with --tls-private-key-file, replaces the self-signed one")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "PEM private key of --tls-cert-file")
	fs.StringSliceVar(&o.TLSCipherSuites, "tls-cipher-suites", o.TLSCipherSuites, "comma-separated cipher suites of the server (empty: Go's defaults). Preferred values: "+strings.Join(cliflag.PreferredTLSCipherNames(), ", ")+". Insecure values: "+strings.Join(cliflag.InsecureTLSCipherNames(), ", ")+".")
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", o.TLSMinVersion, "minimum TLS version (empty: VersionTLS12). Possible values: "+strings.Join(cliflag.TLSPossibleVersions(), ", "))
	fs.Var(cliflag.NewNamedCertKeyArray(&o.SNICertKeys), "tls-sni-cert-key", "a certificate and key file served to clients asking (SNI) for the names after ':' (none: the certificate's own DNS names and domain CommonName; '*.' a wildcard); exact names before wildcards, given names before extracted ones; repeat for more pairs. Examples: \"example.crt,example.key\" or \"foo.crt,foo.key:*.foo.com,foo.com\"")
	fs.IntVar(&o.HTTP2MaxStreamsPerConnection, "http2-max-streams-per-connection", o.HTTP2MaxStreamsPerConnection, "the limit of concurrent streams of an HTTP/2 connection given to clients (0: 100)")
	fs.BoolVar(&o.PermitPortSharing, "permit-port-sharing", o.PermitPortSharing, "bind the secure port with SO_REUSEPORT, so that more than one instance may listen on the same address and port")
	fs.BoolVar(&o.PermitAddressSharing, "permit-address-sharing", o.PermitAddressSharing, "bind the secure port with SO_REUSEADDR: wildcard and specific addresses in parallel, no wait for sockets in TIME_WAIT")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "PEM CA bundle: a client certificate it signs authenticates its CommonName as user, its Organizations as groups")
	fs.StringVar(&o.AuthenticationKubeconfig, "authentication-kubeconfig", o.AuthenticationKubeconfig, "kubeconfig of the API server that reviews bearer tokens (tokenreviews create); empty: tokens are ignored and requests without a client certificate are anonymous")
	fs.BoolVar(&o.AuthenticationSkipLookup, "authentication-skip-lookup", o.AuthenticationSkipLookup, "do not read the client CA from kube-system/extension-apiserver-authentication when --client-ca-file is empty")
	fs.BoolVar(&o.AuthenticationTolerateLookupFailure, "authentication-tolerate-lookup-failure", o.AuthenticationTolerateLookupFailure, "start even when that lookup fails (without a client CA)")
	fs.StringVar(&o.AuthorizationKubeconfig, "authorization-kubeconfig", o.AuthorizationKubeconfig, "kubeconfig of the API server that authorizes requests (subjectaccessreviews create); empty: only the always-allowed paths and the system:masters group are allowed")
	fs.StringSliceVar(&o.AlwaysAllowPaths, "authorization-always-allow-paths", o.AlwaysAllowPaths, "paths served without authorization ('/p/*' a prefix)")
	fs.DurationVar(&o.TokenCacheTTL, "authentication-token-webhook-cache-ttl", o.TokenCacheTTL, "how long a TokenReview's answer is reused for the same token")
	fs.DurationVar(&o.AuthorizedTTL, "authorization-webhook-cache-authorized-ttl", o.AuthorizedTTL, "how long an allowing SubjectAccessReview's answer is reused")
	fs.DurationVar(&o.UnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", o.UnauthorizedTTL, "how long a not-allowing SubjectAccessReview's answer is reused")
	rh := &o.RequestHeader
	fs.StringVar(&rh.ClientCAFile, "requestheader-client-ca-file", rh.ClientCAFile, "PEM CA bundle verifying the client certificates of front proxies, whose requests are from the user --requestheader-username-headers name (empty: looked up in kube-system/extension-apiserver-authentication, with the header flags)")
	fs.StringSliceVar(&rh.AllowedNames, "requestheader-allowed-names", rh.AllowedNames, "front-proxy client certificate CommonNames allowed (empty: any --requestheader-client-ca-file verifies)")
	fs.StringSliceVar(&rh.UsernameHeaders, "requestheader-username-headers", rh.UsernameHeaders, "request headers naming the user, first non-empty wins")
	fs.StringSliceVar(&rh.UIDHeaders, "requestheader-uid-headers", rh.UIDHeaders, "request headers giving the user's UID, first non-empty wins")
	fs.StringSliceVar(&rh.GroupHeaders, "requestheader-group-headers", rh.GroupHeaders, "request headers naming the user's groups, all of them")
	fs.StringSliceVar(&rh.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", rh.ExtraHeaderPrefixes, "request header prefixes of the user's extra attributes")
}

// Validate refuses options no server can be built from.
func (o *Options) Validate() error {
	var errs []error
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %v must be between 0 and 65535, inclusive. 0 for turning off secure port", o.SecurePort))
	}
	if o.BindAddress != "" && net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if _, err := cliflag.TLSVersion(o.TLSMinVersion); err != nil {
		errs = append(errs, fmt.Errorf("--tls-min-version: %w", err))
	}
	if _, err := cliflag.TLSCipherSuites(o.TLSCipherSuites); err != nil {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites: %w", err))
	}
	return errors.Join(errs...)
}

// Address is the listening address, "" when SecurePort is 0.
func (o *Options) Address() string {
	if o.Listener != nil {
		return o.Listener.Addr().String()
	}
	if o.SecurePort == 0 {
		return ""
	}
	return net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
}
