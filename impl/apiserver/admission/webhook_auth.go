package admission

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	"k8s.io/client-go/plugin/pkg/client/auth/exec"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
)

// The webhook admission plugins' configuration in
// --admission-control-config-file (kube-apiserver's
// WebhookAdmissionConfiguration, apiserver.config.k8s.io/v1, or
// WebhookAdmission, apiserver.config.k8s.io/v1alpha1) names a kubeconfig
// (kubeConfigFile, an absolute path) whose users are the credentials the
// webhooks are called with, chosen by the host a webhook is called at, as
// kube-apiserver's default authentication info resolver chooses them:
//
//   - the user named as the host:port (a service reference's host being
//     <name>.<namespace>.svc, its port 443 when unset; a URL's port 443
//     when it has none);
//   - else the first user named "*." and a dot-separated suffix of it,
//     longest first ("*.example.com:8443", "*.svc:443");
//   - at port 443, the same two without the port ("hook.example.com",
//     "*.example.com");
//   - else the user named "*";
//   - else the current context's user;
//   - else none (no credentials).
//
// A user's credentials are its token (or tokenFile, read when the client
// is made and again as the file changes), client certificate and key
// (data or files), username and password, impersonation (of the user
// named by "as" only), and an exec credential plugin (see applyExec); an
// auth-provider is an error (a failed call), as upstream. The API server
// itself (the URL host kubernetes.default.svc:443 and the service
// default/kubernetes:443 with a loopback) is always called with its
// loopback credentials.

// webhookAdmissionVersions are the kinds kube-apiserver decodes a webhook
// plugin's configuration as, by apiVersion.
var webhookAdmissionVersions = map[string]string{
	"apiserver.config.k8s.io/v1":       "WebhookAdmissionConfiguration",
	"apiserver.config.k8s.io/v1alpha1": "WebhookAdmission",
}

// WebhookCredentials are the users of a webhook plugin's kubeConfigFile.
type WebhookCredentials struct {
	users map[string]*clientcmdapi.AuthInfo
	// current is the current context's user ("" for none).
	current string
}

// decodeWebhookAdmission reads a webhook plugin's configuration (see
// above) and loads its kubeconfig; unknown fields are ignored.
func decodeWebhookAdmission(data []byte) (*WebhookCredentials, error) {
	var c struct {
		KubeConfigFile string `json:"kubeConfigFile"`
	}
	if err := decodeTyped(data, &c, false); err != nil {
		return nil, err
	}
	apiVersion, _ := typeMeta(data)
	want, ok := webhookAdmissionVersions[apiVersion]
	if !ok {
		want = "WebhookAdmissionConfiguration"
	}
	if err := checkTypeMeta(data, want, []string{apiVersion}); err != nil {
		return nil, err
	}
	if !ok {
		_, kind := typeMeta(data)
		return nil, fmt.Errorf("no kind %q is registered for version %q", kind, apiVersion)
	}
	if !path.IsAbs(c.KubeConfigFile) {
		return nil, field.Invalid(field.NewPath("kubeConfigFile"), c.KubeConfigFile, "must be an absolute file path")
	}
	return LoadWebhookCredentials(c.KubeConfigFile)
}

// LoadWebhookCredentials reads a kubeconfig's users (their relative file
// paths are the kubeconfig's directory's) as kube-apiserver's default
// authentication info resolver loads it, with client-go's loading rules
// for an explicit path: a missing file is the stat error ("stat F: no
// such file or directory"), one that does not load is
// `error loading config file "F": ...`.
func LoadWebhookCredentials(file string) (*WebhookCredentials, error) {
	cfg, err := (&clientcmd.ClientConfigLoadingRules{ExplicitPath: file}).Load()
	if err != nil {
		return nil, err
	}
	c := &WebhookCredentials{users: cfg.AuthInfos}
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok && cfg.CurrentContext != "" {
		c.current = ctx.AuthInfo
	}
	return c, nil
}

// userFor is the user a webhook at target (host:port) is called as (nil:
// none).
func (c *WebhookCredentials) userFor(target string) *clientcmdapi.AuthInfo {
	if c == nil {
		return nil
	}
	if u := c.exactOrWildcard(target); u != nil {
		return u
	}
	if host, port, err := net.SplitHostPort(target); err == nil && port == "443" {
		if u := c.exactOrWildcard(host); u != nil {
			return u
		}
	}
	if u, ok := c.users["*"]; ok {
		return u
	}
	if c.current != "" {
		return c.users[c.current]
	}
	return nil
}

func (c *WebhookCredentials) exactOrWildcard(name string) *clientcmdapi.AuthInfo {
	if u, ok := c.users[name]; ok {
		return u
	}
	labels := strings.Split(name, ".")
	for i := 1; i < len(labels); i++ {
		if u, ok := c.users["*."+strings.Join(labels[i:], ".")]; ok {
			return u
		}
	}
	return nil
}

// applyUser sets the user's client certificate in tr's TLS configuration
// and returns tr wrapped to send its token, basic credentials,
// impersonation headers and exec plugin credentials. cluster is the
// webhook's server as an exec plugin with provideClusterInfo is told it.
func applyUser(u *clientcmdapi.AuthInfo, cluster clientauthentication.Cluster, tr *http.Transport) (http.RoundTripper, error) {
	var rt http.RoundTripper = tr
	if u == nil {
		return rt, nil
	}
	cfg := tr.TLSClientConfig
	if u.AuthProvider != nil {
		return nil, errors.New("auth provider not supported")
	}
	if len(u.ClientCertificate) > 0 || len(u.ClientCertificateData) > 0 {
		certPEM, err := dataOrFile(u.ClientCertificateData, u.ClientCertificate)
		if err != nil {
			return nil, err
		}
		keyPEM, err := dataOrFile(u.ClientKeyData, u.ClientKey)
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	token := u.Token
	tokenFile := u.TokenFile
	if token == "" && tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, err
		}
		token = string(b)
	}
	basic := u.Username != "" || u.Password != ""
	switch {
	case token != "" && basic:
		return nil, errors.New("username/password or bearer token may be set, but not both")
	case token != "":
		var err error
		if rt, err = transport.NewBearerAuthWithRefreshRoundTripper(token, tokenFile, rt); err != nil {
			return nil, err
		}
	case basic:
		rt = transport.NewBasicAuthRoundTripper(u.Username, u.Password, rt)
	}
	if u.Exec != nil {
		// client-go's exec authenticator stands aside for a token,
		// username or client certificate and key of the same user.
		otherCreds := token != "" || tokenFile != "" || u.Username != "" ||
			((len(u.ClientCertificate) > 0 || len(u.ClientCertificateData) > 0) && (len(u.ClientKey) > 0 || len(u.ClientKeyData) > 0))
		var err error
		if rt, err = applyExec(u.Exec, cluster, otherCreds, tr, rt); err != nil {
			return nil, err
		}
	}
	// As kube-apiserver's resolver: impersonation only with a user to
	// impersonate (as), then with its groups and extra; as-uid is not
	// read.
	if u.Impersonate != "" {
		rt = transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
			UserName: u.Impersonate, Groups: u.ImpersonateGroups, Extra: u.ImpersonateUserExtra}, rt)
	}
	return rt, nil
}

// applyExec makes the webhook calls of a user with an exec credential
// plugin carry its credentials, as kube-apiserver's webhook clients do
// by handing the plugin configuration to client-go: client-go's exec
// authenticator (shared by equal plugin configurations) runs the plugin
// when a call needs credentials, keeps what it prints until it expires
// (or a call is answered 401), sends its token (when the call has no
// Authorization header) and presents its client certificate, closing
// tr's connections when the certificate changes. The authenticator is
// made even when otherCreds (the user's token, username or client
// certificate and key) win over it, so an invalid plugin configuration
// fails the same; a plugin that fails fails the call.
func applyExec(conf *clientcmdapi.ExecConfig, cluster clientauthentication.Cluster, otherCreds bool, tr *http.Transport, rt http.RoundTripper) (http.RoundTripper, error) {
	var info *clientauthentication.Cluster
	if conf.ProvideClusterInfo {
		cluster.Config = conf.Config
		info = &cluster
	}
	a, err := exec.GetAuthenticator(conf, info)
	if err != nil {
		return nil, err
	}
	if otherCreds {
		return rt, nil
	}
	tc := &transport.Config{DialHolder: &transport.DialHolder{Dial: tr.DialContext}}
	if err := a.UpdateTransportConfig(tc); err != nil {
		return nil, fmt.Errorf("exec credential plugin: %w", err)
	}
	tr.DialContext = tc.DialHolder.Dial
	if h := tc.TLS.GetCertHolder; h != nil && h.GetCert != nil {
		getCert := h.GetCert
		tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := getCert()
			if err != nil {
				return nil, err
			}
			if cert == nil {
				// No certificate from the plugin: none is sent.
				return &tls.Certificate{}, nil
			}
			return cert, nil
		}
	}
	if tc.WrapTransport != nil {
		rt = tc.WrapTransport(rt)
	}
	return rt, nil
}

func dataOrFile(data []byte, file string) ([]byte, error) {
	if len(data) > 0 {
		return data, nil
	}
	if file == "" {
		return nil, nil
	}
	return os.ReadFile(file)
}
