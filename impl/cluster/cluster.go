// Package cluster composes kubeproof's components into one running control
// plane: etcd (embedded, or external endpoints), the API server with its
// certificates and kubeconfigs, and — as they join — the controller manager,
// the scheduler and simulated kubelets. It is what `kubeproof up` runs and
// what cross-component tests and benchmarks start in-process.
//
// Simulated nodes read pods through one shared watch, as KWOK does, and
// each writes as its own node (system:node:<name>, authenticated by an
// in-memory token over connections the nodes share): see nodes.go for the
// shared pod informer (read as NodeSimulatorUser, and also the controller
// manager's and scheduler's pod cache), the nodes' clients, their event
// broadcasters and the kubelets' root directory on tmpfs.
package cluster

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// Config configures a cluster.
type Config struct {
	// DataDir holds pki/, etcd/ (when embedded) and the kubeconfigs.
	// Starting again on the same DataDir keeps every object and credential.
	DataDir string
	// BindAddress is the API server's host:port; port 0 picks a free one.
	BindAddress string
	// EtcdServers are external etcd endpoints; empty runs an embedded etcd
	// in DataDir/etcd.
	EtcdServers []string
	// EtcdClientTLS is the client TLS of external etcd endpoints (nil: plain).
	EtcdClientTLS *tls.Config
	// EtcdPrefix is the key prefix of objects (default "/registry").
	EtcdPrefix string
	// WatchCache serves watches and resourceVersion="0" lists from memory.
	WatchCache bool
	// CompactionInterval is how often etcd history is compacted (0: the
	// storage default; negative: never).
	CompactionInterval time.Duration
	// EventTTL is how long events are kept after their last write (0:
	// DefaultEventTTL; negative: forever).
	EventTTL time.Duration
	// EtcdCountMetricPollPeriod is how often the API server counts the
	// stored objects of each resource (apiserver_resource_objects, API
	// Priority and Fairness's list work estimates): 0 means the default
	// (one minute), negative never.
	EtcdCountMetricPollPeriod time.Duration
	// EtcdOverGRPC makes the API server reach the embedded etcd through a
	// gRPC client on loopback TCP, as it reaches --etcd-servers, instead of
	// etcd's in-process client (the default; see embedded.InProcessClient).
	// For comparisons; no effect with EtcdServers.
	EtcdOverGRPC bool
	// UnsafeNoFsync turns off fsync in the embedded etcd (tests and
	// benchmarks only: a machine crash may lose acknowledged writes).
	UnsafeNoFsync bool
	// ControllerManager runs the controller manager in-process
	// (Deployment, ReplicaSet, garbage collector, namespace, node lifecycle).
	ControllerManager bool
	// NodeMonitorGracePeriod and PodEvictionTimeout override the node
	// lifecycle controller's defaults (40 s; 300 s tolerations).
	NodeMonitorGracePeriod time.Duration
	PodEvictionTimeout     time.Duration
	// EndpointUpdatesBatchPeriod is the controller manager's
	// --endpoint-updates-batch-period (0: no batching).
	EndpointUpdatesBatchPeriod time.Duration
	// Scheduler runs the scheduler in-process.
	Scheduler bool
	// ControllerManagerHealthzAddress and SchedulerHealthzAddress are
	// where the in-process controller manager's and scheduler's /healthz
	// are served over HTTPS (kube-controller-manager's and
	// kube-scheduler's secure ports, 127.0.0.1:10257 and :10259, in
	// UpConfig), for componentstatuses to probe; a port already taken is
	// replaced by an ephemeral one of the same host. Empty: not served,
	// and componentstatuses probe kube-apiserver's fixed addresses.
	ControllerManagerHealthzAddress, SchedulerHealthzAddress string
	// Nodes is the number of simulated kubelets (node-1 … node-N) run
	// in-process; NodeCPU, NodeMemory and NodeMaxPods are each one's
	// capacity (defaults 4, 32Gi, 110).
	Nodes       int
	NodeCPU     string
	NodeMemory  string
	NodeMaxPods int64
	// NodeHugePages are each simulated node's huge page sizes with their
	// pre-allocated pages (kubelet.Config.HugePages; `kubeproof up
	// --hugepages`, as `kubeproof kubelet --hugepages`): nil, none.
	NodeHugePages []kubelet.HugePages
	// DualStackNodes gives each simulated node an IPv6 pod CIDR
	// (SimulatedNodeIPv6CIDR) after its IPv4 one: node.spec.podCIDRs has
	// both and every pod gets an address of each family.
	DualStackNodes bool
	// SimRuntimeHandlers are the runtime handlers (RuntimeClass
	// handlers) each simulated node's runtime has besides its default
	// (sim.Config.RuntimeHandlers): a sandbox asking for another is
	// refused with containerd's error. Nil accepts any handler.
	SimRuntimeHandlers []string
	// SimMissingImages are the images each simulated node's registries
	// lack (sim.Config.MissingImages: references or glob patterns): their
	// pulls fail as containerd's for an image the registry answers 404
	// for, so pods using them end in ErrImagePull/ImagePullBackOff.
	SimMissingImages []string
	// NodeSwapCapacity, NodeMemorySwapBehavior and NodeFailSwapOn are
	// each simulated node's swap (kubelet.Config.SwapCapacity, a quantity,
	// "" none; MemorySwapBehavior; FailSwapOn): `kubeproof up
	// --swap-capacity`, `--memory-swap-behavior` and `--fail-swap-on`, as
	// `kubeproof kubelet`'s. A node with swap is refused unless
	// NodeFailSwapOn is false, and LimitedSwap on the simulated nodes'
	// cgroup v1, as upstream's kubelet refuses them.
	NodeSwapCapacity       string
	NodeMemorySwapBehavior kubelet.SwapBehavior
	NodeFailSwapOn         *bool
	// NodeCPUCFSQuota is each simulated node's cpuCFSQuota
	// (kubelet.Config.CPUCFSQuota; `kubeproof up --cpu-cfs-quota`, as
	// `kubeproof kubelet`'s): false gives its containers and sandboxes no
	// CFS quota. Nil: true, upstream's default.
	NodeCPUCFSQuota *bool
	// NodeSeccompDefault is each simulated node's seccompDefault
	// (kubelet.Config.SeccompDefault; `kubeproof up --seccomp-default`, as
	// `kubeproof kubelet`'s): a container whose pod and container set no
	// seccompProfile is created under RuntimeDefault instead of
	// Unconfined. Default false, upstream's.
	NodeSeccompDefault bool
	// NodeAllowedUnsafeSysctls is each simulated node's allowedUnsafeSysctls
	// (kubelet.Config.AllowedUnsafeSysctls; `kubeproof up
	// --allowed-unsafe-sysctls`, as `kubeproof kubelet`'s): unsafe sysctls
	// and patterns its pods may set besides the safe ones. Nil: none.
	NodeAllowedUnsafeSysctls []string
	// NodeResolverConfig is each simulated node's resolver file
	// (kubelet.Config.ResolverConfig; `kubeproof up --resolv-conf`, as
	// `kubeproof kubelet`'s): checked against the pod resolver's limits once
	// at its start (a CheckLimitsForResolvConf warning on its Node), as
	// upstream's kubelet does whatever its runtime; simulated sandboxes
	// read it no further. "": none, nothing read or checked (UpConfig's is
	// kubelet.DefaultResolverConfig, upstream's /etc/resolv.conf).
	NodeResolverConfig string
	// NodeSystemReserved and NodeKubeReserved are each simulated node's
	// systemReserved and kubeReserved (kubelet.Config.SystemReserved and
	// KubeReserved; `kubeproof up --system-reserved` and `--kube-reserved`,
	// as `kubeproof kubelet`'s): they come off its allocatable. Nil: none.
	NodeSystemReserved, NodeKubeReserved corev1.ResourceList
	// ImageCredentialProviderConfig and ImageCredentialProviderBinDir are
	// the simulated nodes' image credential provider plugins (`kubeproof
	// up --image-credential-provider-config` and
	// `--image-credential-provider-bin-dir`, as `kubeproof kubelet`'s):
	// each node registers them (credentialprovider.Register; its own
	// answers and tokens cached, as each kubelet's) and asks them for the
	// credentials of the images they match before pulling. Either set:
	// Start refuses a configuration the kubelet would before starting
	// anything.
	ImageCredentialProviderConfig string
	ImageCredentialProviderBinDir string
	// NodeTokens makes the API server accept simulated nodes' in-memory
	// tokens (IssueNodeToken) even with Nodes 0: for a benchmark's control
	// that holds the simulated nodes' connections from another process.
	// With Nodes > 0 they are always accepted.
	NodeTokens bool
	// Auth configures the API server's request chain (authorization
	// modes, admission plugins, tokens, audit). A service account signing
	// key is generated in DataDir/pki/sa.key when none is given.
	Auth AuthOptions
	// Services are the API server's service ranges and advertised address.
	Services ServiceOptions
	// Logger; nil is slog.Default().
	Logger *slog.Logger
	// PodTrace, if set, is told when a pod reaches each stage of its
	// scheduling (scheduler.TraceQueued …) and of its start on a simulated
	// node (kubelet.TraceHandedOver …), with the pod at that stage
	// (read-only): where a slow pod's time went, as upstream's tracing
	// spans would tell. It is called on the components' goroutines and
	// must be cheap. Nil costs nothing.
	PodTrace func(stage string, pod *corev1.Pod)
	// TokenCacheNow, for tests, is the clock of the API server's bearer
	// token cache (apiserver.Config.TokenCacheNow; time.Now when nil): a
	// test moves it past the cache's success TTL to see a token
	// authenticated again instead of waiting 10 s.
	TokenCacheNow func() time.Time
}

// Cluster is a running control plane.
type Cluster struct {
	// URL is the API server's https URL.
	URL string
	// AdminKubeconfig is the path of the cluster-admin kubeconfig.
	AdminKubeconfig string
	// AdminConfig is the client-go configuration of the admin identity.
	AdminConfig *rest.Config
	// CA signs every certificate of the cluster.
	CA *pki.CA
	// EtcdClient talks to the cluster's etcd over gRPC, as any client of
	// an etcd cluster would (for the embedded etcd: on loopback TCP).
	EtcdClient *clientv3.Client
	// EtcdInProcessClient is the embedded etcd's in-process client, which
	// the API server uses unless Config.EtcdOverGRPC; nil with external
	// etcd servers.
	EtcdInProcessClient *clientv3.Client
	// Metrics is the API server's metrics registry.
	Metrics *prometheus.Registry

	kubelets []*kubelet.Kubelet
	// simNodes are the parts the simulated kubelets share (nodes.go).
	simNodes *simulatedNodes
	// saSigningKey signs service account tokens: the API server's, and
	// the controller manager's --service-account-private-key-file (the
	// same key, as kubeadm passes sa.key to both).
	saSigningKey crypto.Signer
	// nodeTokens authenticates the simulated kubelets (nodes.go); nil
	// without simulated nodes.
	nodeTokens *auth.NodeTokens
	// kubeletAPI serves the kubelet API of every simulated kubelet.
	kubeletAPI *KubeletAPI

	etcd    *embedded.Etcd
	storage *storagebackend.Factory
	// Components stop before the API server, which stops before etcd, so
	// that no client sees its server vanish during an orderly shutdown.
	cancel         context.CancelFunc // stops everything (ordered)
	cancelComps    context.CancelFunc
	cancelServer   context.CancelFunc
	compsWG, srvWG sync.WaitGroup
	// cmHealthz and schedulerHealthz are the in-process components'
	// /healthz (nil when not served).
	cmHealthz, schedulerHealthz *componentHealthz
	shutdownOnce                sync.Once
	errMu                       sync.Mutex
	err                         error
	done                        chan struct{}
}

// Start starts every component and returns once the API server answers
// /readyz. Cancel ctx or call Stop to shut down.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("cluster: DataDir is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BindAddress == "" {
		cfg.BindAddress = "127.0.0.1:6443"
	}
	if cfg.NodeCPU == "" {
		cfg.NodeCPU = "4"
	}
	if cfg.NodeMemory == "" {
		cfg.NodeMemory = "32Gi"
	}
	if cfg.NodeMaxPods == 0 {
		cfg.NodeMaxPods = 110
	}
	if cfg.Nodes > maxSimulatedNodes {
		return nil, fmt.Errorf("at most %d simulated nodes are supported, %d asked", maxSimulatedNodes, cfg.Nodes)
	}
	if cfg.Nodes > 0 && cfg.imageCredentialProviders() {
		if _, err := credentialprovider.Register(cfg.ImageCredentialProviderConfig, cfg.ImageCredentialProviderBinDir, nil, cfg.Logger); err != nil {
			return nil, fmt.Errorf("registering image credential provider plugins: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	// The server context is cancelled only by the ordered shutdown, never
	// directly by the caller's ctx.
	serverCtx, cancelServer := context.WithCancel(context.WithoutCancel(ctx))
	compsCtx, cancelComps := context.WithCancel(serverCtx)
	c := &Cluster{cancelComps: cancelComps, cancelServer: cancelServer, done: make(chan struct{})}
	stop := make(chan struct{})
	c.cancel = sync.OnceFunc(func() { close(stop) })
	defer func() {
		if err != nil {
			c.shutdown()
		}
	}()

	creds, err := loadCredentials(filepath.Join(cfg.DataDir, "pki"), cfg.BindAddress)
	if err != nil {
		return nil, err
	}
	c.CA = creds.ca
	// The in-process controller manager's and scheduler's secure
	// /healthz, which componentstatuses probe.
	if cfg.ControllerManager {
		if c.cmHealthz, err = listenHealthz("controller-manager", cfg.ControllerManagerHealthzAddress, cfg.Logger); err != nil {
			return nil, err
		}
	}
	if cfg.Scheduler {
		if c.schedulerHealthz, err = listenHealthz("scheduler", cfg.SchedulerHealthzAddress, cfg.Logger); err != nil {
			// Nothing serves the controller manager's yet: the
			// shutdown would not close it.
			c.cmHealthz.close()
			return nil, err
		}
	}
	for _, h := range []*componentHealthz{c.cmHealthz, c.schedulerHealthz} {
		if h != nil {
			c.goRun(&c.compsWG, h.name+" healthz", func() error { return h.serve(compsCtx, creds.serving) })
		}
	}

	if len(cfg.EtcdServers) == 0 {
		c.etcd, err = embedded.Start(ctx, embedded.Config{DataDir: filepath.Join(cfg.DataDir, "etcd"), UnsafeNoFsync: cfg.UnsafeNoFsync})
		if err != nil {
			return nil, err
		}
		c.EtcdClient = c.etcd.Client()
		c.EtcdInProcessClient = c.etcd.InProcessClient()
	} else {
		c.EtcdClient, err = clientv3.New(clientv3.Config{Endpoints: cfg.EtcdServers, TLS: cfg.EtcdClientTLS, DialTimeout: 10 * time.Second, Logger: EtcdClientLogger()})
		if err != nil {
			return nil, fmt.Errorf("connecting to etcd %v: %w", cfg.EtcdServers, err)
		}
	}

	var kubeletClientTLS *tls.Config
	if cfg.Nodes > 0 {
		if c.kubeletAPI, err = NewKubeletAPI(creds.ca, filepath.Join(cfg.DataDir, "pki"), cfg.Logger); err != nil {
			return nil, err
		}
		c.goRun(&c.compsWG, "kubelet API", func() error { return c.kubeletAPI.Serve(compsCtx) })
		kubeletClientTLS = c.kubeletAPI.ClientTLS
	}

	authOpts := cfg.Auth
	if authOpts.EnableAdmissionPlugins == nil && authOpts.DisableAdmissionPlugins == nil {
		authOpts.EnableAdmissionPlugins, authOpts.DisableAdmissionPlugins = UpAdmissionPlugins()
		if !cfg.ControllerManager {
			// Without a controller manager nothing creates the default
			// service accounts the ServiceAccount plugin requires, so every
			// pod create would be refused; an explicit plugin list still
			// decides otherwise.
			authOpts.DisableAdmissionPlugins = append(authOpts.DisableAdmissionPlugins, "ServiceAccount")
		}
	}
	if secs := int64(cfg.PodEvictionTimeout / time.Second); secs > 0 {
		// Pods tolerate a lost node as long as the controller manager is
		// told to wait (kubeadm passes the same value to both).
		if authOpts.DefaultNotReadyTolerationSeconds == 0 {
			authOpts.DefaultNotReadyTolerationSeconds = secs
		}
		if authOpts.DefaultUnreachableTolerationSeconds == 0 {
			authOpts.DefaultUnreachableTolerationSeconds = secs
		}
	}
	if len(authOpts.AuthorizationModes) == 0 {
		authOpts.AuthorizationModes = UpAuthorizationModes
	}
	if authOpts.ServiceAccountSigningKeyFile == "" && authOpts.ServiceAccountSigningKey == nil {
		if authOpts.ServiceAccountSigningKey, err = loadOrCreateServiceAccountKey(filepath.Join(cfg.DataDir, "pki")); err != nil {
			return nil, err
		}
	}
	c.saSigningKey = authOpts.ServiceAccountSigningKey
	if authOpts.ServiceAccountSigningKeyFile != "" {
		if c.saSigningKey, err = auth.LoadSigningKey(authOpts.ServiceAccountSigningKeyFile); err != nil {
			return nil, fmt.Errorf("reading --service-account-signing-key-file: %w", err)
		}
	}

	c.Metrics = prometheus.NewRegistry()
	ln, err := net.Listen("tcp", cfg.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.BindAddress, err)
	}
	c.URL = "https://" + ln.Addr().String()
	if cfg.Nodes > 0 || cfg.NodeTokens {
		c.nodeTokens = auth.NewNodeTokens()
	}
	// The API server reaches an embedded etcd in-process: no gRPC
	// encoding, HTTP/2 framing or loopback socket on every storage call
	// and watch event. External etcd servers are reached over gRPC.
	apiEtcd := c.EtcdClient
	var apiWatchers func() clientv3.Watcher
	if c.etcd != nil && !cfg.EtcdOverGRPC {
		apiEtcd, apiWatchers = c.EtcdInProcessClient, c.etcd.NewWatcher
	}
	srv, storageFactory, err := NewAPIServer(APIServerConfig{
		EtcdClient: apiEtcd, EtcdNewWatcher: apiWatchers, EtcdPrefix: cfg.EtcdPrefix, WatchCache: cfg.WatchCache,
		CompactionInterval: cfg.CompactionInterval, EventTTL: cfg.EventTTL, EtcdCountMetricPollPeriod: cfg.EtcdCountMetricPollPeriod,
		ServingCert: &creds.serving, ClientCA: creds.ca.Pool(),
		Listener: ln, Metrics: c.Metrics, Logger: cfg.Logger, KubeletClientTLS: kubeletClientTLS, Auth: authOpts,
		Services: cfg.Services, NodeTokens: c.nodeTokensAuthenticator(), TokenCacheNow: cfg.TokenCacheNow,
		ControllerManagerHealthzURL: c.cmHealthz.URL(), SchedulerHealthzURL: c.schedulerHealthz.URL(),
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	c.storage = storageFactory
	c.goRun(&c.srvWG, "apiserver", func() error { return srv.Run(serverCtx) })

	c.AdminConfig = pki.RESTConfig(c.URL, creds.ca.CertPEM, creds.admin)
	c.AdminKubeconfig = filepath.Join(cfg.DataDir, "admin.kubeconfig")
	if err := pki.WriteKubeconfig(c.AdminKubeconfig, pki.Kubeconfig(c.URL, creds.ca.CertPEM, AdminUser, creds.admin)); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, stop, time.Minute); err != nil {
		return nil, err
	}
	if cfg.Nodes > 0 {
		// Before the controller manager and the scheduler, which share
		// the simulated nodes' pod informer.
		if c.simNodes, err = c.startSimulatedNodes(compsCtx, cfg); err != nil {
			return nil, err
		}
	}
	if cfg.ControllerManager {
		if err := c.startControllerManager(compsCtx, cfg); err != nil {
			return nil, err
		}
		// Ready means pods can be created in "default": its service
		// account exists (the ServiceAccount admission plugin requires it).
		if err := c.waitServiceAccount(ctx, stop, "default", time.Minute); err != nil {
			return nil, err
		}
	}
	if cfg.Scheduler {
		if err := c.startScheduler(compsCtx, cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Nodes > 0 {
		adminCS, err := kubernetes.NewForConfig(c.AdminConfig)
		if err != nil {
			return nil, err
		}
		if err := c.kubeletAPI.enableAuth(compsCtx, adminCS); err != nil {
			return nil, err
		}
		if err := c.startKubelets(compsCtx, cfg); err != nil {
			return nil, err
		}
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		c.shutdown()
	}()
	return c, nil
}

// UpConfig is `kubeproof up`'s configuration with its flags' defaults
// (its flags take their defaults from here): the embedded etcd with fsync
// on, the watch cache, compaction every 5 minutes, the controller manager,
// the scheduler and 3 simulated nodes of 4 CPUs, 32Gi and 110 pods each,
// Node,RBAC authorization and kube-apiserver's admission plugins plus
// NodeRestriction (cluster.Start's defaults for an empty AuthOptions).
// Benchmarks of "one kubeproof up process" start this, changing only
// DataDir, BindAddress, Nodes and Logger.
func UpConfig(dataDir string) Config {
	return Config{
		DataDir:            dataDir,
		BindAddress:        "127.0.0.1:6443",
		WatchCache:         true,
		CompactionInterval: 5 * time.Minute,
		EventTTL:           DefaultEventTTL,
		ControllerManager:  true,
		Scheduler:          true,
		// kube-controller-manager's and kube-scheduler's secure ports.
		ControllerManagerHealthzAddress: "127.0.0.1:10257",
		SchedulerHealthzAddress:         "127.0.0.1:10259",
		PodEvictionTimeout:              300 * time.Second,
		NodeMonitorGracePeriod:          40 * time.Second,
		Nodes:                           3,
		NodeCPU:                         "4",
		NodeMemory:                      "32Gi",
		NodeMaxPods:                     110,
		NodeResolverConfig:              kubelet.DefaultResolverConfig,
		Services:                        ServiceOptions{ClusterIPRange: "10.96.0.0/12", NodePortRange: "30000-32767"},
	}
}

// UpAdmissionPlugins adjusts the default admission plugins for kubeproof's
// control planes (kubeproof up, and kubeproof apiserver's flag defaults):
// kube-apiserver's defaults plus NodeRestriction, as kubeadm sets it.
func UpAdmissionPlugins() (enable, disable []string) {
	return []string{"NodeRestriction"}, nil
}

// UpAuthorizationModes is the --authorization-mode of a whole cluster:
// Node,RBAC as kubeadm sets it. Every built-in component runs with least
// privilege: the scheduler as system:kube-scheduler, each kubelet as
// system:node:<name> (Node authorizer), each controller as its own
// kube-system service account (startControllerManager); only the admin
// kubeconfig is in system:masters.
var UpAuthorizationModes = []string{"Node", "RBAC"}

// AdminUser is the user name of the admin kubeconfig; its group
// system:masters is the superuser group of Kubernetes.
const AdminUser = "kubernetes-admin"

// Client returns a clientset for the admin identity.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.AdminConfig)
}

// Stop shuts every component down and waits until they have stopped.
func (c *Cluster) Stop() error {
	c.cancel()
	<-c.done
	return c.Err()
}

// Done is closed once every component has stopped.
func (c *Cluster) Done() <-chan struct{} { return c.done }

// Err is the first error a component stopped with.
func (c *Cluster) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// shutdown stops the components, then the API server, then releases
// storage and etcd, and closes done. It runs once.
func (c *Cluster) shutdown() {
	c.shutdownOnce.Do(func() {
		c.cancelComps()
		c.compsWG.Wait()
		if c.simNodes != nil {
			c.simNodes.stop()
		}
		c.cancelServer()
		c.srvWG.Wait()
		c.release()
		close(c.done)
	})
}

// goRun runs a component in wg; if it fails, the whole cluster stops.
func (c *Cluster) goRun(wg *sync.WaitGroup, name string, run func() error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := run(); err != nil {
			c.errMu.Lock()
			if c.err == nil {
				c.err = fmt.Errorf("%s: %w", name, err)
			}
			c.errMu.Unlock()
			c.cancel()
		}
	}()
}

func (c *Cluster) release() {
	if c.storage != nil {
		c.storage.Close()
	}
	if c.etcd != nil {
		_ = c.etcd.Close()
	} else if c.EtcdClient != nil {
		_ = c.EtcdClient.Close()
	}
}

// waitReady polls /readyz until the API server is ready.
func (c *Cluster) waitReady(ctx context.Context, stop <-chan struct{}, timeout time.Duration) error {
	rc, err := rest.RESTClientFor(restConfigForRaw(c.AdminConfig))
	if err != nil {
		return fmt.Errorf("building readiness client: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		res := rc.Get().AbsPath("/readyz").Do(ctx)
		var code int
		res.StatusCode(&code)
		if code == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("API server not ready after %s: %v", timeout, res.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the API server: %w", ctx.Err())
		case <-stop:
			if err := c.Err(); err != nil {
				return err
			}
			return errors.New("cluster stopped while waiting for the API server")
		case <-time.After(50 * time.Millisecond):
		}
		if err := c.Err(); err != nil {
			return err
		}
	}
}

// waitServiceAccount waits until the controller manager has created the
// default service account of namespace.
func (c *Cluster) waitServiceAccount(ctx context.Context, stop <-chan struct{}, namespace string, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		_, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service account %s/default not created after %s: %w", namespace, timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for service account %s/default: %w", namespace, ctx.Err())
		case <-stop:
			if err := c.Err(); err != nil {
				return err
			}
			return errors.New("cluster stopped while waiting for the default service account")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
