// Package apiserver is kubeproof's Kubernetes-compatible API server: HTTPS
// (HTTP/2 through golang.org/x/net/http2 with h2sched's write scheduler)
// serving the REST resources given in Config.Resources from a
// storage.Factory, with discovery, health, version, metrics and OpenAPI
// endpoints, behind the filter chain panic recovery → request info →
// metrics → timeout → authentication (x509, bearer tokens:
// token file, service account, bootstrap) → audit → impersonation →
// API Priority and Fairness (or, when disabled, max-in-flight) →
// authorization.
// Besides the stored resources it serves the create-only reviews
// (authorization.k8s.io SubjectAccessReview, SelfSubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectRulesReview when the authorizer
// lists rules; authentication.k8s.io TokenReview, SelfSubjectReview) and
// serviceaccounts/token (TokenRequest).
//
// Subpackages: request (URL → verb/resource attributes), codec (scheme,
// serializers, content negotiation), auth (authentication and
// authorization interfaces), admission (the admission chain with
// NamespaceLifecycle), endpoints (the REST verbs), discovery, filters,
// flowcontrol (API Priority and Fairness), metrics, h2sched (the HTTP/2
// write scheduler). Per-kind behaviour comes from package resource
// (registry.All).
//
// Plugin hook. Authorizers and admission plugins that read the server's own
// objects are built by Config.Plugins, a PluginsFunc:
//
//	type PluginsFunc func(stores StoreGetter) (Plugins, error)
//	type StoreGetter interface {
//		Store(gr schema.GroupResource) (storage.Interface, bool)
//		ObjectKey(gr schema.GroupResource, namespace, name string) string
//		ListKey(gr schema.GroupResource, namespace string) string
//	}
//	type Plugins struct {
//		Authorizer     auth.Authorizer       // replaces Config.Authorizer (use auth.AuthorizerUnion)
//		Authenticators []auth.Authenticator  // tried after Config.Authenticator
//		Mutators       []admission.Mutator   // after Config.AdmissionMutators
//		Validators     []admission.Validator // after Config.AdmissionValidators
//		Starters       []func(ctx context.Context)       // run by Run until shutdown; Run waits for them
//		WaitReady      []func(ctx context.Context) error // Run serves only once all returned nil
//		PostStartHooks []PostStartHook // named start-up work, run before WaitReady
//	}
//
// New calls it once, after building the stores; *Server is the StoreGetter.
// Plugin packages declare the StoreGetter method set they use as their own
// interface and do not import this package.
package apiserver

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/http2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/tokencache"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/componentstatus"
	"github.com/kubeproof/kubeproof/impl/apiserver/discovery"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/eviction"
	"github.com/kubeproof/kubeproof/impl/apiserver/filters"
	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/h2sched"
	"github.com/kubeproof/kubeproof/impl/apiserver/kubernetesservice"
	"github.com/kubeproof/kubeproof/impl/apiserver/metrics"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/apiproxy"
	"github.com/kubeproof/kubeproof/impl/kubeversion"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/convert"
)

// Config configures a Server. StorageFactory and Resources are required;
// every other field has a default.
type Config struct {
	// StorageFactory builds the store of each resource.
	StorageFactory storage.Factory
	// ComponentStatuses are the components a computed resource
	// (core/v1 componentstatuses) probes on each read; none when empty.
	// kube-apiserver probes its etcd backends, the controller manager and
	// the scheduler: componentstatus.KubeAPIServer.
	ComponentStatuses []componentstatus.Component
	// EtcdPrefix is the prefix of every key in etcd (--etcd-prefix,
	// "/registry" when empty), named in precondition errors as
	// kube-apiserver's storage names the key.
	EtcdPrefix string
	// Resources are served (registry.All()).
	Resources []*resource.Resource

	// Serving certificate: ServingCert, or CertFile and KeyFile. Run needs
	// one; Handler does not.
	ServingCert       *tls.Certificate
	CertFile, KeyFile string
	// ClientCA verifies client certificates (CN = user, O = groups).
	ClientCA *x509.CertPool
	// Authenticator replaces the default (x509 client certificates against
	// ClientCA) when set.
	Authenticator auth.Authenticator
	// Anonymous lets unauthenticated requests through as system:anonymous
	// (the authorizer decides). Off by default: they get 401, except
	// /healthz, /livez, /readyz and /version.
	Anonymous bool
	// TokenAuthenticators check bearer tokens before service account and
	// bootstrap tokens (--token-auth-file: auth.LoadTokenFile).
	TokenAuthenticators []auth.TokenAuthenticator
	// ServiceAccounts configures service account tokens (authenticating
	// them, and issuing them through serviceaccounts/token when it has a
	// signing key); nil: none.
	ServiceAccounts *ServiceAccountConfig
	// BootstrapTokenAuth authenticates bootstrap tokens
	// (--enable-bootstrap-token-auth).
	BootstrapTokenAuth bool
	// LastTokenAuthenticators check bearer tokens after every other token
	// authenticator, as kube-apiserver asks its TokenReview webhook
	// (--authentication-token-webhook-config-file) last.
	LastTokenAuthenticators []auth.TokenAuthenticator
	// Authorizer decides every request; nil is auth.AlwaysAllow. Whatever
	// it is (or Plugins' that replaces it), system:masters is allowed
	// before it is asked (withSystemMasters), as kube-apiserver's.
	Authorizer auth.Authorizer
	// AdmissionMutators run after the built-in NamespaceLifecycle plugin
	// (a mutating one); AdmissionValidators are the first validators.
	AdmissionMutators   []admission.Mutator
	AdmissionValidators []admission.Validator
	// AuditPolicy and AuditBackend record requests (--audit-policy-file,
	// --audit-log-path); either nil: no audit. Close closes the backend
	// when it is an io.Closer.
	AuditPolicy  *audit.Policy
	AuditBackend audit.Backend
	// AuditMetrics counts the requests failed because a blocking-strict
	// backend failed; nil counts nothing.
	AuditMetrics *audit.Metrics
	// DisableNamespaceLifecycle leaves the built-in NamespaceLifecycle
	// admission plugin out (--disable-admission-plugins=NamespaceLifecycle).
	DisableNamespaceLifecycle bool
	// Plugins, when set, is called once the stores exist; what it returns
	// extends the chain (see Plugins and StoreGetter).
	Plugins PluginsFunc

	// KubeletClientTLS is how pods/log, pods/exec and nodes/proxy reach
	// kubelets (client certificate, CA of their serving certificates); nil
	// connects without a client certificate and without verifying them,
	// as kube-apiserver does without --kubelet-client-certificate.
	KubeletClientTLS *tls.Config
	// ProxyDial, when set, is how pods/proxy and services/proxy connect
	// to pod and endpoint addresses (kube-apiserver's egress selector for
	// the cluster network); nil dials them directly.
	ProxyDial func(ctx context.Context, network, address string) (net.Conn, error)
	// OpenAPI serves /openapi/v2 and /openapi/v3 when set.
	OpenAPI http.Handler
	// ServiceClusterIPRange (--service-cluster-ip-range; default
	// 10.96.0.0/12; one CIDR, or two of different families for a
	// dual-stack cluster, the first the primary family) and
	// ServiceNodePortRange (--service-node-port-range; default
	// 30000-32767) are what services are allocated from, when
	// services are served. AdvertiseAddress (--advertise-address) is put in
	// the `kubernetes` endpoints; nil: chosen as kube-apiserver does
	// (ipallocator.AdvertiseAddress).
	ServiceClusterIPRange, ServiceNodePortRange string
	AdvertiseAddress                            net.IP
	// EndpointReconcilerType (--endpoint-reconciler-type) is how the
	// `kubernetes` Endpoints follow the API servers: "lease" (default:
	// each server keeps a lease on its address, renewed every
	// EndpointReconcileInterval, default 10 s, and expiring
	// EndpointLeaseTTL, default 15 s, after the last renewal; see
	// kubernetesendpoints.go) or "none" (no Endpoints are written).
	EndpointReconcilerType    string
	EndpointReconcileInterval time.Duration
	EndpointLeaseTTL          time.Duration
	// ServiceRepairInterval is how often the ClusterIP and NodePort
	// allocation records are checked against the services and repaired
	// (0: ipallocator.DefaultRepairInterval, 3 minutes, as kube-apiserver's
	// repair controllers; servicerepair.go).
	ServiceRepairInterval time.Duration
	// Metrics is where the server's metrics are registered and /metrics
	// reads from; nil makes a private registry.
	Metrics *prometheus.Registry

	// BindAddress is where Run listens ("127.0.0.1:6443" by default);
	// Listener, if set, is used instead.
	BindAddress string
	Listener    net.Listener
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound concurrent
	// read-only and mutating requests (defaults 400 and 200; negative:
	// unlimited). With API Priority and Fairness their sum is the seats
	// the priority levels share (either negative: no limit at all).
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// DisablePriorityAndFairness (--enable-priority-and-fairness=false)
	// keeps the legacy max-in-flight limits instead of API Priority and
	// Fairness (package flowcontrol), kube-apiserver's default.
	DisablePriorityAndFairness bool
	// EtcdCountMetricPollPeriod (--etcd-count-metric-poll-period) is how
	// often the stored objects of each resource are counted (with their
	// average size), for apiserver_resource_objects,
	// apiserver_resource_size_estimate_bytes and API Priority and
	// Fairness's list work estimates: default one minute, negative: never.
	EtcdCountMetricPollPeriod time.Duration
	// DisableSizeBasedListCostEstimate (kube-apiserver's
	// --feature-gates=SizeBasedListCostEstimate=false) makes API Priority
	// and Fairness estimate a list's seats by the number of objects it
	// goes through (at most 10) instead of the bytes it holds (a seat per
	// 100 kB, at most 100: kube-apiserver's default since 1.34), and
	// drops apiserver_resource_size_estimate_bytes.
	DisableSizeBasedListCostEstimate bool
	// EventTTL is how long events are kept after their last write
	// (kube-apiserver's --event-ttl; etcd deletes them through leases);
	// 0 keeps them until deleted.
	EventTTL time.Duration
	// MinRequestTimeout is the base of watches' randomized timeout
	// (default 30 minutes).
	MinRequestTimeout time.Duration
	// RequestTimeout bounds every request but watches (default 60 s, as
	// kube-apiserver's --request-timeout; negative: none).
	RequestTimeout time.Duration
	// MaxRequestBodyBytes limits request bodies (default 3 MiB).
	MaxRequestBodyBytes int64
	// ShutdownTimeout bounds graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// GitVersion is reported by /version (default DefaultGitVersion).
	GitVersion string
	// Logger; nil is slog.Default().
	Logger *slog.Logger
	// APIAudiences (--api-audiences) are the audiences requests' bearer
	// tokens, and TokenReviews without spec.audiences, are authenticated
	// for, whatever authenticators are configured; when empty, the service
	// account settings' (their APIAudiences, else their issuers).
	APIAudiences []string
	// TokenCacheNow is the clock of the bearer token cache's entries
	// (time.Now when nil): a test moves it on to see a token
	// authenticated again.
	TokenCacheNow func() time.Time
}

// ServiceAccountConfig is kube-apiserver's --service-account-* and
// --api-audiences flags.
type ServiceAccountConfig struct {
	// Issuers (--service-account-issuer): the first is put in new tokens,
	// all are accepted.
	Issuers []string
	// SigningKey (--service-account-signing-key-file) signs new tokens;
	// nil disables the TokenRequest API.
	SigningKey crypto.Signer
	// VerifyKeys (--service-account-key-file) verify tokens, besides the
	// signing key's public half.
	VerifyKeys []crypto.PublicKey
	// APIAudiences (--api-audiences; default: Issuers) a bound token must
	// be meant for; TokenRequests without audiences get them.
	APIAudiences []string
	// MaxTokenExpiration (--service-account-max-token-expiration) caps
	// requested expirations; 0: no cap.
	MaxTokenExpiration time.Duration
	// NoLegacyLookup (--service-account-lookup=false): legacy tokens are
	// not checked against their secret and service account.
	NoLegacyLookup bool
	// NoExtendTokenExpiration (--service-account-extend-token-expiration=false):
	// a pod-bound TokenRequest for the kubelet's default expiration (3607 s)
	// and the API audiences gets that expiration, not a token valid one
	// year that warns (is counted stale) after 3607 s.
	NoExtendTokenExpiration bool
}

// DefaultGitVersion is the Kubernetes version kubeproof reports.
const DefaultGitVersion = kubeversion.Default

// SystemNamespaces are created at start when missing.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// immortalNamespaces may not be deleted.
var immortalNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// Server is a configured API server.
type Server struct {
	cfg       Config
	log       *slog.Logger
	codecs    *codec.Codecs
	handlers  map[schema.GroupVersionResource]*endpoints.Handler
	nsHandler *endpoints.Handler
	nsStore   storage.Interface
	nsCache   *nsCache
	discovery *discovery.Handler
	registry  *prometheus.Registry
	handler   http.Handler
	destroy   []storage.DestroyFunc
	closeOnce sync.Once
	// health is what /healthz, /livez and /readyz check (health.go).
	health *health
	// bootstraps are the resources' objects created at start
	// (bootstrap.go).
	bootstraps []bootstrapHook
	// kubeletProxy serves pods/log, pods/exec and nodes/proxy.
	kubeletProxy *apiproxy.Proxy
	// proxyTransport carries pods/proxy and services/proxy requests.
	proxyTransport *http.Transport
	// requestMetrics are the request metrics (the connect subresources
	// count in apiserver_longrunning_requests while open).
	requestMetrics *metrics.Metrics
	// eviction serves pods/eviction (PodDisruptionBudgets honoured).
	eviction *eviction.Handler
	// stores are the resources' own stores by group/resource (StoreGetter).
	stores map[schema.GroupResource]storeEntry
	// served are all the served resources, those served from another's
	// storage included (EquivalentResources).
	served map[schema.GroupVersionResource]*resource.Resource
	// plugins are what Config.Plugins returned.
	plugins Plugins
	// saTokens issues and checks service account tokens (nil: none).
	saTokens *auth.ServiceAccountTokens
	// bearer is the bearer token authenticator (TokenReview uses it).
	bearer auth.BearerToken
	// reviewTokens is the token cache in front of the bearer token
	// authenticators, for requests and TokenReview (authn.go).
	reviewTokens *tokencache.Cache
	// authorizer is the one the filter chain asks (reviews use it).
	authorizer auth.Authorizer
	// admission is the admission chain the resource handlers run
	// (serviceaccounts/token runs it too).
	admission *admission.Chain
	// virtual are the review endpoints by group/version/resource.
	virtual map[schema.GroupVersionResource]virtualResource
	// services allocates ClusterIPs and NodePorts (nil: services not served).
	services *serviceAllocation
	// apf keeps API Priority and Fairness following its objects (nil:
	// disabled, or the flowcontrol resources are not served).
	apf *apfConfig
	// objectCounts counts the stored objects (nil: not polled).
	objectCounts *objectCounts
	// endpoints keeps this server in the `kubernetes` Endpoints (nil:
	// not served, or --endpoint-reconciler-type=none).
	endpoints *endpointReconciler
	// loopback is how the server calls itself (loopback.go).
	loopback *loopback
	// self calls the server's handler in process as its loopback
	// identity, for the server's own writes (loopback_inprocess.go).
	self *selfClients
}

// New builds a Server: one store per resource, the handler tree and the
// filter chain. It does no I/O against storage.
func New(cfg Config) (*Server, error) {
	if cfg.StorageFactory == nil {
		return nil, errors.New("apiserver: StorageFactory is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = auth.AlwaysAllow{}
	}
	if cfg.Authenticator == nil {
		cfg.Authenticator = auth.NewX509(cfg.ClientCA)
	}
	if cfg.MaxRequestsInFlight == 0 {
		cfg.MaxRequestsInFlight = 400
	}
	if cfg.MaxMutatingRequestsInFlight == 0 {
		cfg.MaxMutatingRequestsInFlight = 200
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = time.Minute
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = 3 << 20
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.GitVersion == "" {
		cfg.GitVersion = DefaultGitVersion
	}
	if err := checkEndpointReconcilerType(cfg.EndpointReconcilerType); err != nil {
		return nil, err
	}
	if cfg.EndpointReconcileInterval == 0 {
		cfg.EndpointReconcileInterval = kubernetesservice.DefaultInterval
	}
	if cfg.EndpointLeaseTTL == 0 {
		cfg.EndpointLeaseTTL = kubernetesservice.DefaultLeaseTTL
	}
	if cfg.BindAddress == "" {
		cfg.BindAddress = "127.0.0.1:6443"
	}
	codecs, err := codec.New()
	if err != nil {
		return nil, err
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	served := make([]schema.GroupVersionResource, 0, len(cfg.Resources))
	for _, r := range cfg.Resources {
		served = append(served, r.GroupVersionResource())
	}
	m, err := metrics.New(reg, served)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, codecs: codecs, registry: reg, requestMetrics: m,
		handlers: map[schema.GroupVersionResource]*endpoints.Handler{},
		stores:   map[schema.GroupResource]storeEntry{}}
	if s.loopback, err = newLoopback(); err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}

	chain := &admission.Chain{Mutators: cfg.AdmissionMutators}
	s.admission = chain
	opts := &endpoints.Options{
		Codecs: codecs, Admission: chain, MaxBodyBytes: cfg.MaxRequestBodyBytes,
		MinRequestTimeout: cfg.MinRequestTimeout, WatchStarted: m.WatchStarted,
		StoragePathPrefix: cfg.EtcdPrefix,
		ServedVersion:     kubeversion.MajorMinor(cfg.GitVersion),
	}
	opts.ConvertFrom = s.convertFrom
	prefixes := storagePrefixes(cfg.Resources)
	stores := map[schema.GroupVersionResource]storage.Interface{}
	byGVR := map[schema.GroupVersionResource]*resource.Resource{}
	s.served = byGVR
	for _, r := range cfg.Resources {
		gvr := r.GroupVersionResource()
		if _, dup := byGVR[gvr]; dup {
			s.Close()
			return nil, fmt.Errorf("apiserver: resource %s registered twice", gvr)
		}
		byGVR[gvr] = r
		if r.SharedStorage != nil {
			continue // served from another resource's store, below
		}
		if r.Computed {
			// Probed on each read, never stored (componentstatuses).
			stores[gvr] = componentstatus.NewStore(cfg.ComponentStatuses)
			continue
		}
		var ttl time.Duration
		if r.KeptForEventTTL {
			ttl = cfg.EventTTL
		}
		store, destroy, err := cfg.StorageFactory.New(storage.ResourceConfig{
			GroupResource: gvr.GroupResource(), StorageVersion: r.GroupVersion,
			ResourcePrefix: prefixes[gvr], NewFunc: r.New, NewListFunc: r.NewList,
			GetAttrs: resource.AttrFunc(r.Strategy), Namespaced: r.Namespaced,
			ObjectMetaFieldsOnly: resource.ObjectMetaFieldsOnly(r.Strategy),
			TTL:                  ttl,
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("apiserver: building storage for %s: %w", gvr, err)
		}
		s.destroy = append(s.destroy, destroy)
		stores[gvr] = store
		if _, seen := s.stores[gvr.GroupResource()]; !seen {
			s.stores[gvr.GroupResource()] = storeEntry{store: store, res: r, prefix: prefixes[gvr]}
		}
	}
	if err := s.wrapServices(stores, prefixes); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.newEndpointReconciler(); err != nil {
		s.Close()
		return nil, err
	}
	for _, r := range cfg.Resources {
		gvr := r.GroupVersionResource()
		store := stores[gvr]
		if sh := r.SharedStorage; sh != nil {
			of, ok := byGVR[sh.Of]
			if !ok || of.SharedStorage != nil {
				s.Close()
				return nil, fmt.Errorf("apiserver: %s shares the storage of %s, which is not a served resource with its own storage", gvr, sh.Of)
			}
			store = convert.New(convert.Config{
				Inner: stores[sh.Of], NewInner: of.New, NewInnerList: of.NewList,
				InnerAttrs: resource.AttrFunc(of.Strategy),
				ToInner:    sh.ToStorage, FromInner: sh.FromStorage, FieldLabel: sh.FieldLabel,
			})
		}
		h := endpoints.NewHandler(r, store, prefixes[gvr], opts)
		s.handlers[gvr] = h
		if removed, ok := h.Deprecated(); ok {
			m.Deprecated(gvr, removed)
		}
		if gvr == corev1.SchemeGroupVersion.WithResource("namespaces") {
			s.nsHandler, s.nsStore = h, store
			s.nsCache = newNSCache(store)
		}
	}
	if s.nsStore != nil && !cfg.DisableNamespaceLifecycle {
		// A mutating plugin, first of the chain, as kube-apiserver's.
		nl := &admission.NamespaceLifecycle{Get: s.getNamespace, Immortal: immortalNamespaces}
		chain.Mutators = append([]admission.Mutator{nl}, chain.Mutators...)
	}
	chain.Validators = append(chain.Validators, cfg.AdmissionValidators...)
	authorizer := cfg.Authorizer
	if cfg.Plugins != nil {
		if s.plugins, err = cfg.Plugins(s); err != nil {
			s.Close()
			return nil, fmt.Errorf("apiserver: building plugins: %w", err)
		}
		chain.Mutators = append(chain.Mutators, s.plugins.Mutators...)
		chain.Validators = append(chain.Validators, s.plugins.Validators...)
		if s.plugins.Authorizer != nil {
			authorizer = s.plugins.Authorizer
		}
	}
	authorizer = withSystemMasters(authorizer)
	if sa := cfg.ServiceAccounts; sa != nil {
		saMetrics, err := auth.NewServiceAccountMetrics(reg)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("apiserver: registering service account token metrics: %w", err)
		}
		s.saTokens = &auth.ServiceAccountTokens{Issuers: sa.Issuers, SigningKey: sa.SigningKey,
			VerifyKeys: sa.VerifyKeys, APIAudiences: sa.APIAudiences, Objects: storeLookup{s},
			LegacyTokens: legacyTokenTracker{s}, NoLegacyLookup: sa.NoLegacyLookup, Metrics: saMetrics}
	}
	authenticator, err := s.buildAuthenticator(reg)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("apiserver: building the authenticator: %w", err)
	}
	s.authorizer = authorizer
	// The handlers share opts: from here on every RBAC write is checked.
	opts.WriteCheck = s.escalationChecker(authorizer).Check

	s.kubeletProxy = newKubeletProxy(s, cfg.KubeletClientTLS)
	s.proxyTransport = newProxyTransport(cfg.ProxyDial)
	s.eviction = eviction.NewHandler(codecs, s, s.handlers[podsGVR], cfg.MaxRequestBodyBytes)
	discovered := append([]*resource.Resource(nil), cfg.Resources...)
	s.virtual = map[schema.GroupVersionResource]virtualResource{}
	for _, v := range s.virtualResources() {
		s.virtual[v.gvr] = v
		discovered = append(discovered, v.discoveryResource())
		m.Serve(v.gvr) // counted, as kube-apiserver counts its review resources
	}
	if _, ok := s.handlers[podsGVR]; ok {
		// The legacy bindings resource, a creater only: listed, and
		// counted, as kube-apiserver lists and counts it.
		discovered = append(discovered, &resource.Resource{
			GroupVersion: corev1.SchemeGroupVersion, Name: legacyBindingsGVR.Resource, SingularName: "binding",
			Kind: "Binding", Namespaced: true, Verbs: []string{"create"},
		})
		m.Serve(legacyBindingsGVR)
	}
	if s.discovery, err = discovery.New(discovered, codecs); err != nil {
		s.Close()
		return nil, err
	}
	var h http.Handler = http.HandlerFunc(s.route)
	h = filters.WithAuthorization(h, codecs, authorizer, s.log)
	var counts *flowcontrol.ObjectCounts // with API Priority and Fairness
	// As kube-apiserver's chain: flow control (or the in-flight bound)
	// after authentication and impersonation, so that it knows the
	// (effective) user.
	switch {
	case cfg.DisablePriorityAndFairness:
		h = filters.WithMaxInFlight(h, codecs, cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight)
	case cfg.MaxRequestsInFlight > 0 && cfg.MaxMutatingRequestsInFlight > 0:
		var waitLimit time.Duration // 0: flowcontrol.DefaultWaitLimit
		if cfg.RequestTimeout > 0 {
			waitLimit = cfg.RequestTimeout / 4 // as kube-apiserver
		}
		fc, err := flowcontrol.New(flowcontrol.Config{
			TotalSeats: cfg.MaxRequestsInFlight + cfg.MaxMutatingRequestsInFlight,
			WaitLimit:  waitLimit, Metrics: reg,
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("apiserver: building flow control: %w", err)
		}
		counts = flowcontrol.NewObjectCounts(nil)
		est := &flowcontrol.Estimator{Counts: counts, Watches: flowcontrol.NewWatchTracker(), ListFromStorage: cacher.DelegatesList,
			DisableSizeBasedListCostEstimate: cfg.DisableSizeBasedListCostEstimate}
		h = filters.WithPriorityAndFairness(h, codecs, fc, est)
		s.apf = newAPFConfig(s, fc)
	}
	if s.objectCounts, err = newObjectCounts(reg, s.countedResources(), counts, !cfg.DisableSizeBasedListCostEstimate,
		cfg.EtcdCountMetricPollPeriod, s.log); err != nil {
		s.Close()
		return nil, fmt.Errorf("apiserver: counting stored objects: %w", err)
	}
	h = filters.WithImpersonation(h, codecs, authorizer, s.log)
	auditCfg := audit.Config{Policy: cfg.AuditPolicy, Backend: cfg.AuditBackend, MaxBodyBytes: int(cfg.MaxRequestBodyBytes),
		Metrics: cfg.AuditMetrics, ProtobufJSON: codecs.ProtobufJSON}
	h = audit.WithAudit(h, auditCfg)
	h = filters.WithAuthentication(h, codecs, authenticator, cfg.Anonymous, publicPaths,
		audit.WithFailedAuthenticationAudit(filters.Unauthorized(codecs), auditCfg))
	h = filters.WithRequestTimeout(h, cfg.RequestTimeout)
	h = filters.WithMetrics(h, m)
	h = filters.WithRequestInfo(h)
	h = filters.WithPanicRecovery(h, codecs, s.log)
	// Outermost as kube-apiserver's WithAuditInit: every answer has an
	// Audit-Id, and an audited request's received time is taken here.
	h = audit.WithAuditInit(h, auditCfg)
	h = filters.WithStackReserve(h)
	s.handler = h
	if s.self, err = s.newSelfClients(); err != nil {
		s.Close()
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	var pluginHooks []string
	for _, hk := range s.plugins.PostStartHooks {
		pluginHooks = append(pluginHooks, hk.Name)
	}
	// The storages' hooks (the system PriorityClasses) come after the
	// RBAC policy's, as kube-apiserver registers its REST storage
	// providers' hooks in that order.
	s.bootstraps = s.bootstrapHooks()
	for _, b := range s.bootstraps {
		pluginHooks = append(pluginHooks, b.name)
	}
	_, configMaps := s.handlers[configMapsGVR]
	s.health = newHealth(hookOrder(s.apf != nil, s.objectCounts != nil, s.nsHandler != nil, configMaps,
		s.services != nil, pluginHooks))
	return s, nil
}

var publicPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

// storagePrefixes gives each resource its key prefix: "/<resource>", or
// "/<group>/<resource>" when a resource name is stored by several groups. A
// resource served from another's storage uses that one's prefix (events.k8s.io
// events live under /events with core events, as in Kubernetes).
func storagePrefixes(rs []*resource.Resource) map[schema.GroupVersionResource]string {
	count := map[string]int{}
	for _, r := range rs {
		if r.SharedStorage == nil {
			count[r.Name]++
		}
	}
	out := map[schema.GroupVersionResource]string{}
	for _, r := range rs {
		if r.SharedStorage == nil {
			p := "/" + r.Name
			if count[r.Name] > 1 && r.GroupVersion.Group != "" {
				p = "/" + r.GroupVersion.Group + "/" + r.Name
			}
			out[r.GroupVersionResource()] = p
		}
	}
	for _, r := range rs {
		if r.SharedStorage != nil {
			out[r.GroupVersionResource()] = out[r.SharedStorage.Of]
		}
	}
	return out
}

// Handler is the server's full HTTP handler (filters included). Requests
// without TLS client certificates are anonymous to it.
func (s *Server) Handler() http.Handler { return s.handler }

// Codecs returns the server's scheme and serializers.
func (s *Server) Codecs() *codec.Codecs { return s.codecs }

// Close releases the stores. Run calls it on return.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.health != nil {
			s.health.log.close()
		}
		if s.kubeletProxy != nil {
			s.kubeletProxy.Close()
		}
		if s.proxyTransport != nil {
			s.proxyTransport.CloseIdleConnections()
		}
		for _, d := range s.destroy {
			if d != nil {
				d()
			}
		}
		if c, ok := s.cfg.AuditBackend.(io.Closer); ok {
			if err := c.Close(); err != nil {
				s.log.Error("closing the audit log", "err", err)
			}
		}
	})
}

// Run creates the system namespaces and the resources' bootstrap objects
// (the system PriorityClasses), then serves HTTPS on the configured
// listener until ctx is done, then shuts down gracefully: open watches are
// ended, in-flight requests get ShutdownTimeout to finish.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	tlsCfg, err := s.tlsConfig()
	if err != nil {
		// A listener given is Run's to close, as on its other returns.
		if s.cfg.Listener != nil {
			_ = s.cfg.Listener.Close()
		}
		return err
	}
	ln := s.cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", s.cfg.BindAddress); err != nil {
			return fmt.Errorf("apiserver: listening on %s: %w", s.cfg.BindAddress, err)
		}
	}
	s.loopback.listening(ln.Addr())
	if err := s.EnsureSystemNamespaces(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	s.health.hookDone(hookSystemNamespaces)
	if err := s.ensureKubernetesService(ctx, ln.Addr()); err != nil {
		_ = ln.Close()
		return err
	}
	// Before the plugins' caches start: their first list holds the
	// system PriorityClasses, so a pod naming one is admitted from the
	// first request on.
	for _, b := range s.bootstraps {
		if err := s.runBootstrap(ctx, b); err != nil {
			_ = ln.Close()
			return err
		}
		s.health.hookDone(b.name)
	}
	baseCtx, cancelBase := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	defer func() {
		cancelBase()
		bg.Wait()
	}()
	if s.nsCache != nil {
		bg.Go(func() { s.nsCache.run(baseCtx) })
	}
	if s.services != nil {
		// The first pass before serving, as kube-apiserver's hook waits
		// for it; its check fails until one pass succeeded.
		rp := s.newServiceRepairer(baseCtx)
		first := s.repairServicesOnce(ctx, rp)
		bg.Go(func() { s.runServiceRepair(baseCtx, rp, first) })
	}
	if s.objectCounts != nil {
		bg.Go(func() { s.objectCounts.run(baseCtx) })
		s.health.hookDone(hookObjectCountTracker)
	}
	if _, ok := s.handlers[configMapsGVR]; ok {
		// Whatever the authenticators, as kube-apiserver's post-start
		// hook.
		bg.Go(func() { s.runLegacyTokenTracking(baseCtx) })
		s.health.hookDone(hookLegacyTokenTracking)
	}
	if s.apf != nil {
		if err := s.apf.ensure(ctx); err != nil {
			_ = ln.Close()
			return err
		}
		s.health.hookDone(hookAPFProducer)
		bg.Go(func() { s.apf.run(baseCtx) })
		s.health.hookDone(hookAPFConsumer)
		if err := waitReady(ctx, baseCtx, s.apf.waitSynced); err != nil {
			_ = ln.Close()
			return err
		}
	}
	for _, start := range s.plugins.Starters {
		bg.Go(func() { start(baseCtx) })
	}
	s.health.hookDone(hookStartInformers)
	for _, hk := range s.plugins.PostStartHooks {
		run := func(ctx context.Context) error {
			return hk.Run(ctx, PostStartHookContext{LoopbackClientConfig: rest.CopyConfig(s.self.config)})
		}
		if err := waitReady(ctx, baseCtx, run); err != nil {
			_ = ln.Close()
			return fmt.Errorf("apiserver: post-start hook %s: %w", hk.Name, err)
		}
		s.health.hookDone(hk.Name)
	}
	for _, wait := range s.plugins.WaitReady {
		if err := waitReady(ctx, baseCtx, wait); err != nil {
			_ = ln.Close()
			return fmt.Errorf("apiserver: waiting for plugins: %w", err)
		}
	}
	s.health.informersSynced.Store(true)
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
	// HTTP/2 through golang.org/x/net/http2 rather than net/http's copy
	// of it, for one setting net/http does not have: the write scheduler.
	// h2sched's looks only at streams with frames to send; the stock one
	// walks every open stream each round, ~1,000 idle watches on a
	// connection shared by simulated nodes. The other settings (the 1,000
	// streams) are srv.HTTP2's, which x/net reads.
	if err := http2.ConfigureServer(srv, &http2.Server{NewWriteScheduler: h2sched.New}); err != nil {
		_ = ln.Close()
		return fmt.Errorf("apiserver: configuring HTTP/2: %w", err)
	}
	s.firstEndpointReconcile(ctx)
	loopCtx, stopLoop := context.WithCancel(baseCtx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		s.runKubernetesServiceLoop(loopCtx)
	}()
	defer func() { stopLoop(); <-loopDone }()
	s.health.hookDone(hookBootstrapController)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("apiserver: serving: %w", err)
	case <-ctx.Done():
	}
	s.health.shuttingDown.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	// Out of the kubernetes endpoints first, so that clients go to the
	// other servers while this one drains.
	stopLoop()
	<-loopDone
	s.removeAPIEndpoints(sctx)
	// End watches (their contexts derive from baseCtx), then drain.
	cancelBase()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc
	return nil
}

// waitReady runs one WaitReady function with a context that ends with
// either ctx (Run's caller) or base (shutdown).
func waitReady(ctx, base context.Context, wait func(context.Context) error) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(base, cancel)
	defer stop()
	return wait(wctx)
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: s.loopback.getCertificate}
	switch {
	case s.cfg.ServingCert != nil:
		cfg.Certificates = []tls.Certificate{*s.cfg.ServingCert}
	case s.cfg.CertFile != "" && s.cfg.KeyFile != "":
		c, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("apiserver: loading serving certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	default:
		return nil, errors.New("apiserver: a serving certificate is required (ServingCert or CertFile/KeyFile)")
	}
	if s.cfg.ClientCA != nil {
		cfg.ClientCAs = s.cfg.ClientCA
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// route dispatches a request that passed the filters. The resource's
// handler is called from this small frame, not from routeTarget's, which
// parses the path: a watch stays under it for its whole life (see
// endpoints.Handler's watch on why its stack's depth matters).
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if h := s.routeTarget(w, r); h != nil {
		h.ServeHTTP(w, r)
	}
}

// routeTarget serves r itself, returning nil, unless it is for a
// resource's handler, which it returns.
//
//go:noinline
func (s *Server) routeTarget(w http.ResponseWriter, r *http.Request) *endpoints.Handler {
	p := r.URL.Path
	switch {
	case p == "/version" || p == "/version/":
		s.serveVersion(w, r)
		return nil
	case p == "/healthz" || p == "/livez" || p == "/readyz" ||
		strings.HasPrefix(p, "/healthz/") || strings.HasPrefix(p, "/livez/") || strings.HasPrefix(p, "/readyz/"):
		s.serveHealth(w, r)
		return nil
	case p == "/metrics":
		promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return nil
	case strings.HasPrefix(p, "/openapi/") && s.cfg.OpenAPI != nil:
		s.cfg.OpenAPI.ServeHTTP(w, r)
		return nil
	}
	var segBuf [4]string
	segs := leadingSegments(strings.Trim(p, "/"), &segBuf)
	if segs[0] != "api" && segs[0] != "apis" {
		s.notFound(w, r)
		return nil
	}
	var gv schema.GroupVersion
	rest := segs[1:]
	if segs[0] == "apis" {
		if len(rest) == 0 {
			s.discoveryOnly(w, r, s.discovery.ServeAPIs)
			return nil
		}
		gv.Group, rest = rest[0], rest[1:]
		if len(rest) == 0 {
			s.discoveryOnly(w, r, func(w http.ResponseWriter, r *http.Request) {
				if !s.discovery.ServeGroup(w, r, gv.Group) {
					s.notFound(w, r)
				}
			})
			return nil
		}
	} else if len(rest) == 0 || rest[0] == "" {
		s.discoveryOnly(w, r, s.discovery.ServeAPI)
		return nil
	}
	gv.Version, rest = rest[0], rest[1:]
	if segs[0] == "api" && gv.Version != "v1" {
		s.notFound(w, r)
		return nil
	}
	if len(rest) == 0 || (len(rest) == 1 && rest[0] == "") {
		s.discoveryOnly(w, r, func(w http.ResponseWriter, r *http.Request) {
			if !s.discovery.ServeVersion(w, r, gv) {
				s.notFound(w, r)
			}
		})
		return nil
	}
	info := requestInfo(r)
	if info == nil || !info.IsResourceRequest {
		s.notFound(w, r)
		return nil
	}
	if s.eviction.Serve(w, r, gv, info) {
		return nil
	}
	if s.serveKubeletSubresource(w, r, gv, info) {
		return nil
	}
	if gv == corev1.SchemeGroupVersion && s.serveProxySubresource(w, r, info) {
		return nil
	}
	if s.serveVirtual(w, r, gv, info) {
		return nil
	}
	gvr := gv.WithResource(info.Resource)
	if gvr == legacyBindingsGVR {
		// Served by pods' handler, as kube-apiserver serves it with
		// pods/binding's storage.
		gvr = podsGVR
	}
	h, ok := s.handlers[gvr]
	if !ok {
		s.notFound(w, r)
		return nil
	}
	return h
}

// legacyBindingsGVR is core/v1 bindings, kube-apiserver's older route to
// pods/binding: a Binding created in the pod's namespace, naming the pod.
var legacyBindingsGVR = corev1.SchemeGroupVersion.WithResource("bindings")

// leadingSegments splits path at "/" into at most len(buf) parts, the last
// holding the rest, as strings.SplitN(path, "/", len(buf)) does without
// allocating: route only looks at the first three segments and at whether
// more follow.
func leadingSegments(path string, buf *[4]string) []string {
	n := 0
	for ; n < len(buf)-1; n++ {
		seg, rest, more := strings.Cut(path, "/")
		buf[n] = seg
		if !more {
			return buf[:n+1]
		}
		path = rest
	}
	buf[n] = path
	return buf[:n+1]
}

func (s *Server) discoveryOnly(w http.ResponseWriter, r *http.Request, serve http.HandlerFunc) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		endpoints.WriteStatusError(w, r, s.codecs, apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(r.Method)))
		return
	}
	serve(w, r)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	se := apierrors.NewNotFound(schema.GroupResource{}, "")
	se.ErrStatus.Message = "the server could not find the requested resource"
	endpoints.WriteStatusError(w, r, s.codecs, se)
}
