package kubelet

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
	"github.com/kubeproof/kubeproof/impl/kubeversion"
)

// Config configures one kubelet. Zero fields take upstream's defaults.
type Config struct {
	NodeName string
	// NodeIP is reported as the node's InternalIP and the pods' hostIP
	// (default 127.0.0.1).
	NodeIP string
	// Port is the kubelet API's port, reported in
	// status.daemonEndpoints.kubeletEndpoint (default KubeletPort).
	Port int32
	// PodCIDR is written to node.spec.podCIDR when set; two CIDRs of
	// different families, comma-separated, make a dual-stack node
	// (node.spec.podCIDRs both, podCIDR the first).
	PodCIDR string
	// Capacity of the node; allocatable is capacity less the system and
	// kube reservations and what the hard eviction thresholds keep back
	// (allocatable.go).
	CPU, Memory, EphemeralStorage resource.Quantity
	MaxPods                       int64
	// HugePages are the node's huge page sizes with their pre-allocated
	// pages (nil: none, a simulated node's default). Each is capacity and
	// allocatable hugepages-<size> of pages × size, and allocatable memory
	// is that much less, as upstream's kubelet; a `kubeproof kubelet
	// --runtime cri` reads them from /sys/kernel/mm/hugepages
	// (ReadHugePages). Page sizes are positive whole KiB, each once.
	HugePages []HugePages
	Labels    map[string]string
	// Pressure is the node's simulated resource pressure at start (see
	// Kubelet.SetPressure).
	Pressure Pressure
	// Eviction configures the eviction manager (eviction.ParseConfig reads
	// the kubelet's --eviction-* flags); nil: upstream's defaults
	// (eviction.DefaultEvictionHard, 5 m pressure transition period, 10 s
	// monitoring interval).
	Eviction *eviction.Config
	// EvictionProvider observes the node and its pods; nil: an
	// eviction.SimProvider over the configured capacity with the sim
	// runtime, eviction.HostProvider on RootDir otherwise.
	EvictionProvider eviction.Provider
	// ContainerGC is the dead container garbage collection policy
	// (--minimum-container-ttl-duration,
	// --maximum-dead-containers-per-container, --maximum-dead-containers);
	// nil: upstream's default, gc.DefaultContainerPolicy.
	ContainerGC *gc.ContainerPolicy
	// SingleProcessOOMKill is KubeletConfiguration's singleProcessOOMKill
	// (upstream has no flag for it): true leaves the OOM killer killing
	// the one process it picks; false has the runtime kill the whole
	// container (memory.oom.group=1 in every container's and sandbox's CRI
	// Unified resources), cgroup v2 only. nil: false on cgroup v2, true on
	// cgroup v1; false on cgroup v1 is upstream's configuration error
	// (oomGroupKill).
	SingleProcessOOMKill *bool
	// CgroupDir is the cgroup filesystem the node's containers run in,
	// whose mode the kubelet detects once at start (CgroupUnified: cgroup
	// v2 when it holds cgroup.controllers), and its swap controller
	// (detectSwapControl); SysFsCgroup for a `kubeproof kubelet --runtime
	// cri`. Empty: a node of cgroup v1 without swap control, whatever the
	// host's (simulated nodes' default).
	CgroupDir string
	// CgroupRoot is upstream's --cgroup-root: the cgroup the kubelet's
	// cgroups (kubepods, the QoS classes' and the pods') are made under;
	// "" or "/" is the root (upstream's default with cgroups per QoS
	// class). Two kubelets sharing a host's cgroups need roots of their
	// own, as each writes its QoS classes' cgroups from its own pods and
	// removes the pod cgroups under its root that are not its pods'
	// (podcgroups.go). A root that does not exist is refused, as
	// upstream's (New fails: "invalid configuration: ...").
	CgroupRoot string
	// MemorySwapBehavior is KubeletConfiguration's memorySwap.swapBehavior
	// (upstream has no flag): "" or NoSwap (upstream's default) keeps
	// every container from swapping where the node's cgroups limit swap;
	// LimitedSwap lets the containers of Burstable pods swap their memory
	// request's share of SwapCapacity (containerSwapBehavior,
	// limitedSwapBytes), cgroup v2 only: New refuses it on cgroup v1 (a
	// simulated node without CgroupDir is one), and any other value, with
	// upstream's messages (checkSwapBehavior).
	MemorySwapBehavior SwapBehavior
	// SwapCapacity is the node's swap space, upstream's machine info
	// SwapCapacity: a `kubeproof kubelet --runtime cri` reads SwapTotal of
	// /proc/meminfo unless --swap-capacity says otherwise; a simulated
	// node has none unless told. LimitedSwap divides it among containers;
	// when not zero it is published as node.status.nodeInfo.swap.capacity,
	// as upstream's kubelet does (NodeSwap being GA). Not negative.
	SwapCapacity resource.Quantity
	// FailSwapOn is KubeletConfiguration's failSwapOn (--fail-swap-on):
	// nil or true, upstream's default, makes New refuse a node with swap
	// (SwapCapacity not zero; on a CRI node SwapTotal is not zero exactly
	// when /proc/swaps, where upstream's kubelet looks, lists a swap area)
	// with upstream's message (checkFailSwapOn).
	FailSwapOn *bool
	// ImagePullCredentialsVerificationPolicy is KubeletConfiguration's
	// imagePullCredentialsVerificationPolicy (upstream has no flag): which
	// present images a pod must prove it may use before using them without
	// a pull (pullcredentials.go); "" is upstream's default,
	// NeverVerifyPreloadedImages. PreloadedImagesVerificationAllowlist is
	// its preloadedImagesVerificationAllowlist: the repositories
	// NeverVerifyAllowlistedImages exempts ("registry.example.com/app", or
	// "registry.example.com/team/*" for all under a path), allowed only with
	// that policy. New refuses what upstream's validation does, with its
	// messages (pullrecords.Validate).
	ImagePullCredentialsVerificationPolicy pullrecords.Policy
	PreloadedImagesVerificationAllowlist   []string
	// ImageCredentialProviders are the node's image credential provider
	// plugins (credentialprovider.Register of upstream's
	// --image-credential-provider-config and
	// --image-credential-provider-bin-dir): their credentials for an image
	// are tried after those of the pod's pull secrets, and an image pulled
	// with them is one any pod of the node may use. Nil: none.
	ImageCredentialProviders credentials.NodeCredentials
	// CPUCFSQuota is KubeletConfiguration's cpuCFSQuota (--cpu-cfs-quota):
	// nil or true, upstream's default, enforces CPU limits with CFS quotas
	// (cpuCFS); false gives containers and sandboxes neither a quota nor
	// a period in their CRI resources, and pod cgroups an unlimited quota
	// (-1), as upstream's.
	CPUCFSQuota *bool
	// CPUCFSQuotaPeriod is cpuCFSQuotaPeriod (--cpu-cfs-quota-period), the
	// CFS period the quotas are over; 0 is upstream's default, 100 ms.
	// Another needs the CustomCPUCFSQuotaPeriod feature gate and must then
	// be between 1 ms and 1 s: New refuses it otherwise, with upstream's
	// messages (CheckCFSQuotaPeriod).
	CPUCFSQuotaPeriod time.Duration
	// PodPidsLimit is KubeletConfiguration's podPidsLimit (--pod-max-pids):
	// the most processes each pod's cgroup may hold (pids.max), written
	// when the kubelet makes it on a node whose cgroups it manages
	// (podCgroupValues); 0 or less (upstream's default, -1): no limit of
	// the pod's own, the node's (PIDCapacity, on kubepods) holding.
	PodPidsLimit int64
	// PIDCapacity is the node's process capacity, upstream's internal
	// "pid" capacity: the least of /proc/sys/kernel/pid_max and
	// threads-max (ReadPIDCapacity). On a node whose cgroups the kubelet
	// manages it is kubepods's pids.max less the system and kube
	// reservations' pid with "pods" enforced (kubepodsResources), read at
	// start when 0; unused elsewhere.
	PIDCapacity int64
	// SystemReserved and KubeReserved are KubeletConfiguration's
	// systemReserved and kubeReserved (--system-reserved,
	// --kube-reserved; ParseReserved reads the flags): resources set
	// aside for the system's daemons and Kubernetes', of cpu, memory,
	// ephemeral-storage and pid only, none below zero. Both come off the
	// node's allocatable (with the hard eviction thresholds; pid, which
	// the Node does not report, only off kubepods's pids.max), and off
	// kubepods's limits with "pods" enforced; New refuses them, with
	// upstream's messages, where the reservations and thresholds come to
	// more than a resource's capacity (allocatable.go). Nil: none.
	SystemReserved, KubeReserved v1.ResourceList
	// EnforceNodeAllocatable is enforceNodeAllocatable
	// (--enforce-node-allocatable): which cgroups the reservations are
	// enforced on. Nil is upstream's default, "pods" (kubepods gets the
	// allocatable; without it the capacity); "system-reserved" and
	// "kube-reserved" (or their "-compressible" forms, CPU shares only)
	// give SystemReservedCgroup and KubeReservedCgroup
	// (--system-reserved-cgroup, --kube-reserved-cgroup: cgroupfs names,
	// "/system.slice", not under CgroupRoot), which must exist, their
	// reservation as limits at start; "none" (alone) or empty: nothing.
	// New refuses what upstream's validation does, with its messages
	// (checkEnforceNodeAllocatable).
	EnforceNodeAllocatable                   []string
	SystemReservedCgroup, KubeReservedCgroup string
	// enforce is what setDefaults read from EnforceNodeAllocatable.
	enforce nodeAllocatableEnforcement
	// CustomCPUCFSQuotaPeriod is the kubelet's feature gate of that name
	// (alpha, off by default, as upstream's): a CPUCFSQuotaPeriod other
	// than 100 ms is allowed.
	CustomCPUCFSQuotaPeriod bool
	// AllowedUnsafeSysctls is allowedUnsafeSysctls
	// (--allowed-unsafe-sysctls): the sysctls and sysctl patterns (a
	// prefix ending in '*', "net.core.*") pods may set in
	// spec.securityContext.sysctls besides the safe ones (SafeSysctls of
	// KernelRelease). New refuses one that is no sysctl pattern or not
	// known to be namespaced, with upstream's messages
	// (newSysctlAllowlist). Nil: none, upstream's default.
	AllowedUnsafeSysctls []string
	// KernelRelease is the node's kernel release (uname -r), of which
	// sysctls are safe (SafeSysctls); "" is the host's, read from
	// /proc/sys/kernel/osrelease at start as upstream's kubelet reads it.
	KernelRelease string
	// sysctls is what setDefaults read from AllowedUnsafeSysctls and
	// KernelRelease: what the sysctl admission allows (sysctl.go).
	sysctls *sysctlAllowlist
	// oomGroupKill is what setDefaults decided from SingleProcessOOMKill
	// and CgroupDir (oomGroupKill).
	oomGroupKill bool
	// cfs is what setDefaults decided from CPUCFSQuota and
	// CPUCFSQuotaPeriod.
	cfs cpuCFS
	// swap is how the node's containers may swap, which setDefaults
	// decided from CgroupDir's swap control (detectSwapControl;
	// swapUncontrolled without CgroupDir), MemorySwapBehavior and
	// SwapCapacity: every container's swap is limited with it
	// (containerSwap).
	swap nodeSwap

	// SyncFrequency is the period of the full resync of every pod (20 s).
	SyncFrequency time.Duration
	// SyncErrorBackOff is how long a pod worker waits before syncing a pod
	// again after its sync failed (10 s, upstream's pod workers'
	// backOffPeriod), plus up to half as much again at random; a pod
	// update, a container state change or an eviction still syncs it at
	// once, the full resync does not (syncRetryDelay). A sync that failed
	// setting up the pod's volumes waits the volume back-off instead.
	SyncErrorBackOff time.Duration
	// NodeStatusUpdateFrequency is how often node status is computed and
	// posted if it changed (10 s); NodeStatusReportFrequency is how often it
	// is posted even if unchanged (5 min).
	NodeStatusUpdateFrequency, NodeStatusReportFrequency time.Duration
	// LeaseDuration (40 s) and NodeLeaseRenewInterval (10 s) of the node's
	// Lease in kube-node-lease.
	LeaseDuration, NodeLeaseRenewInterval time.Duration
	// RelistPeriod is how often the runtime is listed to notice container
	// state changes (1 s, upstream's PLEG relist period).
	RelistPeriod time.Duration
	// Backoff is the CrashLoopBackOff schedule (10 s doubling to 5 min).
	Backoff podsync.BackoffConfig
	// ImagePullBackoff is the image pull back-off's schedule, per pod and
	// image (10 s doubling to 5 min, upstream's imageBackOffPeriod and
	// MaxImageBackOff; podsync.DecideImagePull).
	ImagePullBackoff podsync.BackoffConfig
	// Workers is how many goroutines may sync pods at once (4); they run
	// only while pods wait to be synced (workers.go).
	Workers int
	// RootDir holds pod directories and their volumes
	// (<RootDir>/pods/<uid>/volumes/<plugin>/<name>); default
	// /var/lib/kubelet. Only pods with volumes touch it.
	RootDir string
	// ClusterDNS are the cluster DNS servers' IPs (--cluster-dns): the
	// nameservers of ClusterFirst pods; none (upstream's default) makes
	// such pods fall back to the Default policy with the MissingClusterDNS
	// warning. One not an IP is skipped with a log line, as upstream's.
	// ClusterDomain (--cluster-domain, default none) is the search path's
	// base (<ns>.svc.<domain>, svc.<domain>, <domain>) and that of pod
	// hostnames with a subdomain (in /etc/hosts, and the sandbox's with
	// setHostnameAsFQDN, on every node). ResolverConfig (--resolv-conf) is the
	// node's resolver file: nil is upstream's default,
	// DefaultResolverConfig; "" none (loopback nameservers, the search path
	// "."). The DNS configuration of CRI nodes' sandboxes only, and their
	// start-up CheckLimitsForResolvConf (dns.go).
	ClusterDNS     []string
	ClusterDomain  string
	ResolverConfig *string
	// clusterDNS are ClusterDNS's valid IPs, in canonical form.
	clusterDNS []string
	// SeccompDefault is KubeletConfiguration's seccompDefault
	// (--seccomp-default): a container whose pod and container set no
	// seccompProfile runs under the runtime's default profile
	// (RuntimeDefault) instead of Unconfined, as upstream's
	// getSeccompProfile. Default false.
	SeccompDefault bool
	// PodLogsDir is where the runtime writes container logs
	// (/var/log/pods/<namespace>_<name>_<uid>/<container>/<n>.log).
	PodLogsDir string
	// PullRecordsInMemory keeps the image pull records in memory only,
	// not under <RootDir>/image_manager (openPullRecords): for simulated
	// nodes whose images live in the process's memory and share one
	// RootDir (`kubeproof up`'s), so that each node has records of its
	// own, as each real kubelet has in its own root directory.
	PullRecordsInMemory bool
	// StateDir, when set, is where the kubelet keeps the allocations of
	// its resized pods (allocated_pods_state, resizestate.go) in place of
	// RootDir: for simulated nodes (`kubeproof up`'s), whose shared
	// RootDir is emptied at every start while their pods, kept by the API
	// server, outlive the process. One directory per node.
	StateDir string
	// ExternalPodSource: the kubelet starts no pod watch of its own; a
	// shared source (PodDispatcher) calls HandlePod, HandlePodDeleted and
	// MarkSourceSynced instead.
	ExternalPodSource bool
	// ServiceReadClient, when set, is the client of the kubelet's watch of
	// services (for the service environment variables) instead of its
	// own: kubelets of one process given the same client share one watch,
	// as they share one pod source. Services are read cluster-wide by
	// every kubelet (nothing node-specific), so the data is the same.
	ServiceReadClient kubernetes.Interface
	// KubeletVersion is reported in node status.
	KubeletVersion string

	// Recorder records the kubelet's events; nil: Run starts the
	// kubelet's own broadcaster writing core/v1 Events through its client
	// (as upstream's kubelet does). Kubelets sharing a process may share
	// one recorder.
	Recorder record.EventRecorder

	// PodTrace, if set, is told when a pod reaches each stage of its start
	// (TraceHandedOver, TraceSyncStart, TraceVolumesReady,
	// TraceStatusWriteStart, TraceStatusWritten): where a slow
	// pod's time went. Nil costs nothing.
	PodTrace PodTraceFunc

	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Defaults for Config.
const (
	DefaultSyncFrequency             = 20 * time.Second
	DefaultSyncErrorBackOff          = 10 * time.Second
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultNodeStatusReportFrequency = 5 * time.Minute
	DefaultLeaseDuration             = 40 * time.Second
	DefaultNodeLeaseRenewInterval    = 10 * time.Second
	DefaultRelistPeriod              = time.Second
	DefaultMaxPods                   = 110
	DefaultWorkers                   = 4
	DefaultKubeletVersion            = kubeversion.Default
	// KubeletPort is reported in status.daemonEndpoints.
	KubeletPort = 10250
)

func (c *Config) setDefaults() error {
	if c.NodeName == "" {
		return fmt.Errorf("kubelet config: node name is required")
	}
	if c.NodeIP == "" {
		c.NodeIP = "127.0.0.1"
	}
	if c.CPU.IsZero() {
		c.CPU = resource.MustParse("4")
	}
	if c.Memory.IsZero() {
		c.Memory = resource.MustParse("32Gi")
	}
	if c.EphemeralStorage.IsZero() {
		c.EphemeralStorage = resource.MustParse("100Gi")
	}
	if c.Port == 0 {
		c.Port = KubeletPort
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	hps, err := checkHugePages(c.HugePages)
	if err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	c.HugePages = hps
	if c.ContainerGC != nil {
		if err := c.ContainerGC.Validate(); err != nil {
			return err
		}
	}
	unified := false
	if c.CgroupDir != "" {
		if unified, err = CgroupUnified(c.CgroupDir); err != nil {
			return fmt.Errorf("kubelet config: %w", err)
		}
	}
	if c.oomGroupKill, err = oomGroupKill(unified, c.SingleProcessOOMKill); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	if c.ImagePullCredentialsVerificationPolicy == "" {
		c.ImagePullCredentialsVerificationPolicy = pullrecords.DefaultPolicy
	}
	if err := pullrecords.Validate(c.ImagePullCredentialsVerificationPolicy, c.PreloadedImagesVerificationAllowlist); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	if c.CgroupDir != "" && c.PIDCapacity == 0 {
		c.PIDCapacity = ReadPIDCapacity(os.DirFS(procSysKernel))
	}
	if err := checkReserved(c.KubeReserved); err != nil {
		return fmt.Errorf("kubelet config: --kube-reserved value failed to parse: %w", err)
	}
	if err := checkReserved(c.SystemReserved); err != nil {
		return fmt.Errorf("kubelet config: --system-reserved value failed to parse: %w", err)
	}
	enforce := c.EnforceNodeAllocatable
	if enforce == nil {
		enforce = []string{EnforcePods}
	}
	if c.enforce, err = checkEnforceNodeAllocatable(enforce, c.SystemReservedCgroup, c.KubeReservedCgroup); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	capacity := c.capacity()
	if err := validateNodeAllocatable(capacity, c.allocatableReservation(capacity)); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	if c.cfs, err = checkCFSQuota(c.CPUCFSQuota, c.CPUCFSQuotaPeriod, c.CustomCPUCFSQuotaPeriod); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	if err := checkSwapBehavior(c.MemorySwapBehavior, unified); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	if c.SwapCapacity.Sign() < 0 {
		return fmt.Errorf("kubelet config: swap capacity %s must not be negative", c.SwapCapacity.String())
	}
	if err := checkFailSwapOn(c.FailSwapOn == nil || *c.FailSwapOn, c.SwapCapacity.Sign() > 0); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	c.swap = nodeSwap{limited: c.MemorySwapBehavior == LimitedSwap, capacity: c.SwapCapacity.Value()}
	var swapErr error
	if c.CgroupDir != "" {
		c.swap.control, swapErr = detectSwapControl(c.CgroupDir, unified, procSelfCgroup)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.SyncFrequency, DefaultSyncFrequency)
	def(&c.SyncErrorBackOff, DefaultSyncErrorBackOff)
	def(&c.NodeStatusUpdateFrequency, DefaultNodeStatusUpdateFrequency)
	def(&c.NodeStatusReportFrequency, DefaultNodeStatusReportFrequency)
	def(&c.LeaseDuration, DefaultLeaseDuration)
	def(&c.NodeLeaseRenewInterval, DefaultNodeLeaseRenewInterval)
	def(&c.RelistPeriod, DefaultRelistPeriod)
	if c.Backoff.Base <= 0 {
		c.Backoff.Base = podsync.DefaultBackoff.Base
	}
	if c.Backoff.Max <= 0 {
		c.Backoff.Max = podsync.DefaultBackoff.Max
	}
	if c.ImagePullBackoff.Base <= 0 {
		c.ImagePullBackoff.Base = podsync.DefaultImagePullBackoff.Base
	}
	if c.ImagePullBackoff.Max <= 0 {
		c.ImagePullBackoff.Max = podsync.DefaultImagePullBackoff.Max
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.RootDir == "" {
		c.RootDir = "/var/lib/kubelet"
	}
	if c.PodLogsDir == "" {
		c.PodLogsDir = "/var/log/pods"
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = DefaultKubeletVersion
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.KernelRelease == "" {
		c.KernelRelease = hostKernelRelease()
	}
	safe, dropped := SafeSysctls(c.KernelRelease)
	if len(dropped) > 0 {
		c.Logger.Debug("kernel version is too old, dropping sysctls from the safe sysctl list", "kernelVersion", c.KernelRelease, "sysctls", dropped)
	}
	// The safe sysctls may always be named as unsafe ones too: the two
	// lists are one allowlist, as upstream's NewMainKubelet makes it.
	if c.sysctls, err = newSysctlAllowlist(append(safe, c.AllowedUnsafeSysctls...)); err != nil {
		return fmt.Errorf("failed to create kubelet: %w", err)
	}
	c.clusterDNS = nil
	for _, d := range c.ClusterDNS {
		if ip := netutils.ParseIPSloppy(d); ip != nil {
			c.clusterDNS = append(c.clusterDNS, ip.String())
		} else {
			c.Logger.Info("Invalid clusterDNS IP", "IP", d)
		}
	}
	if swapErr != nil {
		// Upstream's kubelet logs this at verbosity 5 and goes on.
		c.Logger.Debug("Failed to detect the availability of the swap controller, assuming not available", "err", swapErr)
	}
	return nil
}

// defaultEviction is the eviction configuration of no flags, parsed once.
var defaultEviction = sync.OnceValues(func() (eviction.Config, error) { return eviction.ParseConfig(eviction.Flags{}) })

// evictionConfig is Eviction, or kubelet's defaults when it is nil, with
// "pods" enforced an allocatableMemory.available threshold for each hard
// memory.available one (eviction.AllocatableThresholds), as upstream's
// ParseThresholdConfig given --enforce-node-allocatable.
func (c *Config) evictionConfig() (eviction.Config, error) {
	ecfg, err := defaultEviction()
	if c.Eviction != nil {
		ecfg, err = *c.Eviction, nil
	}
	if err == nil && c.enforce.pods {
		ecfg.Thresholds = eviction.AllocatableThresholds(ecfg.Thresholds)
	}
	return ecfg, err
}

// allocatable is the Node's status.allocatable: capacity less the system
// and kube reservations and the hard eviction thresholds, memory less the
// huge pages' capacity too, never below zero (nodeAllocatable).
func (c *Config) allocatable() v1.ResourceList {
	capacity := c.capacity()
	return nodeAllocatable(capacity, c.allocatableReservation(capacity))
}

// allocatableReservation is what a node of capacity keeps back from its
// allocatable (allocatableReservation): the reservations and what the
// hard eviction thresholds keep back.
func (c *Config) allocatableReservation(capacity v1.ResourceList) v1.ResourceList {
	var evict v1.ResourceList
	if ecfg, err := c.evictionConfig(); err == nil {
		evict = ecfg.HardEvictionReservation(capacity)
	}
	return allocatableReservation(capacity, c.SystemReserved, c.KubeReserved, evict)
}

// kubepodsResources are the resources kubepods is limited to
// (nodeAllocatableCgroupConfig) and its pids.max (0: none), as upstream's
// enforceNodeAllocatableCgroups: the internal capacity (the capacity and
// the process capacity, pid, when known), with "pods" enforced less the
// system and kube reservations (allocatableAbsolute).
func (c *Config) kubepodsResources() (v1.ResourceList, int64) {
	internal := c.capacity()
	if c.PIDCapacity > 0 {
		internal[ResourcePID] = *resource.NewQuantity(c.PIDCapacity, resource.DecimalSI)
	}
	if c.enforce.pods {
		internal = allocatableAbsolute(internal, c.SystemReserved, c.KubeReserved)
	}
	pids := internal[ResourcePID]
	return internal, pids.Value()
}

// capacity is the node's capacity as a ResourceList: cpu, memory,
// ephemeral-storage, pods and, as upstream's CapacityFromMachineInfo,
// hugepages-<size> of pages × size bytes for each huge page size.
func (c *Config) capacity() v1.ResourceList {
	out := v1.ResourceList{
		v1.ResourceCPU:              c.CPU,
		v1.ResourceMemory:           c.Memory,
		v1.ResourceEphemeralStorage: c.EphemeralStorage,
		v1.ResourcePods:             *resource.NewQuantity(c.MaxPods, resource.DecimalSI),
	}
	for _, h := range c.HugePages {
		out[h.ResourceName()] = *resource.NewQuantity(h.Pages*h.PageSize, resource.BinarySI)
	}
	return out
}

// cgroupParams are the node's parts of its containers' and sandboxes'
// cgroup values.
func (c *Config) cgroupParams() cgroupParams {
	return cgroupParams{nodeMemory: c.Memory.Value(), hugePages: c.HugePages, oomGroup: c.oomGroupKill, swap: c.swap, cfs: c.cfs}
}
