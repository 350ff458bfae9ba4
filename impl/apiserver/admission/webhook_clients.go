package admission

import (
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	neturl "net/url"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
)

// webhookClientCacheSize is how many webhook clients are kept, as
// kube-apiserver's webhook ClientManager keeps 200 in an LRU cache.
const webhookClientCacheSize = 200

// webhookClients are HTTPS clients (HTTP/1.1) by the whole client
// configuration, as kube-apiserver's ClientManager keys them (CA bundle,
// and the URL or the service's name, namespace, port and path), so that
// connections are kept between calls and webhooks at different hosts
// never share the credentials of one. At most webhookClientCacheSize are kept: the one
// used least recently goes (its idle connections closed) when another
// would exceed that; it is built again when next needed.
type webhookClients struct {
	mu sync.Mutex
	// clients holds the cached clients by key; lru orders their
	// elements, the most recently used first.
	clients map[string]*list.Element
	lru     list.List
	// dial, when set, makes the clients' connections (tests); nil is a
	// net.Dialer.
	dial dialFunc
	// credentials, when set, are the users webhooks are called as, by
	// host (--admission-control-config-file's kubeConfigFile).
	credentials *WebhookCredentials
}

// clientKey is what a client is cached by (kube-apiserver's
// ClientConfig without the webhook's name).
type clientKey struct {
	URL      string            `json:"url,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
	Service  *clientServiceKey `json:"service,omitempty"`
}

type clientServiceKey struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Path      string `json:"path,omitempty"`
	Port      int32  `json:"port"`
}

func (k clientKey) String() string {
	b, _ := json.Marshal(k)
	return string(b)
}

// webhookUserAgent is the User-Agent of webhook calls, as
// kube-apiserver's resolver sets it on every client configuration it
// makes (not the loopback one).
const webhookUserAgent = "kube-apiserver-admission"

// cachedClient is an element of webhookClients.lru.
type cachedClient struct {
	key    string
	client *http.Client
}

// get returns the client of a webhook addressed by service svc under a
// CA bundle: one whose connections to the service's host
// (<name>.<namespace>.svc:<port>) dial the address resolver finds for it
// when the connection is made. Webhooks addressed by URL take getURL's.
func (c *webhookClients) get(caBundle []byte, svc *admissionregistrationv1.ServiceReference, resolver *serviceResolver) (*http.Client, error) {
	if resolver == nil {
		return nil, errors.New("webhooks addressed by service need the services resource, which this server does not serve")
	}
	host, serverName, port := serviceHost(svc)
	var lb LoopbackGetter
	if resolver.loopback != nil && isLoopbackService(svc.Namespace, svc.Name, port) {
		lb = resolver.loopback
	}
	namespace, name := svc.Namespace, svc.Name
	var user *clientcmdapi.AuthInfo
	if lb == nil {
		user = c.credentials.userFor(host)
	}
	key := clientKey{CABundle: caBundle, Service: &clientServiceKey{Name: name, Namespace: namespace, Port: port}}
	if svc.Path != nil {
		key.Service.Path = *svc.Path
	}
	redirect := func(dial dialFunc) dialFunc {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == host {
				resolved, err := resolver.resolve(ctx, namespace, name, port)
				if err != nil {
					return nil, err
				}
				addr = resolved
			}
			return dial(ctx, network, addr)
		}
	}
	return c.client(caBundle, key.String(), "https://"+host, serverName, lb, user, redirect)
}

// loopbackURLHost is the host:port kube-apiserver's webhook
// authentication resolver answers with the server's loopback client
// configuration.
const loopbackURLHost = "kubernetes.default.svc:443"

// getURL returns the client of a webhook given by URL: the one of its CA
// bundle, except at the host kubernetes.default.svc (port 443 written or
// not) when loopback is set, where it is the server's loopback client
// (its TLS settings, the CA bundle trusted besides, and its token) that
// still connects to the URL's host as DNS resolves it.
func (c *webhookClients) getURL(caBundle []byte, rawURL string, loopback LoopbackGetter) (*http.Client, error) {
	key := clientKey{URL: rawURL, CABundle: caBundle}.String()
	hostPort := urlHostPort(rawURL)
	if loopback != nil && hostPort == loopbackURLHost {
		return c.client(caBundle, key, "", "", loopback, nil, nil)
	}
	return c.client(caBundle, key, urlServer(rawURL), "", nil, c.credentials.userFor(hostPort), nil)
}

// urlHostPort is the URL's host with port 443 when it has none ("" when
// it does not parse).
func urlHostPort(rawURL string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return ""
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Host, "443")
	}
	return u.Host
}

// urlServer is a webhook URL's scheme and host, the server an exec
// credential plugin with provideClusterInfo is told ("" when it does not
// parse).
func urlServer(rawURL string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// client returns the client cached under key, building it when missing:
// trusting caBundle (and, with lb, the loopback client's roots, under its
// server name, sending its token), under serverName when set, with the
// user's credentials when set (server, the webhook's scheme and host, is
// what an exec credential plugin is told), its connections made by
// redirect's wrapping of the base dialer when set.
func (c *webhookClients) client(caBundle []byte, key, server, serverName string, lb LoopbackGetter, user *clientcmdapi.AuthInfo, redirect func(dialFunc) dialFunc) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clients[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cachedClient).client, nil
	}
	// HTTP/1.1 only, as kube-apiserver's webhook clients: over HTTP/2
	// concurrent calls would share one connection, so one endpoint.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, NextProtos: []string{"http/1.1"}}
	var token string
	if lb != nil {
		lbCfg, t := lb.LoopbackClient()
		token = t
		if lbCfg.ServerName != "" {
			cfg.ServerName = lbCfg.ServerName
		}
		if lbCfg.RootCAs != nil {
			cfg.RootCAs = lbCfg.RootCAs.Clone()
		}
	}
	if len(caBundle) > 0 {
		if cfg.RootCAs == nil {
			cfg.RootCAs = x509.NewCertPool()
		}
		if !cfg.RootCAs.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("clientConfig.caBundle holds no PEM certificate")
		}
	}
	dial := c.dial
	if dial == nil {
		var dialer net.Dialer
		dial = dialer.DialContext
	}
	if redirect != nil {
		dial = redirect(dial)
	}
	tr := &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second, DialContext: dial}
	cl := &http.Client{Transport: tr}
	if token != "" {
		cl.Transport = bearerTransport{token: token, next: tr}
	}
	if lb == nil {
		// As kube-apiserver's authentication info resolver, a webhook
		// other than the server itself is called with the user's
		// credentials and User-Agent webhookUserAgent.
		rt, err := applyUser(user, clientauthentication.Cluster{Server: server, TLSServerName: serverName, CertificateAuthorityData: caBundle}, tr)
		if err != nil {
			return nil, err
		}
		cl.Transport = closingTransport{RoundTripper: transport.NewUserAgentRoundTripper(webhookUserAgent, rt), transport: tr}
	}
	if c.clients == nil {
		c.clients = map[string]*list.Element{}
	}
	c.clients[key] = c.lru.PushFront(&cachedClient{key: key, client: cl})
	if c.lru.Len() > webhookClientCacheSize {
		oldest := c.lru.Remove(c.lru.Back()).(*cachedClient)
		delete(c.clients, oldest.key)
		// Calls still using it finish; its idle connections close now
		// rather than at their idle timeout.
		oldest.client.CloseIdleConnections()
	}
	return cl, nil
}

// bearerTransport sends a bearer token with each request.
type bearerTransport struct {
	token string
	next  *http.Transport
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (b bearerTransport) CloseIdleConnections() { b.next.CloseIdleConnections() }

// closingTransport lets http.Client.CloseIdleConnections reach the
// transport under credential round trippers.
type closingTransport struct {
	http.RoundTripper
	transport *http.Transport
}

func (t closingTransport) CloseIdleConnections() { t.transport.CloseIdleConnections() }

// len is the number of cached clients.
func (c *webhookClients) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *webhookClients) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedClient).client.CloseIdleConnections()
	}
}
