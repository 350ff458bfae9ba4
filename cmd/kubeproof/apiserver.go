package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
)

// newAPIServerCommand is `kubeproof apiserver`: the API server alone on an
// external etcd cluster. Several may share one etcd cluster. Flags carry
// kube-apiserver's names.
func newAPIServerCommand() *cobra.Command {
	var (
		logs                          logOptions
		etcdServers                   []string
		etcdPrefix                    string
		etcdCAFile, etcdCert, etcdKey string
		bindAddress                   net.IP
		securePort                    int
		tlsCertFile, tlsKeyFile       string
		clientCAFile                  string
		certDir                       string
		watchCache                    bool
		compaction                    time.Duration
		eventTTL                      time.Duration
		countPoll                     time.Duration
		authOpts                      cluster.AuthOptions
		services                      cluster.ServiceOptions
	)
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the API server alone against an etcd cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := logs.logger()
			if err != nil {
				return err
			}
			completeAuthorizationModes(cmd.Flags(), &authOpts)
			if err := validateAPIServerOptions(etcdServers, bindAddress, securePort, services, authOpts); err != nil {
				return err
			}
			serving, clientCA, err := apiserverCredentials(tlsCertFile, tlsKeyFile, clientCAFile, certDir)
			if err != nil {
				return err
			}
			etcdTLS, err := etcdClientTLS(etcdCAFile, etcdCert, etcdKey)
			if err != nil {
				return err
			}
			etcdClient, err := clientv3.New(clientv3.Config{Endpoints: etcdServers, TLS: etcdTLS, DialTimeout: 10 * time.Second, Logger: cluster.EtcdClientLogger()})
			if err != nil {
				return fmt.Errorf("connecting to etcd %v: %w", etcdServers, err)
			}
			defer etcdClient.Close()
			// Listen here rather than in the server, so that the address
			// printed is the one serving: with --secure-port 0, the port
			// picked.
			bind := net.JoinHostPort(bindAddress.String(), strconv.Itoa(securePort))
			ln, err := net.Listen("tcp", bind)
			if err != nil {
				return fmt.Errorf("listening on %s: %w", bind, err)
			}
			srv, factory, err := cluster.NewAPIServer(cluster.APIServerConfig{
				EtcdClient: etcdClient, EtcdPrefix: etcdPrefixFlag(etcdPrefix), WatchCache: watchCache,
				CompactionInterval: compactionFlag(compaction), EventTTL: eventTTLFlag(eventTTL), ServingCert: &serving, ClientCA: clientCA,
				EtcdCountMetricPollPeriod: countPollFlag(countPoll), Auth: authOpts,
				Services: services,
				Listener: ln,
				Metrics:  prometheus.NewRegistry(), Logger: logger,
			})
			if err != nil {
				_ = ln.Close()
				return err
			}
			defer factory.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "Serving securely on %s\n", ln.Addr())
			return srv.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	logs.addFlags(fs)
	fs.StringSliceVar(&etcdServers, "etcd-servers", nil, "etcd endpoints (scheme://ip:port), comma separated.")
	addEtcdPrefixFlag(fs, &etcdPrefix)
	fs.StringVar(&etcdCAFile, "etcd-cafile", "", "SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&etcdCert, "etcd-certfile", "", "SSL certification file used to secure etcd communication.")
	fs.StringVar(&etcdKey, "etcd-keyfile", "", "SSL key file used to secure etcd communication.")
	fs.IPVar(&bindAddress, "bind-address", net.IPv4(127, 0, 0, 1), "The IP address on which to listen for the --secure-port port (0.0.0.0 or :: for all interfaces).")
	addServiceFlags(fs, &services)
	fs.IntVar(&securePort, "secure-port", 6443, "The port on which to serve HTTPS; 0 picks a free one.")
	fs.StringVar(&tlsCertFile, "tls-cert-file", "", "File containing the default x509 serving certificate (PEM).")
	fs.StringVar(&tlsKeyFile, "tls-private-key-file", "", "File containing the default x509 private key matching --tls-cert-file.")
	fs.StringVar(&clientCAFile, "client-ca-file", "", "Client certificates signed by this CA are authenticated (CN = user, O = groups).")
	fs.StringVar(&certDir, "cert-dir", "apiserver.local.config/certificates", "Where a CA and serving certificate are generated when --tls-cert-file is not given.")
	fs.BoolVar(&watchCache, "watch-cache", true, "Enable the watch cache.")
	addCompactionFlag(fs, &compaction)
	addEventTTLFlag(fs, &eventTTL)
	addCountPollFlag(fs, &countPoll)
	enable, disable := cluster.UpAdmissionPlugins()
	addAuthFlags(fs, &authOpts, cluster.DefaultAuthorizationModes, enable, disable)
	fs.Int64Var(&authOpts.DefaultNotReadyTolerationSeconds, "default-not-ready-toleration-seconds", 300, "tolerationSeconds of the not-ready:NoExecute toleration DefaultTolerationSeconds adds to pods.")
	fs.Int64Var(&authOpts.DefaultUnreachableTolerationSeconds, "default-unreachable-toleration-seconds", 300, "tolerationSeconds of the unreachable:NoExecute toleration DefaultTolerationSeconds adds to pods.")
	return cmd
}

// validateAPIServerOptions is kube-apiserver's options validation for
// the flags kubeproof has. As kube-apiserver, a --service-cluster-ip-range
// its option completion refuses comes first and alone; then every option
// group's errors, in its order (etcd, secure serving, the request
// chain's: authentication, authorization, audit, admission; then the
// Services ranges and the advertised address's family), are reported
// together as one aggregate ("[a, b]"; one error as it is); then an
// unknown --endpoint-reconciler-type, which kube-apiserver finds while
// building its configuration. The advertised address's family is
// checked as kube-apiserver defaults it: a specific bind address stands
// for an absent or unspecified --advertise-address. Files are read and
// certificates generated after it (see cluster.AuthOptions.Validate for
// where kube-apiserver differs).
func validateAPIServerOptions(etcdServers []string, bindAddress net.IP, securePort int, services cluster.ServiceOptions, auth cluster.AuthOptions) error {
	if err := services.Complete(); err != nil {
		return err
	}
	var errs []error
	if len(etcdServers) == 0 {
		errs = append(errs, errors.New("--etcd-servers must be specified"))
	}
	errs = append(errs, cluster.ValidateSecurePort(securePort)...)
	errs = append(errs, auth.Validate()...)
	return finishServiceValidation(errs, services.WithBindAddress(bindAddress))
}

// finishServiceValidation appends the Services flags' validation errors
// to errs (the other groups', in kube-apiserver's order) and returns
// them as one aggregate; without any, it returns the
// --endpoint-reconciler-type error, if any.
func finishServiceValidation(errs []error, services cluster.ServiceOptions) error {
	errs = append(errs, services.Validate()...)
	if err := utilerrors.NewAggregate(errs); err != nil {
		return err
	}
	return services.CheckEndpointReconcilerType()
}

// addEventTTLFlag adds kube-apiserver's --event-ttl.
func addEventTTLFlag(fs *pflag.FlagSet, ttl *time.Duration) {
	fs.DurationVar(ttl, "event-ttl", cluster.DefaultEventTTL, "How long events are kept after their last write; 0 keeps them until deleted.")
}

// eventTTLFlag is cluster's EventTTL for --event-ttl's value (whose 0,
// as kube-apiserver's, keeps events until deleted).
func eventTTLFlag(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return -1
	}
	return ttl
}

// addCompactionFlag adds kube-apiserver's --etcd-compaction-interval.
func addCompactionFlag(fs *pflag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "etcd-compaction-interval", compact.DefaultInterval, "The interval of compaction requests; 0 disables.")
}

// compactionFlag is cluster's CompactionInterval for
// --etcd-compaction-interval's value (whose 0, as kube-apiserver's,
// disables compaction; a negative one does too).
func compactionFlag(p time.Duration) time.Duration {
	if p <= 0 {
		return -1
	}
	return p
}

// addCountPollFlag adds kube-apiserver's --etcd-count-metric-poll-period.
func addCountPollFlag(fs *pflag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "etcd-count-metric-poll-period", time.Minute, "How often the stored objects of each resource are counted (apiserver_resource_objects, API Priority and Fairness's list work estimates); 0 disables.")
}

// addEtcdPrefixFlag adds --etcd-prefix, kube-apiserver's default
// /registry.
func addEtcdPrefixFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "etcd-prefix", "/registry", "The prefix of every key in etcd.")
}

// etcdPrefixFlag is cluster's EtcdPrefix for --etcd-prefix's value. As
// kube-apiserver roots the prefix (path.Join("/", prefix)) and neither
// refuses nor defaults an empty one, an explicit --etcd-prefix= keeps
// objects straight under the root: "/", since cluster's empty EtcdPrefix
// is the unset default (/registry). The flag's own default is /registry,
// so an empty value is always an explicit one.
func etcdPrefixFlag(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// countPollFlag is cluster's EtcdCountMetricPollPeriod for
// --etcd-count-metric-poll-period's value (whose 0, as kube-apiserver's,
// disables counting).
func countPollFlag(p time.Duration) time.Duration {
	if p <= 0 {
		return -1
	}
	return p
}

// addServiceFlags adds kube-apiserver's flags for Services.
func addServiceFlags(fs *pflag.FlagSet, o *cluster.ServiceOptions) {
	fs.StringVar(&o.ClusterIPRange, "service-cluster-ip-range", "10.96.0.0/12", "A CIDR notation IP range from which to assign service cluster IPs, or two of different IP families separated by a comma (IPv4,IPv6 or IPv6,IPv4) for dual-stack services; the first range's family is the primary one and its first address the kubernetes service's.")
	o.NodePortRange = "30000-32767"
	fs.Var(nodePortRangeFlag{&o.NodePortRange}, "service-node-port-range", "A port range to reserve for services with NodePort visibility, low-high inclusive (or a single port, or base+offset).")
	fs.IPVar(&o.AdvertiseAddress, "advertise-address", nil, "The IP address on which to advertise the apiserver to members of the cluster (the kubernetes service's endpoints); empty uses the address it is reached at.")
	fs.StringVar(&o.EndpointReconcilerType, "endpoint-reconciler-type", "lease", "How the kubernetes service's endpoints follow the API servers: lease (each API server keeps a lease on its address; it is listed while the lease lives) or none.")
}

// nodePortRangeFlag is --service-node-port-range's value: parsed as
// kube-apiserver's flag (its port range type, whose errors become the
// flag's), kept as "low-high" ("" for an empty value: the default
// range).
type nodePortRangeFlag struct{ s *string }

func (f nodePortRangeFlag) String() string {
	if f.s == nil {
		return ""
	}
	return *f.s
}

func (f nodePortRangeFlag) Set(v string) error {
	var pr utilnet.PortRange
	if err := pr.Set(v); err != nil {
		return err
	}
	*f.s = pr.String()
	return nil
}

func (nodePortRangeFlag) Type() string { return "portRange" }

// completeAuthorizationModes makes an explicitly empty
// --authorization-mode AlwaysAllow, as kube-apiserver's option completion
// does with an empty mode list before validating it (so its "at least one
// authorization-mode must be passed" is never reached). The flag left out
// keeps kubeproof's default (cluster.DefaultAuthorizationModes), which
// AuthOptions' empty list stands for.
func completeAuthorizationModes(fs *pflag.FlagSet, o *cluster.AuthOptions) {
	if fs.Changed("authorization-mode") && len(o.AuthorizationModes) == 0 {
		o.AuthorizationModes = []string{"AlwaysAllow"}
	}
}

// addAuthFlags binds kube-apiserver's request-chain flags to o, with the
// given authorization modes and admission plugin adjustments as defaults
// (nil enable/disable: the API server's own default plugin set).
func addAuthFlags(fs *pflag.FlagSet, o *cluster.AuthOptions, modes, enable, disable []string) {
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", modes,
		"Ordered list of authorization plugins: "+strings.Join(cluster.AuthorizationModes, ", ")+".")
	fs.StringVar(&o.AuthorizationWebhookConfigFile, "authorization-webhook-config-file", "",
		"File with webhook configuration in kubeconfig format, used with --authorization-mode=Webhook: the API server asks the remote service (cluster) with its credentials (user) whether each request is allowed.")
	fs.StringVar(&o.AuthorizationWebhookVersion, "authorization-webhook-version", "v1beta1",
		"The version of the authorization.k8s.io SubjectAccessReview to send to and expect from the webhook: v1 or v1beta1.")
	fs.DurationVar(&o.AuthorizationWebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", 5*time.Minute,
		"The duration to cache 'authorized' responses from the webhook authorizer.")
	fs.DurationVar(&o.AuthorizationWebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", 30*time.Second,
		"The duration to cache 'unauthorized' responses from the webhook authorizer.")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", "", "Static bearer tokens: a CSV file of token,user,uid,\"group1,group2\".")
	fs.StringVar(&o.AuthenticationTokenWebhookConfigFile, "authentication-token-webhook-config-file", "",
		"File with webhook configuration for token authentication in kubeconfig format: bearer tokens no other authenticator knows are sent in a TokenReview to the remote service (cluster) with the API server's credentials (user).")
	fs.StringVar(&o.AuthenticationTokenWebhookVersion, "authentication-token-webhook-version", "v1beta1",
		"The version of the authentication.k8s.io TokenReview to send to and expect from the webhook: v1 or v1beta1.")
	fs.DurationVar(&o.AuthenticationTokenWebhookCacheTTL, "authentication-token-webhook-cache-ttl", 2*time.Minute,
		"The duration to cache responses from the webhook token authenticator.")
	fs.StringArrayVar(&o.ServiceAccountIssuers, "service-account-issuer", nil,
		"Issuer of service account tokens (repeatable: the first is put in new tokens, all are accepted); default "+cluster.DefaultServiceAccountIssuer+".")
	fs.StringArrayVar(&o.ServiceAccountKeyFiles, "service-account-key-file", nil, "PEM file of public (or private) keys verifying service account tokens (repeatable).")
	fs.StringVar(&o.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "PEM private key signing service account tokens (enables the TokenRequest API).")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", nil, "Audiences a service account token must carry one of; default: the issuers.")
	fs.DurationVar(&o.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, "Longest expiration a TokenRequest gets, between 1 hour and 2^32 seconds; 0: no limit.")
	fs.Var(negatedBool{&o.NoServiceAccountLookup}, "service-account-lookup", "If true, validate ServiceAccount tokens exist in etcd as part of authentication.")
	fs.Lookup("service-account-lookup").NoOptDefVal = "true"
	fs.Var(negatedBool{&o.NoServiceAccountExtendTokenExpiration}, "service-account-extend-token-expiration",
		"If true, a pod-bound token requested for the kubelet's default 3607 seconds and the API audiences is valid one year, whatever --service-account-max-token-expiration says, and counted as stale (serviceaccount_stale_tokens_total, audit annotation authentication.k8s.io/stale-token) when used after 3607 seconds.")
	fs.Lookup("service-account-extend-token-expiration").NoOptDefVal = "true"
	fs.BoolVar(&o.EnableBootstrapTokenAuth, "enable-bootstrap-token-auth", false, "Authenticate bootstrap tokens (kube-system secrets of type bootstrap.kubernetes.io/token).")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", false, "Serve unauthenticated requests as system:anonymous (group system:unauthenticated) instead of answering 401.")
	fs.StringSliceVar(&o.EnableAdmissionPlugins, "enable-admission-plugins", enable,
		"Admission plugins to enable besides the default ones ("+strings.Join(admission.DefaultPlugins(), ", ")+"); known: "+strings.Join(admission.AllPlugins(), ", ")+".")
	fs.StringSliceVar(&o.DisableAdmissionPlugins, "disable-admission-plugins", disable, "Admission plugins to disable, default ones included.")
	fs.StringVar(&o.AdmissionControlConfigFile, "admission-control-config-file", "",
		"File with admission control configuration (apiserver.config.k8s.io/v1 AdmissionConfiguration, YAML or JSON): PodSecurity's PodSecurityConfiguration (defaults, exemptions), ResourceQuota's limitedResources and the admission webhooks' WebhookAdmissionConfiguration (kubeConfigFile: the credentials webhooks are called with, by host) are read; other plugins' configuration is ignored.")
	fs.StringVar(&o.AuditLogPath, "audit-log-path", "", "If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out.")
	fs.StringVar(&o.AuditPolicyFile, "audit-policy-file", "", "Path to the file that defines the audit policy configuration.")
	addAuditFlags(fs, o)
	fs.Var(invertedBool{&o.DisablePriorityAndFairness}, "enable-priority-and-fairness",
		"Classify requests by FlowSchemas into priority levels and queue them fairly (API Priority and Fairness); false keeps the legacy max-in-flight limits.")
	fs.Lookup("enable-priority-and-fairness").NoOptDefVal = "true"
	fs.BoolVar(&o.EnableAggregatorRouting, "enable-aggregator-routing", false,
		"Call admission webhooks addressed by service at one of the service's ready endpoints (EndpointSlices) rather than at its ClusterIP.")
	addFeatureGatesFlag(fs, o)
}

// addAuditFlags adds kube-apiserver's --audit-log-* and --audit-webhook-*
// flags (but --audit-log-path), with its defaults.
func addAuditFlags(fs *pflag.FlagSet, o *cluster.AuthOptions) {
	o.AuditLog, o.AuditWebhook = audit.DefaultLogOptions(), audit.DefaultWebhookOptions()
	l, w := &o.AuditLog, &o.AuditWebhook
	fs.IntVar(&l.MaxAge, "audit-log-maxage", 0, "The maximum number of days to retain old audit log files based on the timestamp encoded in their filename.")
	fs.IntVar(&l.MaxBackups, "audit-log-maxbackup", 0, "The maximum number of old audit log files to retain. Setting a value of 0 will mean there's no restriction on the number of files.")
	fs.IntVar(&l.MaxSize, "audit-log-maxsize", 0, "The maximum size in megabytes of the audit log file before it gets rotated.")
	fs.BoolVar(&l.Compress, "audit-log-compress", false, "If set, the rotated log files will be compressed using gzip.")
	fs.StringVar(&l.Format, "audit-log-format", l.Format, "Format of saved audits. \"legacy\" indicates 1-line text format for each event. \"json\" indicates structured json format. Known formats are "+strings.Join(audit.AllowedFormats, ",")+".")
	fs.StringVar(&l.Version, "audit-log-version", l.Version, "API group and version used for serializing audit events written to log.")
	addAuditBatchFlags(fs, audit.PluginLog, &l.Mode, &l.Batch)
	addAuditTruncateFlags(fs, audit.PluginLog, &l.Truncate)
	fs.StringVar(&w.ConfigFile, "audit-webhook-config-file", "", "Path to a kubeconfig formatted file that defines the audit webhook configuration.")
	fs.DurationVar(&w.InitialBackoff, "audit-webhook-initial-backoff", w.InitialBackoff, "The amount of time to wait before retrying the first failed request.")
	fs.DurationVar(&w.InitialBackoff, "audit-webhook-batch-initial-backoff", w.InitialBackoff, "The amount of time to wait before retrying the first failed request.")
	_ = fs.MarkDeprecated("audit-webhook-batch-initial-backoff", "Deprecated, use --audit-webhook-initial-backoff instead.")
	fs.StringVar(&w.Version, "audit-webhook-version", w.Version, "API group and version used for serializing audit events written to webhook.")
	addAuditBatchFlags(fs, audit.PluginWebhook, &w.Mode, &w.Batch)
	addAuditTruncateFlags(fs, audit.PluginWebhook, &w.Truncate)
}

// addAuditTruncateFlags adds --audit-<plugin>-truncate-*, defaulting to
// the values already in c.
func addAuditTruncateFlags(fs *pflag.FlagSet, plugin string, c *audit.TruncateConfig) {
	flag := func(name string) string { return "audit-" + plugin + "-truncate-" + name }
	fs.BoolVar(&c.Enabled, flag("enabled"), c.Enabled, "Whether event and batch truncating is enabled.")
	fs.Int64Var(&c.MaxBatchSize, flag("max-batch-size"), c.MaxBatchSize, "Maximum size of the batch sent to the underlying backend. Actual serialized size can be several hundreds of bytes greater. If a batch exceeds this limit, it is split into several batches of smaller size.")
	fs.Int64Var(&c.MaxEventSize, flag("max-event-size"), c.MaxEventSize, "Maximum size of the audit event sent to the underlying backend. If the size of an event is greater than this number, first request and response are removed, and if this doesn't reduce the size enough, event is discarded.")
}

// addAuditBatchFlags adds --audit-<plugin>-mode and
// --audit-<plugin>-batch-*, defaulting to the values already in mode and
// c.
func addAuditBatchFlags(fs *pflag.FlagSet, plugin string, mode *string, c *audit.BatchConfig) {
	flag := func(name string) string { return "audit-" + plugin + "-" + name }
	fs.StringVar(mode, flag("mode"), *mode, "Strategy for sending audit events. Blocking indicates sending events should block server responses. Batch causes the backend to buffer and write events asynchronously. Known modes are "+strings.Join(audit.AllowedModes, ",")+".")
	fs.IntVar(&c.BufferSize, flag("batch-buffer-size"), c.BufferSize, "The size of the buffer to store events before batching and writing. Only used in batch mode.")
	fs.IntVar(&c.MaxBatchSize, flag("batch-max-size"), c.MaxBatchSize, "The maximum size of a batch. Only used in batch mode.")
	fs.DurationVar(&c.MaxBatchWait, flag("batch-max-wait"), c.MaxBatchWait, "The amount of time to wait before force writing the batch that hadn't reached the max size. Only used in batch mode.")
	fs.BoolVar(&c.ThrottleEnable, flag("batch-throttle-enable"), c.ThrottleEnable, "Whether batching throttling is enabled. Only used in batch mode.")
	fs.Float32Var(&c.ThrottleQPS, flag("batch-throttle-qps"), c.ThrottleQPS, "Maximum average number of batches per second. Only used in batch mode.")
	fs.IntVar(&c.ThrottleBurst, flag("batch-throttle-burst"), c.ThrottleBurst, "Maximum number of requests sent at the same moment if ThrottleQPS was not utilized before. Only used in batch mode.")
}

// apiserverCredentials loads the serving certificate and client CA from
// files, or generates a CA and serving certificate in certDir (the client CA
// then being that CA), as kube-apiserver does with --cert-dir.
func apiserverCredentials(certFile, keyFile, clientCAFile, certDir string) (tls.Certificate, *x509.CertPool, error) {
	var clientCA *x509.CertPool
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("reading --client-ca-file: %w", err)
		}
		clientCA = x509.NewCertPool()
		if !clientCA.AppendCertsFromPEM(pem) {
			return tls.Certificate{}, nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", clientCAFile)
		}
	}
	if certFile != "" || keyFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("loading --tls-cert-file/--tls-private-key-file: %w", err)
		}
		return c, clientCA, nil
	}
	ca, err := pki.LoadOrCreateCA(certDir, "kubeproof-ca")
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	kp, err := pki.LoadOrIssue(certDir, "apiserver", func() (pki.KeyPair, error) {
		return ca.IssueServing("kube-apiserver", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")})
	})
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	c, err := kp.TLSCertificate()
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	if clientCA == nil {
		clientCA = ca.Pool()
	}
	return c, clientCA, nil
}

func etcdClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading --etcd-cafile: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--etcd-cafile %s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading --etcd-certfile/--etcd-keyfile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// invertedBool is a boolean flag stored negated: kube-apiserver's
// --enable-* flags that default to true, kept as Disable* fields whose zero
// value is the default.
type invertedBool struct{ disabled *bool }

func (b invertedBool) String() string {
	if b.disabled == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.disabled)
}

func (b invertedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.disabled = !v
	return nil
}

func (invertedBool) Type() string { return "bool" }

// negatedBool is a boolean flag (default true) stored as its negation, for
// options whose zero value is the upstream default.
type negatedBool struct{ no *bool }

func (b negatedBool) String() string {
	if b.no == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.no)
}

func (b negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.no = !v
	return nil
}

func (negatedBool) Type() string     { return "bool" }
func (negatedBool) IsBoolFlag() bool { return true }
