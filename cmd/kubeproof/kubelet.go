package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// newKubeletCommand is `kubeproof kubelet`: one node agent against any API
// server, with the simulated runtime or a CRI runtime (containerd, CRI-O).
func newKubeletCommand() *cobra.Command {
	var (
		logs                                logOptions
		kubeconfig, nodeName, runtimeName   string
		bootstrapKubeconfig, certDir        string
		rotateCerts, rotateServerCerts      bool
		criEndpoint, nodeIP, podCIDR        string
		cpu, memory, ephemeral, hugepages   string
		maxPods                             int32
		nodeLabels                          []string
		syncFrequency, statusUpdate, relist time.Duration
		statusReport, leaseDuration, renew  time.Duration
		backoffBase, backoffMax             time.Duration
		pullBackoffBase, pullBackoffMax     time.Duration
		workers                             int
		qps, burst                          int32
		simAnnotations, simPressure         []string
		simSandbox, simPull, simCreate      time.Duration
		simStart, simStop                   time.Duration
		simHandlers                         []string
		simMissing                          []string
		port                                int32
		enableServer                        bool
		address, tlsCert, tlsKey, clientCA  string
		authorizationMode                   string
		tokenWebhook, anonymousAuth         bool
		rootDir, podLogsDir                 string
		evictionFlags                       eviction.Flags
		maxPodGrace                         int32
		imageGCHigh, imageGCLow             int32
		simAvailable                        string
		containerGC                         = gc.DefaultContainerPolicy
		singleProcessOOMKill                bool
		pullVerificationPolicy              string
		preloadedAllowlist                  []string
		allowedUnsafeSysctls                []string
		swapBehavior, swapCapacity          string
		failSwapOn                          bool
		seccompDefault                      bool
		credentialProviderConfig            string
		credentialProviderBinDir            string
		cgroupRoot                          string
		cpuCFSQuota                         bool
		cpuCFSQuotaPeriod                   time.Duration
		podMaxPids                          int64
		kubeletGates                        kubeletFeatureGates
		systemReserved, kubeReserved        = reservedFlag{}, reservedFlag{}
		enforceNodeAllocatable              []string
		systemReservedCg, kubeReservedCg    string
		clusterDNS                          []string
		clusterDomain, resolvConf           string
		configFile, configDir               string
	)
	cmd := &cobra.Command{
		Use:   "kubelet --kubeconfig FILE --node-name NAME [--runtime sim|cri]",
		Short: "Run a node agent: register the node, heartbeat, and run the pods bound to it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := logs.logger()
			if err != nil {
				return err
			}
			// The file's values go to the flags not given on the command
			// line; what the file set counts as given.
			fromFile := map[string]bool{}
			if configFile != "" || configDir != "" {
				if fromFile, err = useKubeletConfigFile(cmd.Flags(), configFile, configDir, logger); err != nil {
					return err
				}
				if fromFile["log-format"] {
					// As upstream's: logging is set up once the
					// configuration is read.
					if logger, err = logs.logger(); err != nil {
						return err
					}
				}
			} else if err := validateFlagsKubeletConfig(cmd.Flags()); err != nil {
				// As upstream's: the flags' configuration is validated too.
				return err
			}
			given := func(flag string) bool { return cmd.Flags().Changed(flag) || fromFile[flag] }
			kubeletGates.warnDeprecated(logger)
			if authorizationMode != "AlwaysAllow" && authorizationMode != "Webhook" {
				return fmt.Errorf("--authorization-mode %q: want AlwaysAllow or Webhook", authorizationMode)
			}
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required")
			}
			if nodeName == "" {
				return errors.New("--node-name is required")
			}
			cfg := kubelet.Config{
				NodeName: nodeName, NodeIP: nodeIP, PodCIDR: podCIDR, MaxPods: int64(maxPods),
				SyncFrequency: syncFrequency, NodeStatusUpdateFrequency: statusUpdate, NodeStatusReportFrequency: statusReport,
				LeaseDuration: leaseDuration, NodeLeaseRenewInterval: renew, RelistPeriod: relist,
				Backoff: podsync.BackoffConfig{Base: backoffBase, Max: backoffMax}, Workers: workers, Logger: logger,
				ImagePullBackoff: podsync.BackoffConfig{Base: pullBackoffBase, Max: pullBackoffMax},
				Labels:           map[string]string{}, Port: port, RootDir: rootDir, PodLogsDir: podLogsDir,
				ContainerGC:                            &containerGC,
				ImagePullCredentialsVerificationPolicy: pullrecords.Policy(pullVerificationPolicy),
				PreloadedImagesVerificationAllowlist:   preloadedAllowlist,
				AllowedUnsafeSysctls:                   allowedUnsafeSysctls,
				MemorySwapBehavior:                     kubelet.SwapBehavior(swapBehavior),
			}
			cfg.FailSwapOn = &failSwapOn
			cfg.SeccompDefault = seccompDefault
			cfg.CgroupRoot = cgroupRoot
			cfg.CPUCFSQuota, cfg.CPUCFSQuotaPeriod = &cpuCFSQuota, cpuCFSQuotaPeriod
			cfg.CustomCPUCFSQuotaPeriod = kubeletGates.customCPUCFSQuotaPeriod
			cfg.PodPidsLimit = podMaxPids
			cfg.ClusterDNS, cfg.ClusterDomain, cfg.ResolverConfig = clusterDNS, clusterDomain, &resolvConf
			// As upstream's kubelet reads them (parseResourceList); the
			// rest is checked by New.
			if cfg.KubeReserved, err = kubeReserved.list("--kube-reserved"); err != nil {
				return err
			}
			if cfg.SystemReserved, err = systemReserved.list("--system-reserved"); err != nil {
				return err
			}
			cfg.EnforceNodeAllocatable = append([]string{}, enforceNodeAllocatable...) // given empty: none
			cfg.SystemReservedCgroup, cfg.KubeReservedCgroup = systemReservedCg, kubeReservedCg
			if given("cpu-cfs-quota-period") {
				// 0 is the config's default; given, it is refused as upstream's.
				if err := kubelet.CheckCFSQuotaPeriod(cpuCFSQuotaPeriod, cfg.CustomCPUCFSQuotaPeriod); err != nil {
					return err
				}
			}
			// As upstream's kubelet: plugins are registered when either
			// flag is given, and a configuration or plugin it refuses
			// stops the kubelet.
			if credentialProviderConfig != "" || credentialProviderBinDir != "" {
				providers, err := credentialprovider.Register(credentialProviderConfig, credentialProviderBinDir, nil, logger)
				if err != nil {
					return fmt.Errorf("registering image credential provider plugins: %w", err)
				}
				cfg.ImageCredentialProviders = providers
			}
			if given("single-process-oom-kill") {
				cfg.SingleProcessOOMKill = &singleProcessOOMKill
			}
			for flag, pair := range map[string]struct {
				s string
				q *resource.Quantity
			}{"--cpu": {cpu, &cfg.CPU}, "--memory": {memory, &cfg.Memory}, "--ephemeral-storage": {ephemeral, &cfg.EphemeralStorage}, "--swap-capacity": {swapCapacity, &cfg.SwapCapacity}} {
				q, err := resource.ParseQuantity(pair.s)
				if err != nil {
					return fmt.Errorf("%s: %w", flag, err)
				}
				*pair.q = q
			}
			if cfg.HugePages, err = kubelet.ParseHugePages(hugepages); err != nil {
				return fmt.Errorf("--hugepages: %w", err)
			}
			if err := parseKeyValues("--node-labels", nodeLabels, cfg.Labels); err != nil {
				return err
			}
			for _, p := range simPressure {
				switch p {
				case string(v1.NodeMemoryPressure):
					cfg.Pressure.Memory = true
				case string(v1.NodeDiskPressure):
					cfg.Pressure.Disk = true
				case string(v1.NodePIDPressure):
					cfg.Pressure.PID = true
				default:
					return fmt.Errorf("--sim-pressure %q: want MemoryPressure, DiskPressure or PIDPressure", p)
				}
			}
			evictionFlags.HardSet = given("eviction-hard")
			evictionFlags.MaxPodGracePeriod = int64(maxPodGrace)
			evictionFlags.ImageGCHighThresholdPercent, evictionFlags.ImageGCLowThresholdPercent = int(imageGCHigh), int(imageGCLow)
			ecfg, err := eviction.ParseConfig(evictionFlags)
			if te := (*eviction.ThresholdError)(nil); errors.As(err, &te) && te.Kubelet != nil {
				// Upstream's kubelet parses its thresholds as it starts
				// to run, and says so.
				return fmt.Errorf("failed to run Kubelet: %w", te.Kubelet)
			}
			if err != nil {
				return err
			}
			cfg.Eviction = &ecfg
			available, err := eviction.ParseAvailable(simAvailable)
			if err != nil {
				return fmt.Errorf("--sim-available: %w", err)
			}
			if runtimeName == "cri" {
				if err := refuseSimFlags(cmd.Flags()); err != nil {
					return err
				}
			}
			var rt kruntime.Runtime
			switch runtimeName {
			case "cri":
				// Capacity from the machine unless given by flag.
				if !cmd.Flags().Changed("cpu") {
					cfg.CPU = *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI)
				}
				if !cmd.Flags().Changed("memory") {
					if mem, err := machineMemory(); err == nil {
						cfg.Memory = *resource.NewQuantity(mem, resource.BinarySI)
					}
				}
				if !cmd.Flags().Changed("swap-capacity") {
					// As upstream's kubelet (cadvisor's machine info).
					swap, err := machineSwap()
					if err != nil {
						return err
					}
					cfg.SwapCapacity = *resource.NewQuantity(swap, resource.BinarySI)
				}
				if !cmd.Flags().Changed("hugepages") {
					// As upstream's kubelet (cadvisor's machine info).
					if cfg.HugePages, err = kubelet.ReadHugePages(os.DirFS(kubelet.SysHugePagesDir)); err != nil {
						return err
					}
				}
				c, err := cri.Dial(cmd.Context(), criEndpoint)
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.WaitNetworkReady(cmd.Context(), time.Second); err != nil {
					return err
				}
				// The node's cgroup mode decides singleProcessOOMKill's
				// default, and its swap controller containers' swap
				// limits, as upstream's kubelet.
				cfg.CgroupDir = kubelet.SysFsCgroup
				// Pods' usage comes from the runtime's CRI container stats:
				// the kubelet gives its host provider the runtime's stats.
				rt = c
			case "sim":
			default:
				return fmt.Errorf("--runtime %q: want sim or cri", runtimeName)
			}
			simCfg := sim.Config{PodCIDR: podCIDR, SandboxLatency: simSandbox, PullLatency: simPull, CreateLatency: simCreate,
				StartLatency: simStart, StopLatency: simStop, DefaultAnnotations: map[string]string{},
				RuntimeHandlers: simRuntimeHandlers(cmd.Flags(), simHandlers), MissingImages: simMissing}
			if simCfg.PodCIDR == "" {
				simCfg.PodCIDR = "10.244.0.0/24"
			}
			if err := parseKeyValues("--sim-annotation", simAnnotations, simCfg.DefaultAnnotations); err != nil {
				return err
			}
			if rt == nil {
				if rt, err = sim.New(simCfg); err != nil {
					return err
				}
			}
			if bootstrapKubeconfig != "" {
				// TLS bootstrapping: a missing or expired --kubeconfig is
				// obtained with the bootstrap credentials first.
				if err := kubelet.Bootstrap(cmd.Context(), kubeconfig, bootstrapKubeconfig, certDir, nodeName, logger); err != nil {
					return fmt.Errorf("bootstrapping client certificate: %w", err)
				}
			}
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			// Certificates kept current by the kubelet (--rotate-certificates,
			// --rotate-server-certificates), as upstream's.
			var certManagers []*kubelet.CertificateManager
			var clientCerts, servingCerts *kubelet.CertificateManager // for /metrics
			if rotateCerts {
				certPEM, keyPEM, err := kubeconfigClientCert(restConfig)
				if err != nil {
					return err
				}
				m, err := kubelet.NewClientCertificateManager(certDir, nodeName, certPEM, keyPEM, logger)
				if err != nil {
					return err
				}
				if restConfig, err = m.ClientConfig(restConfig); err != nil {
					return err
				}
				certManagers, clientCerts = append(certManagers, m), m
			}
			restConfig.QPS, restConfig.Burst, restConfig.UserAgent = float32(qps), int(burst), "kubeproof-kubelet/"+nodeName
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return fmt.Errorf("creating client: %w", err)
			}
			k, err := kubelet.New(cmd.Context(), client, cfg, rt)
			if err != nil {
				return err
			}
			for s, q := range available {
				if err := k.SetAvailable(s, &q); err != nil {
					return fmt.Errorf("--sim-available: %w", err)
				}
			}
			apiOpts := kubeletAPIOptions{
				address: address, port: kubeletAPIPort(cmd.Flags()), nodeIP: nodeIP, nodeName: nodeName,
				tls: server.TLSOptions{CertFile: tlsCert, KeyFile: tlsKey, ClientCAFile: clientCA, CertDir: certDir},
			}
			if authorizationMode == "Webhook" {
				// As kubelet's webhook modes: certificates of --client-ca-file,
				// bearer tokens by TokenReview, anonymous if allowed; every
				// request authorized by a SubjectAccessReview.
				apiOpts.tls.OptionalClientCert = true
				apiOpts.auth = server.NewAuth(server.AuthOptions{Client: client, TokenWebhook: tokenWebhook, AnonymousAuth: anonymousAuth})
			}
			if rotateServerCerts {
				// The node's addresses as its status has them, as
				// upstream's: no request until the first status is posted.
				// --tls-cert-file's certificate, if any, is served until
				// one is issued, as upstream's.
				m, err := kubelet.NewServingCertificateManager(kubelet.ServingCertificateManagerConfig{
					CertDir: certDir, NodeName: nodeName, Addresses: k.NodeAddresses,
					TLSCertFile: tlsCert, TLSKeyFile: tlsKey,
					AllowDNSOnlyNodeCSR: kubeletGates.allowDNSOnlyNodeCSR, Logger: logger,
				})
				if err != nil {
					return err
				}
				apiOpts.tls.GetCertificate = m.ServingCertificate
				certManagers, servingCerts = append(certManagers, m), m
			}
			k.SetCertificateManagers(clientCerts, servingCerts)
			ctx, stop := context.WithCancel(cmd.Context())
			defer stop()
			var wg sync.WaitGroup
			for _, m := range certManagers {
				wg.Go(func() { _ = m.Run(ctx, client) })
			}
			// As upstream, the kubelet exits when it has had no valid
			// client certificate for a while.
			var certErr error
			if clientCerts != nil {
				exitAfter, period := clientCertExitPeriodsOf(ctx)
				wg.Go(func() {
					if certErr = clientCerts.WatchExpiry(ctx, exitAfter, period); certErr != nil {
						stop()
					}
				})
			}
			err = runKubeletWithAPI(ctx, k, apiOpts, logger)
			stop()
			wg.Wait()
			if certErr != nil {
				return certErr
			}
			return err
		},
	}
	fs := cmd.Flags()
	logs.addFlags(fs)
	fs.StringVar(&configFile, "config", "", "A KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, as kubeadm writes): its fields kubeproof implements set their flags, unless given on the command line (flags on the command line win); fields it leaves out take upstream's v1beta1 defaults (so authorization mode Webhook, anonymous authentication off, token authentication on, sync every 1m); relative paths in it are relative to its directory. The result, with the command line's values, is validated as upstream's kubelet validates it (errors name the field and its flag). Fields kubeproof does not implement are named in a start-up warning when set to anything but upstream's default, and tlsMinVersion, tlsCipherSuites, tlsCurvePreferences and enableDebuggingHandlers so set are refused.")
	fs.StringVar(&configDir, "config-dir", "", "Path to a directory of KubeletConfiguration drop-ins (files named *.conf, subdirectories included, in lexical order, each with apiVersion and kind), merged over --config (or the flags' configuration) as upstream's kubelet merges them: the fields each sets replace the earlier ones' (maps merged key by key), a null removes a field whoever set it and the result is defaulted again (a null or zero field is v1beta1's default; evictionHard taken away is none), and --config's evictionHard is the defaults where it leaves it out; flags on the command line still win. The result, with the command line's values, is validated as upstream's kubelet validates it.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig file for the API server.")
	fs.StringVar(&bootstrapKubeconfig, "bootstrap-kubeconfig", "", "Path to a kubeconfig (normally with a bootstrap token) used to obtain a client certificate when --kubeconfig does not exist or its certificate expired; --kubeconfig is then written with it.")
	fs.StringVar(&certDir, "cert-dir", kubelet.DefaultCertDir, "The directory where the TLS certs are located: the bootstrapped (and rotated) client certificate and key kubelet-client-<timestamp>.pem behind kubelet-client-current.pem, which the written --kubeconfig names; without --tls-cert-file, the self-signed serving certificate kubelet.crt and kubelet.key (generated when they do not load). If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored for them.")
	fs.BoolVar(&rotateCerts, "rotate-certificates", false, "Auto rotate the kubelet client certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches (KubeletConfiguration's rotateCertificates): at 70-90% of its lifetime a new key and a CertificateSigningRequest for the kubernetes.io/kube-apiserver-client-kubelet signer, the issued certificate stored in --cert-dir's kubelet-client-current.pem and used by the client's next connections.")
	fs.BoolVar(&rotateServerCerts, "rotate-server-certificates", false, "Auto-request and rotate the kubelet serving certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches (KubeletConfiguration's serverTLSBootstrap): CertificateSigningRequests for the kubernetes.io/kubelet-serving signer with the addresses of the node's status as SANs (its hostname as a DNS name, its IP as an IP address; asked again when they change), which a user must approve (kubectl certificate approve); the kubelet API serves the issued certificate (kept in --cert-dir's kubelet-server-current.pem); until one is, --tls-cert-file's (with --tls-private-key-file) while it is valid, else it refuses handshakes.")
	fs.StringVar(&nodeName, "node-name", "", "Name of the Node to register.")
	fs.StringVar(&nodeName, "hostname-override", "", "Same as --node-name (upstream's flag name).")
	fs.StringVar(&runtimeName, "runtime", "sim", "Container runtime: sim (in-process simulation) or cri (a CRI v1 runtime at --cri-endpoint).")
	fs.StringVar(&criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock", "CRI endpoint for --runtime cri.")
	fs.StringVar(&criEndpoint, "container-runtime-endpoint", "unix:///run/containerd/containerd.sock", "Same as --cri-endpoint (upstream's flag name).")
	fs.StringVar(&nodeIP, "node-ip", "", "The node's InternalIP and the pods' hostIP (default 127.0.0.1).")
	fs.StringVar(&podCIDR, "pod-cidr", "", "Pod CIDR: the simulated runtime's IP pool, also written to node.spec.podCIDR (default pool 10.244.0.0/24); two of different IP families, comma-separated, make a dual-stack node (node.spec.podCIDRs both, every sandbox an address of each).")
	fs.StringVar(&cpu, "cpu", "4", "Node CPU capacity (and allocatable, less --system-reserved and --kube-reserved).")
	fs.StringVar(&memory, "memory", "32Gi", "Node memory capacity (and allocatable, less --system-reserved, --kube-reserved and --eviction-hard's memory.available).")
	fs.StringVar(&ephemeral, "ephemeral-storage", "100Gi", "Node ephemeral-storage capacity (and allocatable, less --system-reserved, --kube-reserved and --eviction-hard's nodefs.available).")
	fs.StringVar(&swapCapacity, "swap-capacity", "0", "Node swap capacity (upstream's machine info SwapCapacity), published as the node's status.nodeInfo.swap.capacity when not 0; --memory-swap-behavior LimitedSwap shares it among Burstable pods' containers. Default: none, or with --runtime cri SwapTotal of /proc/meminfo.")
	fs.StringVar(&hugepages, "hugepages", "", "Node huge pages, page size=pre-allocated pages,... (e.g. 2Mi=512,1Gi=0): capacity and allocatable hugepages-<size> of pages × size (pods are admitted against it), allocatable memory that much less. Default: none, or with --runtime cri what /sys/kernel/mm/hugepages lists.")
	fs.Int32Var(&maxPods, "max-pods", kubelet.DefaultMaxPods, "Maximum number of pods on the node.")
	fs.StringSliceVar(&nodeLabels, "node-labels", nil, "Extra node labels, key=value,...")
	fs.DurationVar(&syncFrequency, "sync-frequency", kubelet.DefaultSyncFrequency, "Period of the full resync of every pod.")
	fs.DurationVar(&statusUpdate, "node-status-update-frequency", kubelet.DefaultNodeStatusUpdateFrequency, "How often node status is computed and posted if changed.")
	fs.DurationVar(&statusReport, "node-status-report-frequency", kubelet.DefaultNodeStatusReportFrequency, "How often node status is posted even if unchanged.")
	fs.DurationVar(&leaseDuration, "node-lease-duration", kubelet.DefaultLeaseDuration, "leaseDurationSeconds of the node Lease.")
	fs.DurationVar(&renew, "node-lease-renew-interval", kubelet.DefaultNodeLeaseRenewInterval, "How often the node Lease is renewed.")
	fs.DurationVar(&relist, "relist-period", kubelet.DefaultRelistPeriod, "How often the runtime is listed for container state changes.")
	fs.DurationVar(&backoffBase, "crashloop-backoff-base", podsync.DefaultBackoff.Base, "First CrashLoopBackOff delay (doubles per restart).")
	fs.DurationVar(&backoffMax, "crashloop-backoff-max", podsync.DefaultBackoff.Max, "Largest CrashLoopBackOff delay.")
	fs.DurationVar(&pullBackoffBase, "image-pull-backoff-base", podsync.DefaultImagePullBackoff.Base, "First ImagePullBackOff delay after a failed image pull (doubles per failed pull of the image for the pod).")
	fs.DurationVar(&pullBackoffMax, "image-pull-backoff-max", podsync.DefaultImagePullBackoff.Max, "Largest ImagePullBackOff delay.")
	fs.IntVar(&workers, "pod-workers", kubelet.DefaultWorkers, "Goroutines syncing pods.")
	// int32 flags, as upstream's (kubeAPIQPS is an int32 field).
	fs.Int32Var(&qps, "kube-api-qps", 50, "Client QPS to the API server.")
	fs.Int32Var(&burst, "kube-api-burst", 100, "Client burst to the API server.")
	fs.StringSliceVar(&simAnnotations, "sim-annotation", nil, "Fault annotations applied to every pod unless the pod sets them, key=value,... (e.g. sim.kubeproof.io/readiness=fail).")
	fs.StringSliceVar(&simPressure, "sim-pressure", nil, "Simulated node pressure: MemoryPressure, DiskPressure, PIDPressure make the node report no memory.available, nodefs.available, pid.available respectively; the eviction manager then reports the condition (if the signal has a threshold), refuses pods and evicts running ones.")
	fs.DurationVar(&simSandbox, "sim-sandbox-latency", 0, "Simulated RunPodSandbox latency.")
	fs.DurationVar(&simPull, "sim-pull-latency", 0, "Simulated image pull latency.")
	fs.DurationVar(&simCreate, "sim-create-latency", 0, "Simulated CreateContainer latency.")
	fs.DurationVar(&simStart, "sim-start-latency", 0, "Simulated StartContainer latency.")
	fs.Int32Var(&port, "port", kubelet.KubeletPort, "Port of the kubelet API (HTTPS), reported in the node's status.daemonEndpoints; outside 1-65535 the kubelet does not start, as upstream's (--enable-server=false turns the API off).")
	fs.BoolVar(&enableServer, "enable-server", true, "Enable the kubelet API (KubeletConfiguration's enableServer); false: no API whatever --port says (the port is still reported in the node's status.daemonEndpoints), as upstream's.")
	fs.StringVar(&address, "address", "0.0.0.0", "IP address the kubelet API listens on.")
	fs.StringVar(&tlsCert, "tls-cert-file", "", "Serving certificate of the kubelet API (default: a self-signed one for the node name and IP, <cert-dir>/kubelet.crt).")
	fs.StringVar(&tlsKey, "tls-private-key-file", "", "Private key of --tls-cert-file.")
	fs.StringVar(&authorizationMode, "authorization-mode", "AlwaysAllow", "Authorization of kubelet API requests: AlwaysAllow, or Webhook (a SubjectAccessReview per request on nodes/proxy, stats, log, ...).")
	fs.BoolVar(&tokenWebhook, "authentication-token-webhook", false, "Authenticate bearer tokens on the kubelet API with a TokenReview (with --authorization-mode Webhook).")
	fs.BoolVar(&anonymousAuth, "anonymous-auth", true, "With --authorization-mode Webhook, requests without credentials are system:anonymous (and still authorized); false: 401.")
	fs.StringVar(&clientCA, "client-ca-file", "", "CA bundle the kubelet API verifies client certificates against; when set, a certificate it signed is required (otherwise the API is open).")
	fs.DurationVar(&simStop, "sim-stop-latency", 0, "Simulated StopContainer latency.")
	addSimRuntimeHandlersFlag(fs, &simHandlers)
	addSimMissingImagesFlag(fs, &simMissing)
	fs.Var(newPairsFlag(&evictionFlags.Hard, eviction.DefaultEvictionHard, "<"), "eviction-hard", "Hard eviction thresholds, signal<quantity or signal<percentage,... (signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available); giving it replaces the whole default and giving it again adds to it (a signal named twice keeps its last value); 0% or 100% leaves a signal out, a zero quantity is refused.")
	fs.Var(newPairsFlag(&evictionFlags.Soft, "", "<"), "eviction-soft", "Soft eviction thresholds, signal<quantity or percentage,...; each needs a grace period in --eviction-soft-grace-period.")
	fs.Var(newPairsFlag(&evictionFlags.SoftGracePeriod, "", "="), "eviction-soft-grace-period", "How long each soft threshold must hold before pods are evicted, signal=duration,... (e.g. memory.available=1m30s).")
	fs.Var(newPairsFlag(&evictionFlags.MinimumReclaim, "", "="), "eviction-minimum-reclaim", "Amount beyond a met threshold to reclaim before it counts as resolved, signal=quantity or percentage,...")
	fs.DurationVar(&evictionFlags.PressureTransitionPeriod, "eviction-pressure-transition-period", eviction.DefaultPressureTransition, "How long a pressure condition stays True after its threshold stopped being met.")
	fs.Int32Var(&maxPodGrace, "eviction-max-pod-grace-period", 0, "Largest grace period (seconds) given to a pod evicted for a soft threshold; 0: the pod's own.")
	fs.Int32Var(&imageGCHigh, "image-gc-high-threshold", gc.DefaultHighThresholdPercent, "Image filesystem usage percent at or above which unused images are collected (100 disables image garbage collection).")
	fs.Int32Var(&imageGCLow, "image-gc-low-threshold", gc.DefaultLowThresholdPercent, "Image filesystem usage percent image garbage collection frees down to.")
	fs.DurationVar(&evictionFlags.MinimumImageTTLDuration, "minimum-image-ttl-duration", gc.DefaultMinAge, "Minimum age of an unused image before it may be garbage collected.")
	fs.DurationVar(&evictionFlags.ImageMaximumGCAge, "image-maximum-gc-age", 0, "How long an image may stay unused before image garbage collection removes it whatever the disk usage; 0 turns this off.")
	fs.DurationVar(&evictionFlags.MonitoringInterval, "eviction-monitoring-interval", eviction.DefaultMonitoringInterval, "How often the eviction manager observes the node (kubeproof's flag; upstream's is fixed at 10s).")
	fs.DurationVar(&containerGC.MinAge, "minimum-container-ttl-duration", containerGC.MinAge, "Minimum age of a dead container before it may be garbage collected.")
	fs.IntVar(&containerGC.MaxPerPodContainer, "maximum-dead-containers-per-container", containerGC.MaxPerPodContainer, "How many dead instances of each container of a pod to keep (negative: all).")
	fs.IntVar(&containerGC.MaxContainers, "maximum-dead-containers", containerGC.MaxContainers, "How many dead containers to keep on the node in all (negative: no limit).")
	for _, name := range []string{"minimum-container-ttl-duration", "maximum-dead-containers-per-container", "maximum-dead-containers"} {
		// Deprecated upstream too, in favour of the eviction thresholds.
		_ = fs.MarkDeprecated(name, "use --eviction-hard or --eviction-soft instead; it will be removed in a future version.")
	}
	fs.StringVar(&simAvailable, "sim-available", "", "What the simulated node reports available, signal=quantity,... (e.g. memory.available=50Mi); the eviction manager acts on it.")
	fs.StringVar(&rootDir, "root-dir", "/var/lib/kubelet", "Directory for pod directories and their volumes.")
	fs.StringVar(&podLogsDir, "pod-logs-dir", "/var/log/pods", "Directory the container runtime writes pod logs to.")
	fs.BoolVar(&singleProcessOOMKill, "single-process-oom-kill", false, "KubeletConfiguration's singleProcessOOMKill (upstream has no flag): true leaves the OOM killer killing the one process it picks; false has the runtime kill the whole container (memory.oom.group=1), cgroup v2 only, an error on cgroup v1. Unset: false on cgroup v2, true on cgroup v1 (with --runtime cri, the mode of /sys/fs/cgroup; a simulated node is cgroup v1).")
	fs.StringVar(&pullVerificationPolicy, "image-pull-credentials-verification-policy", string(pullrecords.DefaultPolicy), "KubeletConfiguration's imagePullCredentialsVerificationPolicy (upstream has no flag): which images already present a pod must prove it may use (with a pull of its own, or the pull secret or credentials that pulled them) before using them: NeverVerify (none), NeverVerifyPreloadedImages (those the kubelet pulled), NeverVerifyAllowlistedImages (all but those of --preloaded-images-verification-allowlist) or AlwaysVerify (all).")
	fs.StringVar(&cgroupRoot, "cgroup-root", "/", "Root cgroup of the kubelet's cgroups (kubepods, the QoS classes' and the pods'), as upstream's with cgroups per QoS class (a root that does not exist is refused). Two kubelets sharing a host's cgroups need roots of their own: with --runtime cri each removes the pod cgroups under its root that are not its pods'.")
	fs.BoolVar(&cpuCFSQuota, "cpu-cfs-quota", true, "Enable CPU CFS quota enforcement for containers that specify CPU limits (KubeletConfiguration's cpuCFSQuota): false gives containers no CFS quota and pod cgroups an unlimited one.")
	fs.DurationVar(&cpuCFSQuotaPeriod, "cpu-cfs-quota-period", 100*time.Millisecond, "Sets CPU CFS quota period value, cpu.cfs_period_us (KubeletConfiguration's cpuCFSQuotaPeriod); another than 100ms needs --feature-gates CustomCPUCFSQuotaPeriod=true and must be between 1ms and 1s.")
	fs.Int64Var(&podMaxPids, "pod-max-pids", -1, "Set the maximum number of processes per pod (KubeletConfiguration's podPidsLimit): with --runtime cri each pod cgroup's pids.max. If -1, the kubelet defaults to the node allocatable pid capacity (kubepods's pids.max: the least of kernel.pid_max and kernel.threads-max).")
	fs.Var(&kubeletGates, "feature-gates", "Comma-separated gate=true|false pairs of the kubelet's feature gates; known: CustomCPUCFSQuotaPeriod (alpha, default false: --cpu-cfs-quota-period must be 100ms), AllowDNSOnlyNodeCSR (deprecated, default false: with --rotate-server-certificates, a node without an IP address asks for a serving certificate of its DNS names alone).")
	fs.BoolVar(&seccompDefault, "seccomp-default", false, "Enable the use of RuntimeDefault as the default seccomp profile for all workloads (KubeletConfiguration's seccompDefault): a container whose pod and container set no seccompProfile runs under the runtime's default profile instead of Unconfined.")
	fs.BoolVar(&failSwapOn, "fail-swap-on", true, "Makes the kubelet fail to start if the node has swap (--swap-capacity, or with --runtime cri SwapTotal of /proc/meminfo, not 0), as upstream's.")
	fs.StringVar(&swapBehavior, "memory-swap-behavior", "", "KubeletConfiguration's memorySwap.swapBehavior (upstream has no flag): NoSwap (or empty, the default) keeps every container from swapping where the node's cgroups limit swap; LimitedSwap lets each container of a Burstable, non-critical pod whose memory request is set and differs from its limit swap request / node memory × node swap capacity (--swap-capacity), the rest none. LimitedSwap needs cgroup v2 and is an error on cgroup v1 (a simulated node is cgroup v1; with --runtime cri, the mode of /sys/fs/cgroup).")
	fs.StringVar(&credentialProviderConfig, "image-credential-provider-config", "", "The path to the credential provider plugin config file or directory (a CredentialProviderConfig, kubelet.config.k8s.io/v1): exec plugins asked for the registry credentials of the images they match, tried after a pod's imagePullSecrets.")
	fs.StringVar(&credentialProviderBinDir, "image-credential-provider-bin-dir", "", "The path to the directory where credential provider plugin binaries are located.")
	fs.Var(systemReserved, "system-reserved", "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components: only cpu, memory, ephemeral-storage and pid. They come off the node's allocatable (with the hard eviction thresholds; pid only off kubepods's pids.max) and, with --enforce-node-allocatable pods, off kubepods's limits. [default=none]")
	fs.Var(kubeReserved, "kube-reserved", "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components, as --system-reserved. [default=none]")
	fs.StringSliceVar(&enforceNodeAllocatable, "enforce-node-allocatable", []string{kubelet.EnforcePods}, "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet: 'none', 'pods' (kubepods limited to the allocatable less no eviction threshold), 'system-reserved' and 'kube-reserved' (the cgroups of --system-reserved-cgroup and --kube-reserved-cgroup, which must then be set and exist, limited to their reservations at start), or 'system-reserved-compressible' and 'kube-reserved-compressible' (their CPU only). If 'none' is specified, no additional options should be set. Cgroups are only written with --runtime cri.")
	fs.StringVar(&systemReservedCg, "system-reserved-cgroup", "", "Absolute name of the top level cgroup that is used to manage non-kubernetes components for which compute resources were reserved via '--system-reserved' flag. Ex. '/system-reserved'. [default='']")
	fs.StringVar(&kubeReservedCg, "kube-reserved-cgroup", "", "Absolute name of the top level cgroup that is used to manage kubernetes components for which compute resources were reserved via '--kube-reserved' flag. Ex. '/kube-reserved'. [default='']")
	fs.StringSliceVar(&clusterDNS, "cluster-dns", nil, "Comma-separated list of DNS server IP addresses: the nameservers of pods with dnsPolicy ClusterFirst (and of ClusterFirstWithHostNet ones); without any such a pod falls back to the Default policy with a MissingClusterDNS warning. With --runtime cri only (simulated nodes' sandboxes get spec.dnsConfig as it is).")
	fs.StringVar(&clusterDomain, "cluster-domain", "", "Domain for this cluster: ClusterFirst pods search <namespace>.svc.<domain>, svc.<domain> and <domain> before the node's search path, and a pod with a subdomain is named <hostname>.<subdomain>.<namespace>.svc.<domain> in its /etc/hosts (and by its sandbox's hostname with setHostnameAsFQDN: at most 64 characters, longer fails the sandbox).")
	fs.StringVar(&resolvConf, "resolv-conf", kubelet.DefaultResolverConfig, "Resolver configuration file used as the basis for the container DNS resolution configuration (its nameservers, search path and options: those of Default pods, the search path after the cluster's for ClusterFirst ones); \"\" is none (loopback nameservers and the search path \".\" for Default pods). Read whenever a pod's sandbox config is built (at its creation and on every sync, as upstream) with --runtime cri; checked against the resolver's limits once at start (a CheckLimitsForResolvConf warning on the Node) whatever the runtime, as upstream.")
	fs.StringSliceVar(&allowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, allowedUnsafeSysctlsUsage)
	fs.StringSliceVar(&preloadedAllowlist, "preloaded-images-verification-allowlist", nil, "KubeletConfiguration's preloadedImagesVerificationAllowlist (upstream has no flag): the images NeverVerifyAllowlistedImages lets any pod use, each a repository without tag or digest as it normalizes (docker.io/library/nginx) or a prefix ending in /* (registry.example.com/team/*); only with that policy.")
	// A flag that does not parse is upstream's kubelet's error (its
	// command parses its flags itself and wraps their errors so), pflag's
	// ("unknown flag: --x", "invalid argument ...") after it.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("failed to parse kubelet flag: %w", err)
	})
	return cmd
}

// kubeletAPIPort is the port the kubelet API listens on, 0 for none:
// --port, unless --enable-server=false, which upstream's kubelet obeys
// whatever its port.
func kubeletAPIPort(fs *pflag.FlagSet) int32 {
	if on, err := fs.GetBool("enable-server"); err == nil && !on {
		return 0
	}
	port, _ := fs.GetInt32("port")
	return port
}

// parseKeyValues parses key=value items into out.
func parseKeyValues(flag string, items []string, out map[string]string) error {
	for _, kv := range items {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%s: want key=value, got %q", flag, kv)
		}
		out[k] = v
	}
	return nil
}

// procMeminfo is where Linux reports the machine's memory and swap.
const procMeminfo = "/proc/meminfo"

// machineMemory is MemTotal from /proc/meminfo, in bytes.
func machineMemory() (int64, error) { return readMeminfo(procMeminfo, "MemTotal") }

// machineSwap is SwapTotal from /proc/meminfo, in bytes: the swap capacity
// upstream's kubelet takes from cadvisor's machine info, which reads it
// there.
func machineSwap() (int64, error) { return readMeminfo(procMeminfo, "SwapTotal") }

// readMeminfo is one field of the meminfo file at path, in bytes.
func readMeminfo(path, field string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("reading %s of %s: %w", field, path, err)
	}
	defer f.Close()
	v, err := meminfoBytes(f, field)
	if err != nil {
		return 0, fmt.Errorf("reading %s of %s: %w", field, path, err)
	}
	return v, nil
}

// meminfoBytes is field of a /proc/meminfo listing ("SwapTotal:  1024 kB"
// lines, values in KiB), in bytes.
func meminfoBytes(r io.Reader, field string) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field+":" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s not found", field)
}

// addSimRuntimeHandlersFlag adds --sim-runtime-handlers (of `kubeproof
// kubelet` and `kubeproof up`): sim.Config.RuntimeHandlers, read with
// simRuntimeHandlers.
func addSimRuntimeHandlersFlag(fs *pflag.FlagSet, handlers *[]string) {
	fs.StringSliceVar(handlers, "sim-runtime-handlers", nil, "Runtime handlers (RuntimeClass handlers, CRI RunPodSandbox's runtimeHandler) the simulated runtime has besides its default, comma-separated; a sandbox asking for another is refused with containerd's error (\"no runtime for ... is configured\"). Empty: the default handler alone. Unset: any handler is accepted.")
}

// addSimMissingImagesFlag adds --sim-missing-images (of `kubeproof
// kubelet` and `kubeproof up`): sim.Config.MissingImages.
func addSimMissingImagesFlag(fs *pflag.FlagSet, images *[]string) {
	fs.StringSliceVar(images, "sim-missing-images", nil, "Images the simulated runtime's registries do not have, comma-separated: image references (any spelling: nginx:nope is docker.io/library/nginx:nope) or glob patterns (* within one path segment, ?, [...]) matched against the reference as the pod names it, in full or in its short form (nosuch/* matches nosuch/app and docker.io/nosuch/app:1.0). Pulls of them fail as containerd's for an image the registry answers 404 for (rpc error: code = NotFound desc = failed to pull and unpack image ...: not found), so pods using them end in ErrImagePull and ImagePullBackOff.")
}

// refuseSimFlags refuses the flags of the simulated runtime (--sim-*)
// given to a kubelet that does not run it (--runtime cri): they would
// be silently ignored. The first one given, in name order, is named.
func refuseSimFlags(fs *pflag.FlagSet) error {
	var given []string
	fs.Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "sim-") {
			given = append(given, f.Name)
		}
	})
	if len(given) == 0 {
		return nil
	}
	slices.Sort(given)
	return fmt.Errorf("--%s: a flag of the simulated runtime, only with --runtime sim", given[0])
}

// simRuntimeHandlers is sim.Config.RuntimeHandlers from
// --sim-runtime-handlers: nil (any handler) unless the flag was given, a
// non-nil list (possibly empty) if it was.
func simRuntimeHandlers(fs *pflag.FlagSet, handlers []string) []string {
	if !fs.Changed("sim-runtime-handlers") {
		return nil
	}
	if handlers == nil {
		return []string{}
	}
	return handlers
}

// kubeletFeatureGates is `kubeproof kubelet`'s --feature-gates: the
// kubelet's gates kubeproof has, CustomCPUCFSQuotaPeriod (alpha, off by
// default, as upstream's) and AllowDNSOnlyNodeCSR (deprecated, off by
// default, as upstream's); another is refused with upstream's message.
type kubeletFeatureGates struct {
	customCPUCFSQuotaPeriod bool
	allowDNSOnlyNodeCSR     bool
	// named are the gates a Set named.
	named map[string]bool
}

// warnDeprecated logs, as upstream's feature gate when one is set, a
// warning for each deprecated gate a Set named (AllowDNSOnlyNodeCSR).
func (g *kubeletFeatureGates) warnDeprecated(logger *slog.Logger) {
	if g.named["AllowDNSOnlyNodeCSR"] {
		logger.Info("Warning: setting deprecated feature gate. It will be removed in a future release.",
			"featureGate", "AllowDNSOnlyNodeCSR", "value", g.allowDNSOnlyNodeCSR)
	}
}

// pairs is name=value of each gate, sorted by name: those a Set named,
// and CustomCPUCFSQuotaPeriod always when all is set.
func (g *kubeletFeatureGates) pairs(all bool) string {
	var p []string
	if g.named["AllowDNSOnlyNodeCSR"] {
		p = append(p, "AllowDNSOnlyNodeCSR="+strconv.FormatBool(g.allowDNSOnlyNodeCSR))
	}
	if all || g.named["CustomCPUCFSQuotaPeriod"] {
		p = append(p, "CustomCPUCFSQuotaPeriod="+strconv.FormatBool(g.customCPUCFSQuotaPeriod))
	}
	return strings.Join(p, ",")
}

// namedString is the gates a Set named, as pairs: what the command line
// gave, which a KubeletConfiguration's featureGates go under (upstream's
// kubeletConfigFlagPrecedence keeps the file's gates the flag leaves out).
func (g *kubeletFeatureGates) namedString() string {
	return g.pairs(false)
}

func (g *kubeletFeatureGates) String() string {
	return g.pairs(true)
}

func (g *kubeletFeatureGates) Set(s string) error {
	// As upstream's featureGate.Set: every pair parsed (name and value
	// trimmed) before any gate is looked up (SetFromMap).
	type gate struct {
		name string
		on   bool
	}
	var gates []gate
	for pair := range strings.SplitSeq(s, ",") {
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return fmt.Errorf("missing bool value for %s", name)
		}
		value = strings.TrimSpace(value)
		on, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %w", name, value, err)
		}
		gates = append(gates, gate{name, on})
	}
	for _, gt := range gates {
		switch gt.name {
		case "CustomCPUCFSQuotaPeriod":
			g.customCPUCFSQuotaPeriod = gt.on
		case "AllowDNSOnlyNodeCSR":
			g.allowDNSOnlyNodeCSR = gt.on
		default:
			return fmt.Errorf("unrecognized feature gate: %s", gt.name)
		}
		if g.named == nil {
			g.named = map[string]bool{}
		}
		g.named[gt.name] = true
	}
	return nil
}

func (*kubeletFeatureGates) Type() string { return "mapStringBool" }

// allowedUnsafeSysctlsUsage is the help of --allowed-unsafe-sysctls,
// `kubeproof kubelet`'s and `kubeproof up`'s (for each simulated node).
const allowedUnsafeSysctlsUsage = "Unsafe sysctls, or sysctl patterns ending in * (net.core.*), pods may set in spec.securityContext.sysctls besides the safe ones (which depend on the kernel), comma-separated; each must be of a namespace the kernel keeps per pod (net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, kernel.domainname, user.*). A pod setting any other is refused at admission (Failed, SysctlForbidden). Use at your own risk."
