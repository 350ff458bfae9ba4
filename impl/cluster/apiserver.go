package cluster

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/node"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/webhook"
	"github.com/kubeproof/kubeproof/impl/apiserver/componentstatus"
	"github.com/kubeproof/kubeproof/impl/apiserver/openapi"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// APIServerConfig is what an API server needs besides its flags' defaults.
type APIServerConfig struct {
	EtcdClient *clientv3.Client
	// ControllerManagerHealthzURL and SchedulerHealthzURL are the health
	// endpoints componentstatuses probe for the controller manager and
	// the scheduler; empty, kube-apiserver's (componentstatus.
	// ControllerManagerURL and SchedulerURL).
	ControllerManagerHealthzURL, SchedulerHealthzURL string
	// EtcdNewWatcher gives each etcd watch a Watcher of its own; nil means
	// clientv3.NewWatcher(EtcdClient). Required when EtcdClient is an
	// embedded etcd's in-process client (embedded.Etcd.NewWatcher).
	EtcdNewWatcher func() clientv3.Watcher
	// EtcdPrefix is the key prefix of objects (default "/registry").
	EtcdPrefix string
	WatchCache bool
	// CompactionInterval: 0 means the default (5 minutes), negative never.
	CompactionInterval time.Duration
	// EventTTL is how long events are kept after their last write: 0
	// means DefaultEventTTL, negative forever.
	EventTTL    time.Duration
	ServingCert *tls.Certificate
	ClientCA    *x509.CertPool
	// EtcdCountMetricPollPeriod is how often the stored objects are
	// counted (apiserver_resource_objects, API Priority and Fairness's list
	// estimates): 0 means the default (one minute), negative never.
	EtcdCountMetricPollPeriod time.Duration
	// KubeletClientTLS: how pods/log, pods/exec and nodes/proxy reach kubelets.
	KubeletClientTLS *tls.Config
	// Auth is the request chain: authentication, authorization, admission
	// and audit, as kube-apiserver's flags configure it.
	Auth AuthOptions
	// NodeTokens, when set, authenticates the bearer tokens of the
	// simulated nodes of this process (auth.NodeTokens; see nodes.go),
	// before any other token authenticator.
	NodeTokens auth.TokenAuthenticator
	// Services are the service address ranges and the advertised address.
	Services ServiceOptions
	// Listener, or BindAddress when nil.
	Listener    net.Listener
	BindAddress string
	Metrics     *prometheus.Registry
	Logger      *slog.Logger
	// TokenCacheNow is the clock of the bearer token cache
	// (apiserver.Config.TokenCacheNow): for tests; nil is time.Now.
	TokenCacheNow func() time.Time
}

// ServiceOptions are kube-apiserver's flags for Services, under their
// names. Empty fields take the API server's defaults (10.96.0.0/12,
// 30000-32767, the address the API server is reached at).
type ServiceOptions struct {
	// ClusterIPRange (--service-cluster-ip-range) is the CIDR ClusterIPs
	// are allocated from, or two of different IP families, comma-separated,
	// for dual-stack services; the first range's first address goes to the
	// kubernetes service.
	ClusterIPRange string
	// NodePortRange (--service-node-port-range), "low-high".
	NodePortRange string
	// AdvertiseAddress (--advertise-address) is the address put in the
	// kubernetes service's endpoints.
	AdvertiseAddress net.IP
	// EndpointReconcilerType (--endpoint-reconciler-type): "lease" (""),
	// or "none".
	EndpointReconcilerType string
}

// AuthOptions are kube-apiserver's flags of the request chain, under
// their names.
type AuthOptions struct {
	// AuthorizationModes (--authorization-mode), tried in order: Node,
	// RBAC, Webhook, AlwaysAllow, AlwaysDeny. Empty:
	// DefaultAuthorizationModes.
	AuthorizationModes []string
	// AuthorizationWebhookConfigFile (--authorization-webhook-config-file):
	// the kubeconfig of the Webhook mode's service.
	AuthorizationWebhookConfigFile string
	// AuthorizationWebhookVersion (--authorization-webhook-version): the
	// SubjectAccessReview version sent, v1 ("") or v1beta1.
	AuthorizationWebhookVersion string
	// AuthorizationWebhookCacheAuthorizedTTL and
	// AuthorizationWebhookCacheUnauthorizedTTL
	// (--authorization-webhook-cache-authorized-ttl, 5m, and
	// --authorization-webhook-cache-unauthorized-ttl, 30s): how long the
	// webhook's answers are cached; 0 does not cache.
	AuthorizationWebhookCacheAuthorizedTTL, AuthorizationWebhookCacheUnauthorizedTTL time.Duration
	// AuthenticationTokenWebhookConfigFile
	// (--authentication-token-webhook-config-file): the kubeconfig of a
	// TokenReview service asked about bearer tokens no other
	// authenticator knows.
	AuthenticationTokenWebhookConfigFile string
	// AuthenticationTokenWebhookVersion
	// (--authentication-token-webhook-version): v1 ("") or v1beta1.
	AuthenticationTokenWebhookVersion string
	// AuthenticationTokenWebhookCacheTTL
	// (--authentication-token-webhook-cache-ttl, 2m).
	AuthenticationTokenWebhookCacheTTL time.Duration
	// TokenAuthFile (--token-auth-file): static bearer tokens, CSV.
	TokenAuthFile string
	// ServiceAccountIssuers (--service-account-issuer): the first goes
	// into new tokens; default DefaultServiceAccountIssuer when a key is
	// configured.
	ServiceAccountIssuers []string
	// ServiceAccountKeyFiles (--service-account-key-file) verify service
	// account tokens.
	ServiceAccountKeyFiles []string
	// ServiceAccountSigningKeyFile (--service-account-signing-key-file)
	// signs them (TokenRequest).
	ServiceAccountSigningKeyFile string
	// ServiceAccountSigningKey is used when no file is given (kubeproof up
	// generates one).
	ServiceAccountSigningKey crypto.Signer
	// APIAudiences (--api-audiences); default: the issuers.
	APIAudiences []string
	// ServiceAccountMaxTokenExpiration (--service-account-max-token-expiration).
	ServiceAccountMaxTokenExpiration time.Duration
	// NoServiceAccountLookup (--service-account-lookup=false): legacy
	// service account tokens are accepted without checking that their
	// secret and service account still exist.
	NoServiceAccountLookup bool
	// NoServiceAccountExtendTokenExpiration
	// (--service-account-extend-token-expiration=false): kubelets' projected
	// tokens get the expiration they ask for, not one year with a warnafter.
	NoServiceAccountExtendTokenExpiration bool
	// EnableBootstrapTokenAuth (--enable-bootstrap-token-auth).
	EnableBootstrapTokenAuth bool
	// AnonymousAuth (--anonymous-auth): unauthenticated requests run as
	// system:anonymous instead of getting 401.
	AnonymousAuth bool
	// EnableAdmissionPlugins and DisableAdmissionPlugins
	// (--enable-admission-plugins, --disable-admission-plugins) adjust
	// admission's default plugin set.
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// AdmissionControlConfigFile (--admission-control-config-file): an
	// AdmissionConfiguration configuring the enabled plugins (kubeproof
	// reads PodSecurity's, ResourceQuota's and the admission webhooks';
	// others' are logged as ignored).
	AdmissionControlConfigFile string
	// DefaultNotReadyTolerationSeconds and
	// DefaultUnreachableTolerationSeconds
	// (--default-not-ready-toleration-seconds,
	// --default-unreachable-toleration-seconds; 0: 300) are the
	// tolerations DefaultTolerationSeconds gives pods.
	DefaultNotReadyTolerationSeconds, DefaultUnreachableTolerationSeconds int64
	// AuditLogPath (--audit-log-path; "-" is standard output) and
	// AuditPolicyFile (--audit-policy-file): events are recorded when
	// both a policy and a backend (a log path, a webhook config file or
	// both) are given; either alone is accepted and records nothing, as
	// kube-apiserver.
	AuditLogPath, AuditPolicyFile string
	// AuditLog are the other --audit-log-* flags (its Path is
	// AuditLogPath's); the zero value is kube-apiserver's defaults.
	AuditLog audit.LogOptions
	// AuditWebhook are the --audit-webhook-* flags; the zero value (no
	// config file) is no webhook.
	AuditWebhook audit.WebhookOptions
	// DisablePriorityAndFairness (--enable-priority-and-fairness=false)
	// keeps the legacy max-in-flight limits instead of API Priority and
	// Fairness.
	DisablePriorityAndFairness bool
	// DisableSizeBasedListCostEstimate
	// (--feature-gates=SizeBasedListCostEstimate=false) makes API
	// Priority and Fairness estimate lists by object count, not size.
	DisableSizeBasedListCostEstimate bool
	// EnableAggregatorRouting (--enable-aggregator-routing) calls the
	// admission webhooks addressed by service at one of the service's
	// ready endpoints instead of its ClusterIP.
	EnableAggregatorRouting bool
}

// DefaultAuthorizationModes is --authorization-mode's default in kubeproof
// (kube-apiserver's own default is AlwaysAllow; every real cluster sets
// Node,RBAC).
var DefaultAuthorizationModes = []string{"Node", "RBAC"}

// DefaultServiceAccountIssuer is the issuer of service account tokens
// when none is given (kubeadm's).
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// AuthorizationModes are the --authorization-mode values kubeproof has.
var AuthorizationModes = []string{"Node", "RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny"}

// DefaultEventTTL is kube-apiserver's default --event-ttl.
const DefaultEventTTL = time.Hour

// eventTTL is apiserver.Config.EventTTL for a configured one (0: the
// default; negative: forever, which the API server's 0 means).
func eventTTL(configured time.Duration) time.Duration {
	switch {
	case configured == 0:
		return DefaultEventTTL
	case configured < 0:
		return 0
	}
	return configured
}

// NewAPIServer assembles an API server serving every registered resource
// (registry.All) with OpenAPI documents, on etcd through the storage
// factory it returns, behind the request chain cfg.Auth describes. Close
// the factory after the server has stopped.
func NewAPIServer(cfg APIServerConfig) (*apiserver.Server, *storagebackend.Factory, error) {
	compaction := cfg.CompactionInterval
	switch {
	case compaction == 0:
		compaction = compact.DefaultInterval
	case compaction < 0:
		compaction = 0
	}
	chain, err := buildChain(cfg.Auth)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Metrics != nil && chain.auditMetrics != nil {
		if err := cfg.Metrics.Register(chain.auditMetrics); err != nil {
			chain.close()
			return nil, nil, fmt.Errorf("registering audit metrics: %w", err)
		}
	}
	if cfg.NodeTokens != nil {
		chain.tokens = append([]auth.TokenAuthenticator{cfg.NodeTokens}, chain.tokens...)
	}
	var lastTokens []auth.TokenAuthenticator
	if chain.tokenWebhook != nil {
		lastTokens = append(lastTokens, chain.tokenWebhook)
	}
	// The prefix rooted as the storage roots it ("foo" keeps keys under
	// "/foo/"), so precondition errors name the keys the storage writes;
	// with its trailing slash, so a root prefix ("/") is not the empty
	// default ("/registry").
	etcdPrefix := storage.NormalizePrefix(cfg.EtcdPrefix) + "/"
	factory := storagebackend.NewFactory(storagebackend.Config{
		Client: cfg.EtcdClient, NewWatcher: cfg.EtcdNewWatcher, Prefix: etcdPrefix, WatchCache: cfg.WatchCache,
		CompactionInterval: compaction, Metrics: cfg.Metrics, Logger: cfg.Logger,
	})
	resources := registry.All()
	openAPI, err := openapi.NewHandler(resources)
	if err != nil {
		factory.Close()
		chain.close()
		return nil, nil, fmt.Errorf("building OpenAPI documents: %w", err)
	}
	srv, err := apiserver.New(apiserver.Config{
		StorageFactory: factory,
		EtcdPrefix:     etcdPrefix,
		Resources:      resources,
		// kube-apiserver's components: the controller manager, the
		// scheduler and its one etcd storage backend.
		ComponentStatuses: componentstatus.KubeAPIServer(cfg.ControllerManagerHealthzURL, cfg.SchedulerHealthzURL,
			componentstatus.UserAgent(apiserver.VersionInfo(apiserver.DefaultGitVersion)), componentstatus.Etcd{KV: cfg.EtcdClient, Prefix: etcdPrefix}),
		ServingCert:               cfg.ServingCert,
		ClientCA:                  cfg.ClientCA,
		KubeletClientTLS:          cfg.KubeletClientTLS,
		TokenAuthenticators:       chain.tokens,
		LastTokenAuthenticators:   lastTokens,
		ServiceAccounts:           chain.serviceAccounts,
		APIAudiences:              cfg.Auth.APIAudiences,
		BootstrapTokenAuth:        cfg.Auth.EnableBootstrapTokenAuth,
		Anonymous:                 cfg.Auth.AnonymousAuth,
		DisableNamespaceLifecycle: true, // admission.NewPlugins has it
		Plugins:                   chain.plugins,
		AuditPolicy:               chain.auditPolicy,
		AuditBackend:              chain.backend(),
		AuditMetrics:              chain.auditMetrics,
		OpenAPI:                   openAPI,
		Metrics:                   cfg.Metrics,
		Listener:                  cfg.Listener,
		BindAddress:               cfg.BindAddress,
		ServiceClusterIPRange:     cfg.Services.ClusterIPRange,
		ServiceNodePortRange:      cfg.Services.NodePortRange,
		EventTTL:                  eventTTL(cfg.EventTTL),
		EtcdCountMetricPollPeriod: cfg.EtcdCountMetricPollPeriod,
		AdvertiseAddress:          cfg.Services.AdvertiseAddress,
		EndpointReconcilerType:    cfg.Services.EndpointReconcilerType,
		Logger:                    cfg.Logger,
		TokenCacheNow:             cfg.TokenCacheNow,

		DisablePriorityAndFairness:       cfg.Auth.DisablePriorityAndFairness,
		DisableSizeBasedListCostEstimate: cfg.Auth.DisableSizeBasedListCostEstimate,
	})
	if err != nil {
		factory.Close()
		chain.close()
		return nil, nil, err
	}
	return srv, factory, nil
}

// chain is the request chain built from AuthOptions before the server.
type chain struct {
	tokens          []auth.TokenAuthenticator
	serviceAccounts *apiserver.ServiceAccountConfig
	auditPolicy     *audit.Policy
	auditBackend    audit.Backend
	auditMetrics    *audit.Metrics
	plugins         apiserver.PluginsFunc
	// authzWebhook is the Webhook mode's authorizer, tokenWebhook the
	// TokenReview webhook; nil when not configured.
	authzWebhook *webhook.Authorizer
	tokenWebhook *webhook.TokenAuthenticator
}

// backend is the audit backend, nil when none.
func (c *chain) backend() audit.Backend { return c.auditBackend }

func (c *chain) close() {
	if cl, ok := c.auditBackend.(io.Closer); ok {
		_ = cl.Close()
	}
}

// buildChain validates o (every error together, as kube-apiserver's
// options validation) and then builds the chain, reading the files o
// names.
func buildChain(o AuthOptions) (*chain, error) {
	if err := utilerrors.NewAggregate(o.Validate()); err != nil {
		return nil, err
	}
	c := &chain{}
	if o.TokenAuthFile != "" {
		tf, err := auth.LoadTokenFile(o.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		c.tokens = append(c.tokens, tf)
	}
	sa, err := serviceAccountConfig(o)
	if err != nil {
		return nil, err
	}
	c.serviceAccounts = sa
	modes := o.AuthorizationModes
	if len(modes) == 0 {
		modes = DefaultAuthorizationModes
	}
	if c.authzWebhook, err = authorizationWebhook(o, slices.Contains(modes, "Webhook")); err != nil {
		return nil, err
	}
	if c.tokenWebhook, err = tokenWebhook(o, sa); err != nil {
		return nil, err
	}
	admissionPlugins, err := admission.EnabledPlugins(o.EnableAdmissionPlugins, o.DisableAdmissionPlugins)
	if err != nil {
		return nil, err
	}
	admissionOpts := admission.Options{
		NotReadyTolerationSeconds:    o.DefaultNotReadyTolerationSeconds,
		UnreachableTolerationSeconds: o.DefaultUnreachableTolerationSeconds,
		EnableAggregatorRouting:      o.EnableAggregatorRouting,
	}
	admissionConfig, err := admission.ReadAdmissionConfiguration(o.AdmissionControlConfigFile)
	if err != nil {
		return nil, fmt.Errorf("failed to initialize admission: failed to read plugin config: %w", err)
	}
	ignored, err := admissionConfig.Apply(admissionPlugins, &admissionOpts)
	if err != nil {
		return nil, fmt.Errorf("failed to initialize admission: %w", err)
	}
	if len(ignored) > 0 {
		slog.Warn("--admission-control-config-file configures admission plugins kubeproof reads no configuration of; ignored", "plugins", ignored)
	}
	// Either audit flag may come alone, as kube-apiserver's: a backend
	// without a policy, or a policy without a backend, records nothing.
	logOpts := o.AuditLog
	logOpts.Path = o.AuditLogPath
	if o.AuditPolicyFile != "" {
		c.auditMetrics = audit.NewMetrics()
	}
	if c.auditPolicy, c.auditBackend, err = audit.Configure(o.AuditPolicyFile, logOpts, o.AuditWebhook, c.auditMetrics, slog.Default()); err != nil {
		return nil, err
	}
	c.plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
		var p apiserver.Plugins
		// system:masters first, whatever the modes, as kube-apiserver's
		// authorizer configuration.
		union := auth.AuthorizerUnion{auth.PrivilegedGroups{bootstrappolicy.SystemMastersGroup}}
		for _, m := range modes {
			switch m {
			case "Node":
				a, err := node.New(stores, node.Config{FieldSelector: requestFieldSelector})
				if err != nil {
					return p, fmt.Errorf("building the Node authorizer: %w", err)
				}
				union = append(union, a)
				p.Starters = append(p.Starters, a.Run)
				p.WaitReady = append(p.WaitReady, a.WaitSynced)
			case "RBAC":
				a, start, bootstrap, wait, err := rbacAuthorizer(stores, ensureBootstrapPolicy)
				if err != nil {
					return p, err
				}
				union = append(union, a)
				p.RBACRules = a
				p.Starters = append(p.Starters, start)
				p.PostStartHooks = append(p.PostStartHooks, bootstrap)
				p.WaitReady = append(p.WaitReady, wait)
			case "Webhook":
				union = append(union, c.authzWebhook)
			case "AlwaysAllow":
				union = append(union, auth.AlwaysAllow{})
			case "AlwaysDeny":
				union = append(union, auth.AlwaysDeny{})
			}
		}
		p.Authorizer = union
		opts := admissionOpts
		opts.Authorizer = union
		mut, val, starters, err := admission.NewPluginsWithOptions(admissionPlugins, stores, opts)
		if err != nil {
			return p, err
		}
		p.Mutators, p.Validators = mut, val
		p.Starters = append(p.Starters, starters...)
		return p, nil
	}
	return c, nil
}

// ensureBootstrapPolicy writes the default RBAC policy through the
// server's loopback client, as kube-apiserver's rbac/bootstrap-roles hook:
// its writes are audited, admitted and recorded in managedFields under
// kube-apiserver.
func ensureBootstrapPolicy(ctx context.Context, hc apiserver.PostStartHookContext) error {
	return bootstrappolicy.EnsureThrough(ctx, hc.LoopbackClientConfig)
}

// rbacAuthorizer builds the RBAC authorizer, the loop that keeps its
// caches (start), the post-start hook writing the default policy with
// policy (kube-apiserver's rbac/bootstrap-roles, bootstrap) and the wait
// for the caches to sync (wait), which the server does before it serves.
// The
// default policy is written first and the caches first list only
// after it: a cache that listed while the policy was being written would
// say it had synced without the policy, and the first requests (an
// anonymous /version) would be refused until its watch caught up.
func rbacAuthorizer(stores apiserver.StoreGetter, policy func(context.Context, apiserver.PostStartHookContext) error) (a *rbac.Authorizer, start func(context.Context), bootstrap apiserver.PostStartHook, wait func(context.Context) error, err error) {
	if a, err = rbac.New(stores); err != nil {
		return nil, nil, bootstrap, nil, fmt.Errorf("building the RBAC authorizer: %w", err)
	}
	written := make(chan struct{})
	var once sync.Once
	ensure := func(ctx context.Context, hc apiserver.PostStartHookContext) error {
		if err := policy(ctx, hc); err != nil {
			return err
		}
		once.Do(func() { close(written) })
		return nil
	}
	start = func(ctx context.Context) {
		select {
		case <-written:
			a.Run(ctx)
		case <-ctx.Done():
		}
	}
	return a, start, apiserver.PostStartHook{Name: "rbac/bootstrap-roles", Run: ensure}, a.WaitSynced, nil
}

// authorizationWebhook builds the Webhook mode's authorizer (nil when the
// mode is not on); its flags are validated (AuthOptions.Validate).
func authorizationWebhook(o AuthOptions, on bool) (*webhook.Authorizer, error) {
	if !on {
		return nil, nil
	}
	client, err := webhook.NewClient(o.AuthorizationWebhookConfigFile, webhook.DefaultRetryBackoff())
	if err != nil {
		return nil, fmt.Errorf("--authorization-webhook-config-file: %w", err)
	}
	return webhook.NewAuthorizer(webhook.AuthorizerConfig{Client: client, Version: o.AuthorizationWebhookVersion,
		AuthorizedTTL: o.AuthorizationWebhookCacheAuthorizedTTL, UnauthorizedTTL: o.AuthorizationWebhookCacheUnauthorizedTTL})
}

// tokenWebhook builds the TokenReview webhook authenticator (nil when no
// config file is given). It asks for the API audiences: --api-audiences,
// else the service account issuers.
func tokenWebhook(o AuthOptions, sa *apiserver.ServiceAccountConfig) (*webhook.TokenAuthenticator, error) {
	if o.AuthenticationTokenWebhookConfigFile == "" {
		return nil, nil
	}
	client, err := webhook.NewClient(o.AuthenticationTokenWebhookConfigFile, webhook.DefaultRetryBackoff())
	if err != nil {
		return nil, fmt.Errorf("--authentication-token-webhook-config-file: %w", err)
	}
	auds := o.APIAudiences
	if len(auds) == 0 && sa != nil {
		auds = sa.Issuers
	}
	return webhook.NewTokenAuthenticator(webhook.TokenAuthenticatorConfig{Client: client, Version: o.AuthenticationTokenWebhookVersion,
		APIAudiences: auds, CacheTTL: o.AuthenticationTokenWebhookCacheTTL})
}

// requestFieldSelector gives the Node authorizer a list's field selector.
func requestFieldSelector(_ context.Context, info *request.Info) string { return info.FieldSelector }

// serviceAccountConfig reads the --service-account-* keys; nil when none
// is configured.
func serviceAccountConfig(o AuthOptions) (*apiserver.ServiceAccountConfig, error) {
	for _, w := range extendTokenExpirationWarnings(o) {
		slog.Warn(w)
	}
	signer := o.ServiceAccountSigningKey
	if o.ServiceAccountSigningKeyFile != "" {
		k, err := auth.LoadSigningKey(o.ServiceAccountSigningKeyFile)
		if err != nil {
			return nil, err
		}
		signer = k
	}
	var verify []crypto.PublicKey
	for _, f := range o.ServiceAccountKeyFiles {
		keys, err := auth.LoadVerifyKeys(f)
		if err != nil {
			return nil, err
		}
		verify = append(verify, keys...)
	}
	if signer == nil && len(verify) == 0 {
		return nil, nil // issuers without keys are refused by AuthOptions.Validate
	}
	issuers := o.ServiceAccountIssuers
	if len(issuers) == 0 {
		issuers = []string{DefaultServiceAccountIssuer}
	}
	return &apiserver.ServiceAccountConfig{Issuers: issuers, SigningKey: signer, VerifyKeys: verify,
		APIAudiences: o.APIAudiences, MaxTokenExpiration: o.ServiceAccountMaxTokenExpiration,
		NoLegacyLookup: o.NoServiceAccountLookup, NoExtendTokenExpiration: o.NoServiceAccountExtendTokenExpiration}, nil
}

// extendTokenExpirationWarnings are what kube-apiserver warns of at start
// when --service-account-extend-token-expiration is on and
// --service-account-max-token-expiration is set: a max below 3607 s
// shortens kubelets' requests so that none is extended, and a max below
// the extension is exceeded by extended tokens (the max does not cap them).
func extendTokenExpirationWarnings(o AuthOptions) []string {
	max := o.ServiceAccountMaxTokenExpiration
	if o.NoServiceAccountExtendTokenExpiration || max == 0 {
		return nil
	}
	var out []string
	if max < auth.WarnOnlyBoundTokenExpiration {
		out = append(out, fmt.Sprintf("service-account-extend-token-expiration is true, in order to correctly trigger safe transition logic, service-account-max-token-expiration must be set longer than %d seconds (currently %s)",
			int64(auth.WarnOnlyBoundTokenExpiration/time.Second), max))
	}
	if max < auth.ExpirationExtension {
		out = append(out, fmt.Sprintf("service-account-extend-token-expiration is true, enabling tokens valid up to %d seconds, which is longer than service-account-max-token-expiration set to %s",
			int64(auth.ExpirationExtension/time.Second), max))
	}
	return out
}

// EtcdClientLogger is the logger of kubeproof's etcd clients: errors only,
// so that etcd's client warnings (retries, balancer changes) stay out of a
// quiet log.
func EtcdClientLogger() *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.ErrorLevel)
	lg, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return lg
}
