// Package controllermanager runs kubeproof's controllers — deployment,
// replicaset, garbagecollector, namespace, nodelifecycle,
// pod-garbage-collector, disruption, resourcequota, serviceaccount-token,
// legacy-service-account-token-cleaner, serviceaccount,
// root-ca-cert-publisher, csrapproving, csrsigning, csrcleaner,
// clusterrole-aggregation — over shared
// informers, behind leader election on a coordination.k8s.io Lease
// (kube-system/kube-controller-manager), with event recorders and optional
// /metrics. It runs in-process (kubeproof up) or as its own process against
// any API server (kubeproof controller-manager).
//
// With Config.UseServiceAccountCredentials (--use-service-account-credentials)
// the shared informers and leader election use the manager's own identity
// (system:kube-controller-manager), while each controller writes and records
// its events as its kube-system service account (ServiceAccountNames) with
// tokens from the TokenRequest API (ServiceAccountClientBuilder), so RBAC
// grants it only its system:controller:<name> role.
package controllermanager

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/controller/certificates"
	"github.com/kubeproof/kubeproof/impl/controller/clusterroleaggregation"
	"github.com/kubeproof/kubeproof/impl/controller/deployment"
	"github.com/kubeproof/kubeproof/impl/controller/disruption"
	"github.com/kubeproof/kubeproof/impl/controller/endpoints"
	"github.com/kubeproof/kubeproof/impl/controller/endpointslice"
	"github.com/kubeproof/kubeproof/impl/controller/endpointslicemirroring"
	"github.com/kubeproof/kubeproof/impl/controller/garbagecollector"
	"github.com/kubeproof/kubeproof/impl/controller/namespace"
	"github.com/kubeproof/kubeproof/impl/controller/nodelifecycle"
	"github.com/kubeproof/kubeproof/impl/controller/podgc"
	"github.com/kubeproof/kubeproof/impl/controller/replicaset"
	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
	"github.com/kubeproof/kubeproof/impl/healthz"
	"github.com/kubeproof/kubeproof/impl/intern"
	"github.com/kubeproof/kubeproof/impl/secureserving"
)

// Controller names accepted in Config.Controllers.
const (
	Deployment       = "deployment"
	ReplicaSet       = "replicaset"
	GarbageCollector = "garbagecollector"
	Namespace        = "namespace"
	NodeLifecycle    = "nodelifecycle"
	ServiceAccount   = "serviceaccount"
	// ServiceAccountToken is upstream's "serviceaccount-token": it fills
	// kubernetes.io/service-account-token Secrets (Config.ServiceAccountPrivateKey).
	ServiceAccountToken = "serviceaccount-token"
	RootCAPublisher     = "root-ca-cert-publisher"
	ResourceQuota       = "resourcequota"
	Disruption          = "disruption"
	CSRApproving        = "csrapproving"
	CSRSigning          = "csrsigning"
	PodGC               = "pod-garbage-collector"
	Endpoint            = "endpoint"
	EndpointSlice       = "endpointslice"
	// EndpointSliceMirroring is upstream's "endpointslicemirroring".
	EndpointSliceMirroring = "endpointslicemirroring"
	// CSRCleaner is upstream's "csrcleaner" (canonical name
	// certificatesigningrequest-cleaner-controller): it deletes old
	// certificate signing requests (certificates.DecideCleanup).
	CSRCleaner = "csrcleaner"
	// ClusterRoleAggregation is upstream's "clusterrole-aggregation": it
	// writes each aggregated ClusterRole's rules (clusterroleaggregation).
	ClusterRoleAggregation = "clusterrole-aggregation"
)

// LegacyServiceAccountTokenCleaner is upstream's
// "legacy-service-account-token-cleaner" (canonical name
// legacy-serviceaccount-token-cleaner-controller): it labels unused
// auto-generated token Secrets invalid and deletes them a
// Config.LegacyServiceAccountTokenCleanUpPeriod later.
const LegacyServiceAccountTokenCleaner = "legacy-service-account-token-cleaner"

// AllControllers lists every controller, in start order.
var AllControllers = []string{NodeLifecycle, PodGC, Endpoint, EndpointSlice, EndpointSliceMirroring, Namespace, ResourceQuota, Disruption, ServiceAccountToken, LegacyServiceAccountTokenCleaner, ServiceAccount, RootCAPublisher, CSRApproving, CSRSigning, CSRCleaner, ClusterRoleAggregation, GarbageCollector, ReplicaSet, Deployment}

// LeaderElection configures the Lease lock (upstream defaults).
type LeaderElection struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Namespace, Name                           string
	// Identity of this candidate; default hostname_uuid.
	Identity string
}

// Config configures the controller manager. Zero values take upstream's
// defaults (DefaultConfig).
type Config struct {
	// Controllers to run: names, "*" for all, "-name" to disable one.
	Controllers []string
	LeaderElect bool
	Election    LeaderElection

	ConcurrentDeploymentSyncs int
	ConcurrentReplicaSetSyncs int
	ConcurrentGCSyncs         int
	ConcurrentNamespaceSyncs  int
	ConcurrentTaintSyncs      int
	// ConcurrentEndpointSyncs (--concurrent-endpoint-syncs): services
	// whose Endpoints are synced at once.
	ConcurrentEndpointSyncs int
	// ConcurrentServiceEndpointSyncs (--concurrent-service-endpoint-syncs)
	// and MaxEndpointsPerSlice (--max-endpoints-per-slice, 1–1000): the
	// EndpointSlice controller's workers and slice size.
	ConcurrentServiceEndpointSyncs int
	MaxEndpointsPerSlice           int
	// MirroringConcurrentServiceEndpointSyncs
	// (--mirroring-concurrent-service-endpoint-syncs) and
	// MirroringMaxEndpointsPerSubset (--mirroring-max-endpoints-per-subset):
	// the EndpointSliceMirroring controller's workers and the addresses of
	// one Endpoints subset it mirrors at most.
	MirroringConcurrentServiceEndpointSyncs int
	MirroringMaxEndpointsPerSubset          int
	// EndpointSliceUpdatesBatchPeriod (--endpointslice-updates-batch-period)
	// and MirroringEndpointSliceUpdatesBatchPeriod
	// (--mirroring-endpointslice-updates-batch-period): how long the two
	// slice controllers delay the sync a pod (Endpoints) change causes;
	// 0, upstream's default, does not delay.
	EndpointSliceUpdatesBatchPeriod          time.Duration
	MirroringEndpointSliceUpdatesBatchPeriod time.Duration
	// EndpointUpdatesBatchPeriod (--endpoint-updates-batch-period): how
	// long the endpoints controller delays the sync a pod change causes,
	// to write the changes of that window at once; 0 (upstream's default)
	// does not delay.
	EndpointUpdatesBatchPeriod time.Duration

	NodeMonitorPeriod                   time.Duration
	NodeMonitorGracePeriod              time.Duration
	NodeStartupGracePeriod              time.Duration
	DefaultNotReadyTolerationSeconds    int64
	DefaultUnreachableTolerationSeconds int64
	// Zone-limited NoExecute tainting (kube-controller-manager's
	// --node-eviction-rate, --secondary-node-eviction-rate,
	// --unhealthy-zone-threshold, --large-cluster-size-threshold); all
	// zero means upstream's defaults.
	NodeEvictionRate          float32
	SecondaryNodeEvictionRate float32
	UnhealthyZoneThreshold    float32
	LargeClusterSizeThreshold int32

	// RootCA is the PEM bundle the root CA publisher writes into every
	// namespace's kube-root-ca.crt ConfigMap (kube-controller-manager's
	// --root-ca-file); without it that controller does not start.
	RootCA []byte
	// ServiceAccountPrivateKey signs the legacy tokens the
	// serviceaccount-token controller writes into
	// kubernetes.io/service-account-token Secrets
	// (--service-account-private-key-file); without it that controller does
	// not start. ConcurrentSATokenSyncs: its workers
	// (--concurrent-serviceaccount-token-syncs).
	ServiceAccountPrivateKey crypto.Signer
	ConcurrentSATokenSyncs   int
	// LegacyServiceAccountTokenCleanUpPeriod
	// (--legacy-service-account-token-clean-up-period, a year by default;
	// must be positive): how long an auto-generated legacy token goes
	// unused before the legacy-service-account-token-cleaner labels it
	// invalid, and how long after that it deletes it.
	// LegacyServiceAccountTokenCleanerInterval is how often it looks
	// (upstream's fixed day when 0).
	LegacyServiceAccountTokenCleanUpPeriod   time.Duration
	LegacyServiceAccountTokenCleanerInterval time.Duration
	// ClusterSigningCert and ClusterSigningKey are the PEM CA certificate
	// and key the csrsigning controller issues kubelet client
	// certificates with (--cluster-signing-cert-file,
	// --cluster-signing-key-file); without them that controller does not
	// start. ClusterSigningDuration caps their lifetime
	// (--cluster-signing-duration; one year when 0).
	ClusterSigningCert, ClusterSigningKey []byte
	ClusterSigningDuration                time.Duration
	ConcurrentServiceAccountSyncs         int
	// ConcurrentResourceQuotaSyncs and ResourceQuotaSyncPeriod: the
	// resource quota controller's workers and full-recount period.
	ConcurrentResourceQuotaSyncs int
	ResourceQuotaSyncPeriod      time.Duration

	// TerminatedPodGCThreshold (--terminated-pod-gc-threshold): terminated
	// pods beyond it are deleted by the pod garbage collector, oldest
	// first; 0 or less keeps them all. PodGCPeriod is how often it runs
	// (upstream's fixed 20 s when 0; shorter in tests).
	TerminatedPodGCThreshold int
	PodGCPeriod              time.Duration

	// ResyncPeriod of the shared informers (0: none).
	ResyncPeriod time.Duration
	// PodInformer, when set, is an informer of every pod that another
	// component of the process owns and runs (kubelet.NewPodInformer: the
	// simulated kubelets' shared pod source), used instead of the
	// manager's own, so one process keeps one copy of each pod. Its
	// objects must keep every field the controllers read (it keeps all but
	// managedFields). Nil: the manager watches pods itself.
	PodInformer cache.SharedIndexInformer
	// MetricsAddr serves /metrics (and /healthz) over plain HTTP when set,
	// e.g. "127.0.0.1:10257" (kubeproof's --metrics-bind-address).
	MetricsAddr string
	// SecureServing, when set, serves /healthz and /metrics behind
	// authentication and authorization (kube-controller-manager's
	// --secure-port); Run serves it until it returns.
	SecureServing *secureserving.Server
	// Clock for the time-driven controllers (nil: real time).
	Clock clock.WithTicker

	// UseServiceAccountCredentials (--use-service-account-credentials):
	// each controller writes as its own service account in kube-system
	// (ServiceAccountNames) with tokens from the TokenRequest API, so RBAC
	// grants it only its system:controller:<name> role; the shared
	// informers, leader election and the service accounts themselves stay
	// on the controller manager's own identity. Needs a rest.Config (Run).
	UseServiceAccountCredentials bool
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		Controllers: []string{"*"},
		LeaderElect: true,
		Election: LeaderElection{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Namespace: "kube-system", Name: "kube-controller-manager"},
		ConcurrentDeploymentSyncs: 5, ConcurrentReplicaSetSyncs: 5, ConcurrentGCSyncs: 20, ConcurrentNamespaceSyncs: 10, ConcurrentTaintSyncs: 8, ConcurrentEndpointSyncs: 5,
		ConcurrentServiceEndpointSyncs: 5, MaxEndpointsPerSlice: endpointslice.DefaultMaxEndpointsPerSlice,
		MirroringConcurrentServiceEndpointSyncs: 5, MirroringMaxEndpointsPerSubset: endpointslicemirroring.DefaultMaxEndpointsPerSubset,
		ConcurrentServiceAccountSyncs: 1, ConcurrentSATokenSyncs: serviceaccount.DefaultTokenWorkers,
		LegacyServiceAccountTokenCleanUpPeriod: serviceaccount.DefaultLegacyTokenCleanUpPeriod, ConcurrentResourceQuotaSyncs: resourcequota.DefaultWorkers, ResourceQuotaSyncPeriod: resourcequota.DefaultSyncPeriod,
		NodeMonitorPeriod: 5 * time.Second, NodeMonitorGracePeriod: 40 * time.Second, NodeStartupGracePeriod: time.Minute,
		DefaultNotReadyTolerationSeconds: 300, DefaultUnreachableTolerationSeconds: 300,
		NodeEvictionRate: 0.1, SecondaryNodeEvictionRate: 0.01, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 50,
		TerminatedPodGCThreshold: podgc.DefaultTerminatedPodThreshold, PodGCPeriod: podgc.DefaultCheckPeriod,
	}
}

func (c *Config) fillDefaults() {
	d := DefaultConfig()
	if len(c.Controllers) == 0 {
		c.Controllers = d.Controllers
	}
	e := &c.Election
	if e.LeaseDuration == 0 {
		e.LeaseDuration = d.Election.LeaseDuration
	}
	if e.RenewDeadline == 0 {
		e.RenewDeadline = d.Election.RenewDeadline
	}
	if e.RetryPeriod == 0 {
		e.RetryPeriod = d.Election.RetryPeriod
	}
	if e.Namespace == "" {
		e.Namespace = d.Election.Namespace
	}
	if e.Name == "" {
		e.Name = d.Election.Name
	}
	if e.Identity == "" {
		host, _ := os.Hostname()
		e.Identity = host + "_" + string(uuid.NewUUID())
	}
	for _, p := range []struct {
		v *int
		d int
	}{
		{&c.ConcurrentDeploymentSyncs, d.ConcurrentDeploymentSyncs}, {&c.ConcurrentReplicaSetSyncs, d.ConcurrentReplicaSetSyncs},
		{&c.ConcurrentGCSyncs, d.ConcurrentGCSyncs}, {&c.ConcurrentNamespaceSyncs, d.ConcurrentNamespaceSyncs}, {&c.ConcurrentTaintSyncs, d.ConcurrentTaintSyncs},
		{&c.ConcurrentEndpointSyncs, d.ConcurrentEndpointSyncs},
		{&c.ConcurrentServiceEndpointSyncs, d.ConcurrentServiceEndpointSyncs}, {&c.MaxEndpointsPerSlice, d.MaxEndpointsPerSlice},
		{&c.MirroringConcurrentServiceEndpointSyncs, d.MirroringConcurrentServiceEndpointSyncs}, {&c.MirroringMaxEndpointsPerSubset, d.MirroringMaxEndpointsPerSubset},
		{&c.ConcurrentServiceAccountSyncs, d.ConcurrentServiceAccountSyncs}, {&c.ConcurrentSATokenSyncs, d.ConcurrentSATokenSyncs}, {&c.ConcurrentResourceQuotaSyncs, d.ConcurrentResourceQuotaSyncs},
	} {
		if *p.v <= 0 {
			*p.v = p.d
		}
	}
	for _, p := range []struct {
		v *time.Duration
		d time.Duration
	}{
		{&c.NodeMonitorPeriod, d.NodeMonitorPeriod}, {&c.NodeMonitorGracePeriod, d.NodeMonitorGracePeriod}, {&c.NodeStartupGracePeriod, d.NodeStartupGracePeriod},
	} {
		if *p.v <= 0 {
			*p.v = p.d
		}
	}
	if c.LegacyServiceAccountTokenCleanUpPeriod == 0 {
		c.LegacyServiceAccountTokenCleanUpPeriod = d.LegacyServiceAccountTokenCleanUpPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

// Enabled reports whether the named controller runs under cfg.Controllers:
// as kube-controller-manager's IsControllerEnabled, the first entry naming
// it ("name" or "-name") decides, and "*" enables it when none does (no
// kubeproof controller is disabled by default).
func (c Config) Enabled(name string) bool {
	for _, e := range c.Controllers {
		switch e {
		case name:
			return true
		case "-" + name:
			return false
		}
	}
	return slices.Contains(c.Controllers, "*")
}

// Clients are the API clients the controllers use.
type Clients struct {
	Kube      kubernetes.Interface
	Metadata  metadata.Interface           // garbage collector
	Dynamic   dynamic.Interface            // namespace controller
	Discovery discovery.DiscoveryInterface // garbage collector and namespace controller
	// ForController, when set with Config.UseServiceAccountCredentials,
	// gives the clients a controller writes with, by its service account
	// name (ServiceAccountClientBuilder.Clients).
	ForController func(ctx context.Context, serviceAccount string) (Clients, error)
}

// ClientsFor builds the metadata and dynamic clients from restConfig next to
// an existing clientset.
func ClientsFor(client kubernetes.Interface, restConfig *rest.Config) (Clients, error) {
	cl := Clients{Kube: client, Discovery: client.Discovery()}
	if restConfig == nil {
		return cl, nil
	}
	var err error
	if cl.Metadata, err = metadata.NewForConfig(restConfig); err != nil {
		return cl, fmt.Errorf("metadata client: %w", err)
	}
	if cl.Dynamic, err = dynamic.NewForConfig(restConfig); err != nil {
		return cl, fmt.Errorf("dynamic client: %w", err)
	}
	return cl, nil
}

// Run runs the controller manager until ctx is done (or, with leader
// election, until leadership is lost, which is an error). restConfig is used
// for the metadata and dynamic clients the garbage collector and namespace
// controller need; it may be nil when both are disabled.
//
// The clients Run builds from restConfig (metadata, dynamic, the
// controllers' service account clients) drop the server's warnings
// (QuietWarnings); client should be built from a config QuietWarnings
// has set too.
func Run(ctx context.Context, client kubernetes.Interface, restConfig *rest.Config, cfg Config) error {
	if restConfig != nil {
		restConfig = rest.CopyConfig(restConfig)
		QuietWarnings(restConfig)
	}
	clients, err := ClientsFor(client, restConfig)
	if err != nil {
		return err
	}
	if cfg.UseServiceAccountCredentials {
		if restConfig == nil {
			return errors.New("controller manager: --use-service-account-credentials needs a rest.Config")
		}
		clients.ForController = NewServiceAccountClientBuilder(client, restConfig).Clients
	}
	return RunWithClients(ctx, clients, cfg)
}

// RunWithClients is Run with the clients given directly (tests use fakes).
// With cfg.UseServiceAccountCredentials, clients.ForController must be set.
func RunWithClients(ctx context.Context, clients Clients, cfg Config) error {
	cfg.fillDefaults()
	if cfg.UseServiceAccountCredentials && clients.ForController == nil {
		return errors.New("controller manager: --use-service-account-credentials needs Clients.ForController")
	}
	if (cfg.Enabled(GarbageCollector) && clients.Metadata == nil) || (cfg.Enabled(Namespace) && clients.Dynamic == nil) {
		return errors.New("controller manager: the garbage collector needs a metadata client and the namespace controller a dynamic client (pass a rest.Config)")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var reg prometheus.Registerer
	var health *healthz.Mutable
	if cfg.MetricsAddr != "" || cfg.SecureServing != nil {
		health = healthz.NewMutable("/healthz", slog.Default())
		mux, r := metricsMux(health)
		reg = r
		if cfg.MetricsAddr != "" {
			ln, err := net.Listen("tcp", cfg.MetricsAddr)
			if err != nil {
				return fmt.Errorf("controller manager: metrics listener: %w", err)
			}
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			wg.Add(2)
			go func() { defer wg.Done(); _ = srv.Serve(ln) }()
			go func() {
				defer wg.Done()
				<-ctx.Done()
				shutdownCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
				defer c()
				_ = srv.Shutdown(shutdownCtx)
			}()
		}
		if cfg.SecureServing != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := cfg.SecureServing.Serve(ctx, mux); err != nil {
					slog.Error("controller manager: secure serving", "err", err)
					cancel()
				}
			}()
		}
	}
	if !cfg.LeaderElect {
		return runControllers(ctx, clients, cfg, reg, health)
	}
	return runElected(ctx, clients, cfg, reg, health)
}

// ErrLostLeadership is returned when another controller manager took over.
var ErrLostLeadership = errors.New("controller manager: leader election lost")

func runElected(ctx context.Context, clients Clients, cfg Config, reg prometheus.Registerer, health *healthz.Mutable) error {
	// The elector's watchdog is /healthz's "leaderElection" check, as
	// kube-controller-manager's (failing when this instance leads and has
	// not renewed its Lease 20 s past its duration).
	watchDog := leaderelection.NewLeaderHealthzAdaptor(leaderElectionHealthTimeout)
	if health != nil {
		health.Add(watchDog)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Election.Namespace, Name: cfg.Election.Name},
		Client:     clients.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Election.Identity},
	}
	var (
		mu       sync.Mutex
		started  bool
		stopped  bool
		runErr   error
		finished = make(chan struct{})
	)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.Election.LeaseDuration,
		RenewDeadline:   cfg.Election.RenewDeadline,
		RetryPeriod:     cfg.Election.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.Election.Name,
		WatchDog:        watchDog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				started = true
				mu.Unlock()
				defer close(finished)
				slog.Info("controller manager: became leader", "identity", cfg.Election.Identity)
				err := runControllers(lctx, clients, cfg, reg, health)
				mu.Lock()
				runErr = err
				mu.Unlock()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("controller manager: leader election: %w", err)
	}
	le.Run(ctx)
	mu.Lock()
	stopped = true
	wasStarted := started
	mu.Unlock()
	if wasStarted {
		<-finished
	}
	mu.Lock()
	defer mu.Unlock()
	if runErr != nil {
		return runErr
	}
	if ctx.Err() == nil {
		return ErrLostLeadership
	}
	return nil
}

// runControllers starts the enabled controllers on one set of shared
// informers and returns when ctx is done and all have stopped. reg, when
// set, gets the node lifecycle controller's zone metrics and the pod
// garbage collector's counters while they run.
func runControllers(ctx context.Context, root Clients, cfg Config, reg prometheus.Registerer, health *healthz.Mutable) error {
	// Events go out through the client of the controller that records
	// them, one broadcaster per controller, as upstream's controllers.
	var broadcasters []record.EventBroadcaster
	defer func() {
		for _, b := range broadcasters {
			b.Shutdown()
		}
	}()
	recorder := func(cl Clients, component string) record.EventRecorder {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cl.Kube.CoreV1().Events("")})
		broadcasters = append(broadcasters, b)
		return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}
	// clientsOf is what a controller writes with: its service account's
	// clients with --use-service-account-credentials, else the root's.
	clientsOf := func(controller string) (Clients, error) {
		if !cfg.UseServiceAccountCredentials {
			return root, nil
		}
		return root.ForController(ctx, ServiceAccountNames[controller])
	}
	// Cached objects are trimmed to what the controllers read (transform.go).
	factory := informers.NewSharedInformerFactoryWithOptions(root.Kube, cfg.ResyncPeriod, informers.WithTransform(cacheTransform(intern.New())))
	defer factory.Shutdown()
	defer useExternalPodInformer(factory, cfg.PodInformer, cfg.ResyncPeriod)()
	clk := cfg.Clock

	// runs are the enabled controllers' loops; started their names.
	var runs []func(context.Context) error
	var started []string
	if cfg.Enabled(NodeLifecycle) {
		clients, err := clientsOf(NodeLifecycle)
		if err != nil {
			return err
		}
		c, err := nodelifecycle.New(clients.Kube, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(),
			recorder(clients, "node-controller"), clk, nodelifecycle.Config{
				MonitorPeriod: cfg.NodeMonitorPeriod, MonitorGrace: cfg.NodeMonitorGracePeriod, StartupGrace: cfg.NodeStartupGracePeriod,
				Defaults: nodelifecycle.DefaultTolerations{NotReadySeconds: cfg.DefaultNotReadyTolerationSeconds, UnreachableSeconds: cfg.DefaultUnreachableTolerationSeconds},
				Rates: nodelifecycle.EvictionRates{NodeEvictionRate: cfg.NodeEvictionRate, SecondaryNodeEvictionRate: cfg.SecondaryNodeEvictionRate,
					UnhealthyZoneThreshold: cfg.UnhealthyZoneThreshold, LargeClusterSizeThreshold: cfg.LargeClusterSizeThreshold},
			})
		if err != nil {
			return err
		}
		if reg != nil {
			if err := reg.Register(c); err != nil {
				return fmt.Errorf("controller manager: registering node lifecycle metrics: %w", err)
			}
			defer reg.Unregister(c)
		}
		started = append(started, NodeLifecycle)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentTaintSyncs) })
	}
	if cfg.Enabled(PodGC) {
		clients, err := clientsOf(PodGC)
		if err != nil {
			return err
		}
		c := podgc.New(clients.Kube, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), clk,
			podgc.Config{TerminatedPodThreshold: cfg.TerminatedPodGCThreshold, CheckPeriod: cfg.PodGCPeriod})
		if reg != nil {
			if err := reg.Register(c.Metrics()); err != nil {
				return fmt.Errorf("controller manager: registering pod GC metrics: %w", err)
			}
			defer reg.Unregister(c.Metrics())
		}
		started = append(started, PodGC)
		runs = append(runs, c.Run)
	}
	if cfg.Enabled(Endpoint) {
		clients, err := clientsOf(Endpoint)
		if err != nil {
			return err
		}
		c, err := endpoints.New(clients.Kube, factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Endpoints(),
			endpoints.WithRecorder(recorder(clients, "endpoint-controller")), endpoints.WithBatchPeriod(cfg.EndpointUpdatesBatchPeriod))
		if err != nil {
			return err
		}
		started = append(started, Endpoint)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentEndpointSyncs) })
	}
	if cfg.Enabled(EndpointSlice) {
		clients, err := clientsOf(EndpointSlice)
		if err != nil {
			return err
		}
		c, err := endpointslice.New(clients.Kube, factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
			factory.Discovery().V1().EndpointSlices(), endpointslice.WithRecorder(recorder(clients, "endpoint-slice-controller")),
			endpointslice.WithMaxEndpointsPerSlice(cfg.MaxEndpointsPerSlice), endpointslice.WithBatchPeriod(cfg.EndpointSliceUpdatesBatchPeriod))
		if err != nil {
			return err
		}
		started = append(started, EndpointSlice)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentServiceEndpointSyncs) })
	}
	if cfg.Enabled(EndpointSliceMirroring) {
		clients, err := clientsOf(EndpointSliceMirroring)
		if err != nil {
			return err
		}
		c, err := endpointslicemirroring.New(clients.Kube, factory.Core().V1().Services(), factory.Core().V1().Endpoints(),
			factory.Discovery().V1().EndpointSlices(), endpointslicemirroring.WithRecorder(recorder(clients, "endpointslicemirroring-controller")),
			endpointslicemirroring.WithMaxEndpointsPerSubset(cfg.MirroringMaxEndpointsPerSubset),
			endpointslicemirroring.WithBatchPeriod(cfg.MirroringEndpointSliceUpdatesBatchPeriod))
		if err != nil {
			return err
		}
		started = append(started, EndpointSliceMirroring)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.MirroringConcurrentServiceEndpointSyncs) })
	}
	if cfg.Enabled(Namespace) {
		clients, err := clientsOf(Namespace)
		if err != nil {
			return err
		}
		c := namespace.New(clients.Kube, clients.Dynamic, clients.Discovery, factory.Core().V1().Namespaces())
		started = append(started, Namespace)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentNamespaceSyncs) })
	}
	if cfg.Enabled(GarbageCollector) {
		clients, err := clientsOf(GarbageCollector)
		if err != nil {
			return err
		}
		gcCfg := garbagecollector.Config{Workers: cfg.ConcurrentGCSyncs}
		if cfg.PodInformer != nil || cfg.Enabled(NodeLifecycle) || cfg.Enabled(PodGC) || cfg.Enabled(Endpoint) || cfg.Enabled(EndpointSlice) || cfg.Enabled(ReplicaSet) || cfg.Enabled(Deployment) {
			// Pods are watched (and cached, trimmed) for those controllers
			// anyway: the collector's graph is built from the same informer,
			// as upstream's collector uses the manager's shared factory.
			pods := factory.Core().V1().Pods().Informer()
			gcCfg.SharedInformers = func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
				if gvr == corev1.SchemeGroupVersion.WithResource("pods") {
					return pods
				}
				return nil
			}
		}
		gc := garbagecollector.New(clients.Metadata, clients.Discovery, recorder(clients, "garbage-collector-controller"), gcCfg)
		started = append(started, GarbageCollector)
		runs = append(runs, gc.Run)
	}
	if cfg.Enabled(ReplicaSet) {
		clients, err := clientsOf(ReplicaSet)
		if err != nil {
			return err
		}
		c := replicaset.New(clients.Kube, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder(clients, "replicaset-controller"), clk)
		started = append(started, ReplicaSet)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentReplicaSetSyncs) })
	}
	if cfg.Enabled(Deployment) {
		clients, err := clientsOf(Deployment)
		if err != nil {
			return err
		}
		c := deployment.New(clients.Kube, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder(clients, "deployment-controller"), clk)
		started = append(started, Deployment)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentDeploymentSyncs) })
	}
	if cfg.Enabled(ResourceQuota) {
		clients, err := clientsOf(ResourceQuota)
		if err != nil {
			return err
		}
		resources, err := resourcequota.QuotableResources(root.Discovery)
		if err != nil {
			return fmt.Errorf("controller manager: finding quotable resources: %w", err)
		}
		c, err := resourcequota.New(clients.Kube, factory, resources, resourcequota.Config{SyncPeriod: cfg.ResourceQuotaSyncPeriod, Clock: clk})
		if err != nil {
			return err
		}
		started = append(started, ResourceQuota)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentResourceQuotaSyncs) })
	}
	if cfg.Enabled(Disruption) {
		clients, err := clientsOf(Disruption)
		if err != nil {
			return err
		}
		// Upstream's disruption controller records as "controllermanager".
		c, err := disruption.New(clients.Kube, factory, disruption.WithRecorder(recorder(clients, "controllermanager")))
		if err != nil {
			return err
		}
		started = append(started, Disruption)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, 2) })
	}
	// Service account token secrets are watched (and cached) apart from
	// the other secrets, which no controller here reads.
	var tokenSecrets informers.SharedInformerFactory
	if (cfg.Enabled(ServiceAccountToken) && cfg.ServiceAccountPrivateKey != nil) || cfg.Enabled(LegacyServiceAccountTokenCleaner) {
		tokenSecrets = serviceaccount.TokenSecretInformer(root.Kube)
		defer tokenSecrets.Shutdown()
	}
	if cfg.Enabled(ServiceAccountToken) && cfg.ServiceAccountPrivateKey != nil {
		// As upstream, it writes with the manager's own credentials even
		// with --use-service-account-credentials: it fills the secrets
		// those credentials may come from.
		c, err := serviceaccount.NewTokens(root.Kube, &auth.ServiceAccountTokens{SigningKey: cfg.ServiceAccountPrivateKey}, cfg.RootCA,
			factory.Core().V1().ServiceAccounts(), tokenSecrets.Core().V1().Secrets())
		if err != nil {
			return err
		}
		started = append(started, ServiceAccountToken)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentSATokenSyncs) })
	}
	if cfg.Enabled(LegacyServiceAccountTokenCleaner) {
		clients, err := clientsOf(LegacyServiceAccountTokenCleaner)
		if err != nil {
			return err
		}
		// It reads pods, service accounts and token secrets from the
		// shared caches (pods keep their secret references: transform.go),
		// and reads the tracking ConfigMap and writes as itself.
		c, err := serviceaccount.NewLegacyTokenCleaner(clients.Kube, clk, cfg.LegacyServiceAccountTokenCleanUpPeriod,
			cfg.LegacyServiceAccountTokenCleanerInterval, factory.Core().V1().ServiceAccounts(), tokenSecrets.Core().V1().Secrets(),
			factory.Core().V1().Pods())
		if err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
		started = append(started, LegacyServiceAccountTokenCleaner)
		runs = append(runs, c.Run)
	}
	if tokenSecrets != nil {
		tokenSecrets.Start(ctx.Done())
	}
	if cfg.Enabled(ServiceAccount) {
		clients, err := clientsOf(ServiceAccount)
		if err != nil {
			return err
		}
		c := serviceaccount.NewServiceAccounts(clients.Kube, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
		started = append(started, ServiceAccount)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentServiceAccountSyncs) })
	}
	if cfg.Enabled(RootCAPublisher) && len(cfg.RootCA) > 0 {
		clients, err := clientsOf(RootCAPublisher)
		if err != nil {
			return err
		}
		// Its ConfigMap informer watches only kube-root-ca.crt objects.
		cms := serviceaccount.RootCAConfigMapInformer(root.Kube)
		defer cms.Shutdown()
		c, err := serviceaccount.NewRootCAPublisher(clients.Kube, cfg.RootCA, factory.Core().V1().Namespaces(), cms.Core().V1().ConfigMaps())
		if err != nil {
			return err
		}
		cms.Start(ctx.Done())
		started = append(started, RootCAPublisher)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, cfg.ConcurrentServiceAccountSyncs) })
	}
	if cfg.Enabled(CSRApproving) {
		clients, err := clientsOf(CSRApproving)
		if err != nil {
			return err
		}
		c, err := certificates.NewApprover(clients.Kube, factory.Certificates().V1().CertificateSigningRequests())
		if err != nil {
			return err
		}
		started = append(started, CSRApproving)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, 1) })
	}
	if cfg.Enabled(CSRSigning) && len(cfg.ClusterSigningCert) > 0 && len(cfg.ClusterSigningKey) > 0 {
		clients, err := clientsOf(CSRSigning)
		if err != nil {
			return err
		}
		ca, err := certificates.ParseCA(cfg.ClusterSigningCert, cfg.ClusterSigningKey)
		if err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
		c, err := certificates.NewSigner(clients.Kube, factory.Certificates().V1().CertificateSigningRequests(), ca, cfg.ClusterSigningDuration)
		if err != nil {
			return err
		}
		started = append(started, CSRSigning)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, 1) })
	}
	if cfg.Enabled(CSRCleaner) {
		clients, err := clientsOf(CSRCleaner)
		if err != nil {
			return err
		}
		c := certificates.NewCleaner(clients.Kube, factory.Certificates().V1().CertificateSigningRequests(), clk)
		started = append(started, CSRCleaner)
		runs = append(runs, c.Run)
	}
	if cfg.Enabled(ClusterRoleAggregation) {
		clients, err := clientsOf(ClusterRoleAggregation)
		if err != nil {
			return err
		}
		c, err := clusterroleaggregation.New(clients.Kube, factory.Rbac().V1().ClusterRoles())
		if err != nil {
			return err
		}
		started = append(started, ClusterRoleAggregation)
		runs = append(runs, func(ctx context.Context) error { return c.Run(ctx, clusterroleaggregation.DefaultWorkers) })
	}
	factory.Start(ctx.Done())
	if health != nil {
		health.Add(controllerHealthChecks(started)...)
	}

	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// leaderElectionHealthTimeout is how long past its lease duration a
// leader may go without renewing before /healthz fails
// (kube-controller-manager's 20 s).
const leaderElectionHealthTimeout = 20 * time.Second

// controllerHealthChecks are the /healthz checks of the started
// controllers, one passing check per controller named by its
// kube-controller-manager canonical name, as upstream's
// NamedPingChecker for controllers without a health check of their own.
func controllerHealthChecks(started []string) []healthz.Check {
	checks := make([]healthz.Check, 0, len(started))
	for _, name := range started {
		for _, c := range upstreamControllers {
			if c.ours == name {
				name = c.name
				break
			}
		}
		checks = append(checks, healthz.NamedCheck(name, func(*http.Request) error { return nil }))
	}
	return checks
}

// metricsMux serves /metrics from a new registry of the manager's metrics
// and /healthz (health: the leader election check, then each started
// controller's), as kube-controller-manager's base handler: /healthz only,
// no /livez, /readyz or per-check paths.
func metricsMux(health http.Handler) (*http.ServeMux, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerWorkqueueMetrics(reg)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", health)
	return mux, reg
}
