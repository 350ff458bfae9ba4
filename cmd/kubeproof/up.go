package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// newUpCommand is `kubeproof up`: the whole pipeline in one process on an
// embedded etcd (the main job; `make run`).
func newUpCommand() *cobra.Command {
	var (
		logs        logOptions
		dataDir     string
		port        int
		bindAddress string
		etcdServers []string
		watchCache  bool
		compaction  time.Duration
		eventTTL    time.Duration
		countPoll   time.Duration
		nodes       int
		nodeCPU     string
		nodeMemory  string
		nodeMaxPods int64
		hugepages   string
		dualStack   bool
		simHandlers []string
		simMissing  []string
		swapCap     string
		swapMode    string
		failSwapOn  bool
		cfsQuota    bool
		seccompDef  bool
		resolvConf  string
		sysctls     []string
		sysReserved = reservedFlag{}
		kubReserved = reservedFlag{}
		credConfig  string
		credBinDir  string
		noScheduler bool
		noCM        bool
		evictAfter  time.Duration
		monitorGP   time.Duration
		epBatch     time.Duration
		authOpts    cluster.AuthOptions
		services    cluster.ServiceOptions
		gogc        int
		heapFloor   string
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the whole control plane in one process on an embedded etcd",
		Long: `Run the whole control plane in one process: an embedded etcd (or --etcd-servers),
the API server, the controller manager, the scheduler and --nodes simulated kubelets. Writes DATA_DIR/admin.kubeconfig for a cluster-admin user and
runs until interrupted. Restarting on the same --data-dir keeps every object.
Fail and recover simulated nodes with 'kubeproof node fail|recover NODE' (same --data-dir).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := logs.logger()
			if err != nil {
				return err
			}
			dir, err := filepath.Abs(dataDir)
			if err != nil {
				return fmt.Errorf("resolving --data-dir: %w", err)
			}
			nodeHugePages, err := kubelet.ParseHugePages(hugepages)
			if err != nil {
				return fmt.Errorf("--hugepages: %w", err)
			}
			kubeReserved, err := kubReserved.list("--kube-reserved")
			if err != nil {
				return err
			}
			systemReserved, err := sysReserved.list("--system-reserved")
			if err != nil {
				return err
			}
			if noCM && !cmd.Flags().Changed("enable-admission-plugins") && !cmd.Flags().Changed("disable-admission-plugins") {
				// Without the in-process controller manager nothing may create
				// the default service accounts the ServiceAccount plugin
				// requires (as cluster.Start does for its defaults).
				authOpts.DisableAdmissionPlugins = append(authOpts.DisableAdmissionPlugins, "ServiceAccount")
			}
			// The API server's flags are validated before anything
			// starts, as kube-apiserver's: a service range its option
			// completion refuses alone, then every error together (the
			// request chain's as cluster.Start uses them, with a signing
			// key of its own when none is given; then the Services
			// flags').
			if err := services.Complete(); err != nil {
				return err
			}
			if err := finishServiceValidation(authOpts.ValidateForStart(), services); err != nil {
				return err
			}
			if nodes > 0 {
				// A process hosting simulated nodes runs its collector
				// at sim.HostGCPercent unless told otherwise.
				floor, err := heapFloorBytes(heapFloor, nodes)
				if err != nil {
					return err
				}
				gcCtx, gcStop := context.WithCancel(cmd.Context())
				gc, gcDone := sim.ApplyHostGCPolicy(gcCtx, gogc, cmd.Flags().Changed("gogc"), floor)
				defer func() { gcStop(); <-gcDone }()
				logger.Info("garbage collector", "setting", gc)
			}
			c, err := cluster.Start(cmd.Context(), cluster.Config{
				DataDir:                    dir,
				BindAddress:                net.JoinHostPort(bindAddress, strconv.Itoa(port)),
				EtcdServers:                etcdServers,
				WatchCache:                 watchCache,
				CompactionInterval:         compactionFlag(compaction),
				EventTTL:                   eventTTLFlag(eventTTL),
				EtcdCountMetricPollPeriod:  countPollFlag(countPoll),
				ControllerManager:          !noCM,
				PodEvictionTimeout:         evictAfter,
				NodeMonitorGracePeriod:     monitorGP,
				EndpointUpdatesBatchPeriod: epBatch,
				Scheduler:                  !noScheduler,
				// As kube-controller-manager and kube-scheduler: their
				// /healthz on their secure ports, for componentstatuses.
				ControllerManagerHealthzAddress: cluster.UpConfig("").ControllerManagerHealthzAddress,
				SchedulerHealthzAddress:         cluster.UpConfig("").SchedulerHealthzAddress,
				Nodes:                           nodes,
				NodeCPU:                         nodeCPU,
				NodeMemory:                      nodeMemory,
				NodeMaxPods:                     nodeMaxPods,
				NodeHugePages:                   nodeHugePages,
				DualStackNodes:                  dualStack,
				SimRuntimeHandlers:              simRuntimeHandlers(cmd.Flags(), simHandlers),
				SimMissingImages:                simMissing,
				NodeSwapCapacity:                swapCap,
				NodeMemorySwapBehavior:          kubelet.SwapBehavior(swapMode),
				NodeFailSwapOn:                  &failSwapOn,
				NodeCPUCFSQuota:                 &cfsQuota,
				NodeSeccompDefault:              seccompDef,
				NodeAllowedUnsafeSysctls:        sysctls,
				NodeResolverConfig:              resolvConf,
				NodeSystemReserved:              systemReserved,
				NodeKubeReserved:                kubeReserved,
				ImageCredentialProviderConfig:   credConfig,
				ImageCredentialProviderBinDir:   credBinDir,
				Auth:                            authOpts,
				Services:                        services,
				Logger:                          logger,
			})
			if err != nil {
				return err
			}
			adminDone, err := serveUpNodeAdmin(cmd.Context(), c, dir, nodes, logger)
			if err != nil {
				_ = c.Stop()
				return err
			}
			defer adminDone()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "kubeproof is up.\n")
			fmt.Fprintf(out, "  API server: %s\n", c.URL)
			fmt.Fprintf(out, "  kubeconfig: %s\n", c.AdminKubeconfig)
			fmt.Fprintf(out, "  data:       %s\n\n", dir)
			fmt.Fprintf(out, "Use it with:\n  export KUBECONFIG=%s\n  kubectl get namespaces\n\nPress Ctrl-C to stop.\n", c.AdminKubeconfig)
			<-cmd.Context().Done()
			if err := c.Stop(); err != nil {
				return err
			}
			fmt.Fprintln(out, "kubeproof stopped.")
			return nil
		},
	}
	fs := cmd.Flags()
	def := cluster.UpConfig(".kubeproof") // the defaults benchmarks of `up` start too
	logs.addFlags(fs)
	fs.StringVar(&dataDir, "data-dir", def.DataDir, "Directory for etcd data, certificates and kubeconfigs.")
	fs.IntVar(&port, "port", 6443, "API server port; 0 picks a free port and prints it.")
	fs.StringVar(&bindAddress, "bind-address", "127.0.0.1", "Address the API server listens on.")
	addServiceFlags(fs, &services)
	fs.StringSliceVar(&etcdServers, "etcd-servers", nil, "External etcd endpoints; empty runs an embedded etcd in --data-dir.")
	fs.BoolVar(&watchCache, "watch-cache", def.WatchCache, "Serve watches and resourceVersion=0 lists from an in-memory watch cache.")
	addCompactionFlag(fs, &compaction)
	addEventTTLFlag(fs, &eventTTL)
	addCountPollFlag(fs, &countPoll)
	fs.IntVar(&nodes, "nodes", def.Nodes, "Simulated nodes (kubelets with the sim runtime) to run in-process.")
	fs.IntVar(&gogc, "gogc", sim.HostGCPercent, "Garbage collection target percent (as GOGC) when --nodes > 0: a lower one keeps less freed heap resident per simulated pod for more frequent collections; 0 leaves it to the Go runtime. Unless this flag is given, GOGC or GOMEMLIMIT in the environment take precedence.")
	fs.StringVar(&heapFloor, "gc-heap-floor-per-node", heapFloorDefault(), "Heap goal kept at least this much per simulated node (a quantity, e.g. 1Mi) while the live heap is small, by raising the GC percent above --gogc's default until live heap x 2 reaches it; 0 turns it off. Not applied when --gogc, GOGC or GOMEMLIMIT is given.")
	fs.StringVar(&nodeCPU, "node-cpu", def.NodeCPU, "CPU capacity of each simulated node.")
	fs.StringVar(&nodeMemory, "node-memory", def.NodeMemory, "Memory capacity of each simulated node.")
	fs.Int64Var(&nodeMaxPods, "node-max-pods", def.NodeMaxPods, "Pod capacity of each simulated node.")
	fs.StringVar(&hugepages, "hugepages", "", "Huge pages of each simulated node, page size=pre-allocated pages,... (e.g. 2Mi=512,1Gi=0), as kubeproof kubelet --hugepages: capacity and allocatable hugepages-<size> of pages × size (pods are admitted against it), allocatable memory that much less. Default: none.")
	fs.BoolVar(&dualStack, "dual-stack-nodes", false, "Give each simulated node an IPv6 pod CIDR (fd00:10:244:<n>::/64) besides its IPv4 one, so pods get an address of each family; pair with a dual-stack --service-cluster-ip-range (e.g. 10.96.0.0/12,fd00:10:96::/108).")
	fs.StringVar(&swapCap, "swap-capacity", "0", "Swap capacity of each simulated node, as kubeproof kubelet --swap-capacity: published as the node's status.nodeInfo.swap.capacity when not 0 (needs --fail-swap-on=false).")
	fs.BoolVar(&failSwapOn, "fail-swap-on", true, "Makes each simulated node's kubelet, and so up, fail to start if the node has swap (--swap-capacity not 0), as kubeproof kubelet --fail-swap-on and upstream's.")
	fs.StringVar(&swapMode, "memory-swap-behavior", "", "KubeletConfiguration's memorySwap.swapBehavior of each simulated node, as kubeproof kubelet --memory-swap-behavior: NoSwap (or empty, the default); LimitedSwap needs cgroup v2 and is refused, simulated nodes being cgroup v1.")
	fs.BoolVar(&cfsQuota, "cpu-cfs-quota", true, "CPU CFS quota enforcement of each simulated node, as kubeproof kubelet --cpu-cfs-quota: false gives containers and sandboxes no CFS quota (their CPU limits unenforced).")
	fs.StringSliceVar(&sysctls, "allowed-unsafe-sysctls", nil, allowedUnsafeSysctlsUsage)
	fs.StringVar(&resolvConf, "resolv-conf", def.NodeResolverConfig, "Resolver configuration file of each simulated node, as kubeproof kubelet --resolv-conf: checked against the pod resolver's limits once at the node's start (a CheckLimitsForResolvConf warning on its Node), as upstream; simulated sandboxes read it no further (spec.dnsConfig passes through unchanged). \"\" is none: nothing read or checked.")
	fs.BoolVar(&seccompDef, "seccomp-default", false, "KubeletConfiguration's seccompDefault of each simulated node, as kubeproof kubelet --seccomp-default: a container whose pod and container set no seccompProfile runs under the runtime's default profile (RuntimeDefault) instead of Unconfined.")
	fs.Var(sysReserved, "system-reserved", "Resources reserved for non-kubernetes components on each simulated node, as kubeproof kubelet --system-reserved (ResourceName=ResourceQuantity pairs of cpu, memory, ephemeral-storage, pid): they come off its allocatable. [default=none]")
	fs.Var(kubReserved, "kube-reserved", "Resources reserved for kubernetes system components on each simulated node, as kubeproof kubelet --kube-reserved. [default=none]")
	fs.StringVar(&credConfig, "image-credential-provider-config", "", "The credential provider plugin config file or directory (a CredentialProviderConfig, kubelet.config.k8s.io/v1) of each simulated node, as kubeproof kubelet's: exec plugins asked for the registry credentials of the images they match before a pull, tried after a pod's imagePullSecrets.")
	fs.StringVar(&credBinDir, "image-credential-provider-bin-dir", "", "The directory where the credential provider plugin binaries of --image-credential-provider-config are.")
	addSimRuntimeHandlersFlag(fs, &simHandlers)
	addSimMissingImagesFlag(fs, &simMissing)
	fs.BoolVar(&noCM, "no-controller-manager", false, "Do not run the controller manager (no Deployments/ReplicaSets progress, no garbage collection; ServiceAccount admission off unless the admission plugin flags are given).")
	fs.DurationVar(&evictAfter, "pod-eviction-timeout", def.PodEvictionTimeout, "How long pods stay on a NotReady or unreachable node before eviction (their default tolerationSeconds).")
	fs.DurationVar(&monitorGP, "node-monitor-grace-period", def.NodeMonitorGracePeriod, "How long a node may go without renewing its Lease before it is marked unreachable.")
	fs.DurationVar(&epBatch, "endpoint-updates-batch-period", 0, "How long the endpoints controller delays the sync a pod change causes, writing the pod changes of that window in one update of the service's Endpoints (0: no delay).")
	fs.BoolVar(&noScheduler, "no-scheduler", false, "Do not run the scheduler (pods stay Pending unless bound by someone else).")
	enable, disable := cluster.UpAdmissionPlugins()
	addAuthFlags(fs, &authOpts, cluster.UpAuthorizationModes, enable, disable)
	return cmd
}

// heapFloorDefault is --gc-heap-floor-per-node's default as a quantity.
func heapFloorDefault() string {
	return resource.NewQuantity(sim.HostHeapFloorPerNode, resource.BinarySI).String()
}

// heapFloorBytes is the heap goal floor of a process hosting nodes
// simulated nodes, perNode (a quantity) each.
func heapFloorBytes(perNode string, nodes int) (uint64, error) {
	q, err := resource.ParseQuantity(perNode)
	if err != nil {
		return 0, fmt.Errorf("parsing --gc-heap-floor-per-node: %w", err)
	}
	v, ok := q.AsInt64()
	if !ok || v < 0 {
		return 0, fmt.Errorf("parsing --gc-heap-floor-per-node: %q is not a whole number of bytes >= 0", perNode)
	}
	return uint64(v) * uint64(max(nodes, 0)), nil
}
