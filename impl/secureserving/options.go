// Package secureserving is the HTTPS endpoint of kubeproof's standalone
// scheduler and controller manager, as kube-scheduler's and
// kube-controller-manager's: --secure-port and --bind-address, a
// certificate from --tls-cert-file/--tls-private-key-file or generated
// self-signed (in memory, or under --cert-dir), and every request
// authenticated (client certificate against --client-ca-file, bearer token
// by a TokenReview to the API server --authentication-kubeconfig names,
// else anonymous) and authorized (--authorization-always-allow-paths, the
// system:masters group, else a SubjectAccessReview to the API server
// --authorization-kubeconfig names) before the component's handler sees it.
package secureserving

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/pflag"
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

	// AuthorizationKubeconfig names the API server that answers
	// SubjectAccessReviews; empty: what the always-allowed paths and
	// groups do not allow is denied.
	AuthorizationKubeconfig string
	// AlwaysAllowPaths are served to anyone authenticated or anonymous
	// ("/foo/*" a prefix).
	AlwaysAllowPaths []string
	// AlwaysAllowGroups are allowed everything.
	AlwaysAllowGroups []string
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
	}
}

// AddFlags registers the flags under upstream's names.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address the --secure-port listens on (0.0.0.0 or :: for every interface)")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port serving /healthz and /metrics over HTTPS, authenticated and authorized (0: no HTTPS)")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "directory of the self-signed serving certificate ("+o.PairName+".crt and .key, generated when missing); empty: generated in memory. Unused with --tls-cert-file")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "PEM serving certificate (followed by its intermediates); with --tls-private-key-file, replaces the self-signed one")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "PEM private key of --tls-cert-file")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "PEM CA bundle: a client certificate it signs authenticates its CommonName as user, its Organizations as groups")
	fs.StringVar(&o.AuthenticationKubeconfig, "authentication-kubeconfig", o.AuthenticationKubeconfig, "kubeconfig of the API server that reviews bearer tokens (tokenreviews create); empty: tokens are ignored and requests without a client certificate are anonymous")
	fs.BoolVar(&o.AuthenticationSkipLookup, "authentication-skip-lookup", o.AuthenticationSkipLookup, "do not read the client CA from kube-system/extension-apiserver-authentication when --client-ca-file is empty")
	fs.BoolVar(&o.AuthenticationTolerateLookupFailure, "authentication-tolerate-lookup-failure", o.AuthenticationTolerateLookupFailure, "start even when that lookup fails (without a client CA)")
	fs.StringVar(&o.AuthorizationKubeconfig, "authorization-kubeconfig", o.AuthorizationKubeconfig, "kubeconfig of the API server that authorizes requests (subjectaccessreviews create); empty: only the always-allowed paths and the system:masters group are allowed")
	fs.StringSliceVar(&o.AlwaysAllowPaths, "authorization-always-allow-paths", o.AlwaysAllowPaths, "paths served without authorization ('/p/*' a prefix)")
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
