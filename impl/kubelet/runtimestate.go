package kubelet

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/security"
)

// sandboxIPs are a sandbox's primary IP and its others (a dual-stack
// sandbox's other family's) as the CRI reports them; none without a
// network status.
func sandboxIPs(st *runtimeapi.PodSandboxStatus) (primary string, more []string) {
	for _, ip := range st.GetNetwork().GetAdditionalIps() {
		more = append(more, ip.GetIp())
	}
	return st.GetNetwork().GetIp(), more
}

// podRuntimeState asks the runtime for everything of one pod, matched by
// the io.kubernetes.pod.uid label: through the CRI calls, or directly from
// a runtime that can say (runtime.PodStateReader, the simulated one).
func (k *Kubelet) podRuntimeState(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	if r, ok := k.rt.(runtime.PodStateReader); ok {
		ps, err := r.PodState(ctx, string(uid))
		if err != nil {
			return nil, fmt.Errorf("reading the runtime state of pod %s: %w", uid, err)
		}
		sortNewestFirst(ps)
		return ps, nil
	}
	sel := map[string]string{runtime.LabelPodUID: string(uid)}
	sandboxes, err := k.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes of pod %s: %w", uid, err)
	}
	ps := &podstate.Pod{UID: uid}
	for _, s := range sandboxes {
		sb := podstate.Sandbox{ID: s.Id, Ready: s.State == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.CreatedAt)}
		if s.Metadata != nil {
			sb.Attempt = s.Metadata.Attempt
		}
		if sb.Ready {
			st, err := k.rt.PodSandboxStatus(ctx, s.Id)
			if err != nil {
				return nil, fmt.Errorf("status of sandbox %s: %w", s.Id, err)
			}
			sb.IP, sb.AdditionalIPs = sandboxIPs(st)
		}
		ps.Sandboxes = append(ps.Sandboxes, sb)
	}
	containers, err := k.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing containers of pod %s: %w", uid, err)
	}
	for _, c := range containers {
		st, err := k.rt.ContainerStatus(ctx, c.Id)
		if err != nil {
			return nil, fmt.Errorf("status of container %s: %w", c.Id, err)
		}
		pc := podstate.Container{
			ID: c.Id, Name: c.Labels[runtime.LabelContainerName], Init: c.Labels[runtime.LabelContainerType] == "init", Ephemeral: c.Labels[runtime.LabelContainerType] == runtime.ContainerTypeEphemeral,
			SandboxID: c.PodSandboxId, State: podstate.FromCRI(st.State), ExitCode: st.ExitCode,
			Reason: st.Reason, Message: st.Message, ImageRef: st.ImageRef,
			CreatedAt: podstate.CRITime(st.CreatedAt), StartedAt: podstate.CRITime(st.StartedAt), FinishedAt: podstate.CRITime(st.FinishedAt),
		}
		if st.Metadata != nil {
			pc.Attempt = st.Metadata.Attempt
		}
		if st.Image != nil {
			pc.Image = st.Image.Image
		}
		pc.Resources = st.GetResources().GetLinux()
		ps.Containers = append(ps.Containers, pc)
	}
	sortNewestFirst(ps)
	return ps, nil
}

// sortNewestFirst orders a pod's sandboxes and containers newest first,
// keeping the runtime's order among equals; runtimes with coarse clocks
// tie on CreatedAt, so the attempt number breaks ties.
func sortNewestFirst(ps *podstate.Pod) {
	slices.SortStableFunc(ps.Sandboxes, func(a, b podstate.Sandbox) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.Attempt, a.Attempt)
	})
	slices.SortStableFunc(ps.Containers, func(a, b podstate.Container) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.Attempt, a.Attempt)
	})
}

// podLabels are the labels tying a sandbox to its pod.
func podLabels(pod *v1.Pod) map[string]string {
	l := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[runtime.LabelPodName] = pod.Name
	l[runtime.LabelPodNamespace] = pod.Namespace
	l[runtime.LabelPodUID] = string(pod.UID)
	return l
}

// sandboxConfig is the CRI sandbox config of a pod, on a node of cgroup
// params p (sandboxResources), its parent the pod's cgroup among the QoS
// classes' cgroups q: its pure part. Its DNS configuration and hostname
// are configureSandbox's, which depend on the node's settings and may
// fail.
func sandboxConfig(pod *v1.Pod, attempt uint32, podLogsDir string, p cgroupParams, q qosCgroups) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		LogDirectory: filepath.Join(podLogsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		Labels:       podLabels(pod),
		Annotations:  pod.Annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: q.podCgroup(pod)},
	}
	cfg.Linux.SecurityContext, cfg.Linux.Sysctls = security.Sandbox(pod)
	cfg.Linux.Resources, cfg.Linux.Overhead = sandboxResources(pod, p)
	// spec.dnsConfig as it is: a simulated node's; syncPod gives a CRI
	// node's sandbox its DNS policy's instead (setPodDNS, dns.go).
	if pod.Spec.DNSConfig != nil {
		cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: pod.Spec.DNSConfig.Nameservers, Searches: pod.Spec.DNSConfig.Searches}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case v1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case v1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	return cfg
}

// configureSandbox completes cfg, pod's sandbox config (sandboxConfig),
// as upstream's generatePodSandboxConfig goes on: the DNS configuration
// (setPodDNS, which reads the node's resolver file and records its
// events), then the hostname (sandboxHostname); either failing fails it.
// Upstream's SyncPod builds the config so once to create the sandbox and
// once more for the containers it starts (startPod).
func (k *Kubelet) configureSandbox(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	if err := k.setPodDNS(pod, cfg); err != nil {
		return err
	}
	hostname, err := sandboxHostname(pod, k.cfg.ClusterDomain)
	if err != nil {
		return err
	}
	if !pod.Spec.HostNetwork {
		k.logHostnameCut(pod)
	}
	cfg.Hostname = hostname
	return nil
}

// logHostnameCut logs, as upstream's truncatePodHostnameIfNeeded, a pod's
// hostname longer than 63 characters at error level (klog ErrorS), naming
// the cut before its trailing '-' and '.' go. Upstream builds the hostname
// (GeneratePodHostNameAndDomain) for a sandbox config of a pod not on the
// host network (configureSandbox) and for every container it starts,
// whatever the pod (GenerateRunContainerOptions: startContainer); each
// logs the cut.
func (k *Kubelet) logHostnameCut(pod *v1.Pod) {
	if h := podUncutHostname(pod); len(h) > maxHostnameLen {
		k.log.Error("Hostname for pod was too long, truncated it", "podName", pod.Name, "hostnameMaxLen", maxHostnameLen, "truncatedHostname", h[:maxHostnameLen])
	}
}

// maxFQDNLen is the longest FQDN a pod's sandbox may be named by, as
// upstream's GetNodenameForKernel allows (the kernel's nodename field).
const maxFQDNLen = 64

// sandboxHostname is the hostname a pod's sandbox is given on a node of
// cluster domain clusterDomain, as upstream's generatePodSandboxConfig
// (GeneratePodHostNameAndDomain, then GetNodenameForKernel):
// podHostnameAndDomain's hostname, or with spec.setHostnameAsFQDN true
// and a domain (a subdomain) <hostname>.<domain>, which longer than 64
// characters is an error in upstream's words; none ("") for a
// host-network pod, which shares the node's UTS namespace with its network
// one (the runtime refuses a hostname there). The managed /etc/hosts
// names the pod by its hostname and domain apart whatever this is
// (etchosts.go). Pure.
func sandboxHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	if pod.Spec.HostNetwork {
		return "", nil
	}
	hostname, domain := podHostnameAndDomain(pod, clusterDomain)
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > maxFQDNLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxFQDNLen, len(fqdn))
	}
	return fqdn, nil
}

// containerConfig is the CRI container config of one container, created
// from image, on a node of cgroup params p (linuxResources).
func containerConfig(pod *v1.Pod, c *v1.Container, init bool, attempt uint32, image *runtimeapi.ImageSpec, env []EnvVar, p cgroupParams) *runtimeapi.ContainerConfig {
	typ := "app"
	if init {
		typ = "init"
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:      image,
		Command:    c.Command,
		Args:       c.Args,
		WorkingDir: c.WorkingDir,
		// What attach (kubectl attach -i / kubectl run -i) needs: the
		// runtime keeps the main process's stdin open, and with StdinOnce
		// closes it when the first attached client leaves.
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		Tty:       c.TTY,
		Labels: map[string]string{
			runtime.LabelPodName: pod.Name, runtime.LabelPodNamespace: pod.Namespace, runtime.LabelPodUID: string(pod.UID),
			runtime.LabelContainerName: c.Name, runtime.LabelContainerType: typ,
		},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": strconv.FormatUint(uint64(attempt), 10)},
		LogPath:     fmt.Sprintf("%s/%d.log", c.Name, attempt),
		Linux:       &runtimeapi.LinuxContainerConfig{Resources: linuxResources(pod, c, p)},
	}
	// The pod's grace periods, by which the container GC kills the
	// container without its pod (restoreKillSpecs), as upstream's
	// newContainerAnnotations.
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		cfg.Annotations[runtime.AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*g, 10)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		cfg.Annotations[runtime.AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	// What else a kill without the pod goes by (restoreKillSpecs): the
	// preStop hook, and the ports a named HTTP hook port resolves
	// against, as JSON; and the termination message path and policy, as
	// upstream writes them too.
	cfg.Annotations[runtime.AnnotationContainerTerminationMessagePath] = c.TerminationMessagePath
	cfg.Annotations[runtime.AnnotationContainerTerminationMessagePolicy] = string(c.TerminationMessagePolicy)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			cfg.Annotations[runtime.AnnotationContainerPreStopHandler] = string(b)
		}
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			cfg.Annotations[runtime.AnnotationContainerPorts] = string(b)
		}
	}
	for _, e := range env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	return cfg
}

// CFS and shares constants of upstream's kuberuntime (cgroup v1 units; the
// runtime converts them for cgroup v2).
const (
	cpuPeriod      = 100000 // 100 ms, in µs: the default CFS period (cpuCFS)
	minCPUQuota    = 1000   // 1 ms
	minCPUShares   = 2
	sharesPerCPU   = 1024
	milliCPUPerCPU = 1000
)

// maxCPUShares is the kernel's largest cpu.shares (cgroup v1 units), as
// upstream's kubelet caps them.
const maxCPUShares = 262144

// sandboxResources are what RunPodSandbox is told of a pod's resources, as
// upstream's kubelet (applySandboxResources): the pod's aggregated requests
// and limits without its overhead, and its overhead on its own, taken as
// requests equal to limits (an empty value for a pod without one). Both
// are cgroup values (cgroupResources, with p's oomGroup and cfs; with
// oomGroup, memory.oom.group on in both, the overhead's only for a pod
// with one, as upstream's). The two share one allocation.
func sandboxResources(pod *v1.Pod, p cgroupParams) (resources, overhead *runtimeapi.LinuxContainerResources) {
	pair := new([2]runtimeapi.LinuxContainerResources)
	resources, overhead = &pair[0], &pair[1]
	cpuReq, hasCPUReq := podAmount(pod, v1.ResourceCPU, false)
	cpuLim, _ := podAmount(pod, v1.ResourceCPU, true)
	memLim, _ := podAmount(pod, v1.ResourceMemory, true)
	cgroupResources(resources, cpuReq, hasCPUReq, cpuLim, memLim, p.oomGroup, p.cfs)
	if pod.Spec.Overhead != nil {
		cpu, mem := pod.Spec.Overhead[v1.ResourceCPU], pod.Spec.Overhead[v1.ResourceMemory]
		cgroupResources(overhead, cpu.MilliValue(), true, cpu.MilliValue(), mem.Value(), p.oomGroup, p.cfs)
	}
	return resources, overhead
}

// cgroupResources sets r to the cgroup values of a CPU request and limit
// (millicores) and a memory limit (bytes), as upstream's kubelet
// (calculateLinuxResources): shares from the request, or from the limit
// when there is no request (hasCPUReq false), 2 for zero and at most
// maxCPUShares; where CFS quotas are enforced (cfs; upstream's
// cpuCFSQuota, its default), a quota from the limit (none for none, at
// least 1 ms) over cfs's period, which is set either way, and otherwise
// neither quota nor period; on a node that kills whole containers on OOM (oomGroup,
// Config.oomGroupKill: cgroup v2 without singleProcessOOMKill), the
// Unified memory.oom.group=1 (oomGroupUnified), as upstream's. Containers
// and sandboxes alike.
func cgroupResources(r *runtimeapi.LinuxContainerResources, cpuReqMilli int64, hasCPUReq bool, cpuLimMilli, memLimBytes int64, oomGroup bool, cfs cpuCFS) {
	r.CpuShares, r.CpuQuota, r.MemoryLimitInBytes = cgroupValues(cpuReqMilli, hasCPUReq, cpuLimMilli, memLimBytes, cfs)
	if !cfs.off {
		r.CpuPeriod = cfs.periodUS()
	}
	if oomGroup {
		r.Unified = oomGroupUnified()
	}
}

// cgroupValues are the CPU shares, CFS quota (0: none) and memory limit
// (bytes, 0: none) cgroupResources sets for those amounts, without
// building the CRI message (an in-place resize compares them with the
// runtime's on every sync of a running pod).
func cgroupValues(cpuReqMilli int64, hasCPUReq bool, cpuLimMilli, memLimBytes int64, cfs cpuCFS) (shares, quota, memory int64) {
	if !hasCPUReq {
		cpuReqMilli = cpuLimMilli
	}
	shares = minCPUShares
	if cpuReqMilli != 0 {
		shares = min(max(cpuReqMilli*sharesPerCPU/milliCPUPerCPU, minCPUShares), maxCPUShares)
	}
	if !cfs.off {
		quota = milliCPUToQuota(cpuLimMilli, cfs.periodUS())
	}
	return shares, quota, memLimBytes
}

// podAmount is a pod's request (or limit) of one resource without its
// overhead, as upstream's PodRequests and PodLimits give it: a pod-level
// value (spec.resources, PodLevelResources being on by default), or else
// its containers' (podsync.ContainersAmount). CPU is in millicores,
// anything else in units; named is whether any container or the pod
// names the resource.
func podAmount(pod *v1.Pod, name v1.ResourceName, limits bool) (amount int64, named bool) {
	milli := name == v1.ResourceCPU
	if r := pod.Spec.Resources; r != nil {
		l := r.Requests
		if limits {
			l = r.Limits
		}
		if q, ok := l[name]; ok {
			if milli {
				return q.MilliValue(), true
			}
			return q.Value(), true
		}
	}
	return podsync.ContainersAmount(pod, name, limits, milli)
}

// linuxResources are the cgroup values of container c of pod on a node of
// nodeMemory bytes of memory capacity and the huge page sizes hugePages,
// as upstream's
// generateLinuxContainerResources: its CPU request (if any), CPU limit and
// memory limit through cgroupResources, the pod's CPU or memory limit
// standing in for a limit the container lacks (or sets to zero) when the
// pod has pod-level resources (PodLevelResources being on by default); its
// oom_score_adj (containerOOMScoreAdj) and its hugepage limits, one per
// node page size (hugepageLimits); with oomGroup, memory.oom.group on
// (cgroupResources); where the node's cgroups limit swap, its swap limit
// (containerSwap: memory.swap.max of its LimitedSwap share on cgroup v2,
// otherwise no swap beyond the memory limit, noSwap). The node's are p's
// (nodeMemory, hugePages, oomGroup, swap and cfs).
func linuxResources(pod *v1.Pod, c *v1.Container, p cgroupParams) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{
		OomScoreAdj:    containerOOMScoreAdj(pod, c, p.nodeMemory),
		HugepageLimits: hugepageLimits(p.hugePages, podLevelLimits(pod), c.Resources.Limits),
	}
	cpuReq, hasCPUReq, cpuLim, memLim := containerAmounts(pod, c)
	cgroupResources(r, cpuReq, hasCPUReq, cpuLim, memLim, p.oomGroup, p.cfs)
	containerSwap(r, pod, c, p.nodeMemory, p.swap)
	return r
}

// containerAmounts are the CPU request (millicores; hasCPUReq: named),
// CPU limit (millicores) and memory limit (bytes) linuxResources gives
// container c of pod cgroup values for: the pod's limits standing in for
// those the container lacks when the pod has pod-level resources.
func containerAmounts(pod *v1.Pod, c *v1.Container) (cpuReqMilli int64, hasCPUReq bool, cpuLimMilli, memLimBytes int64) {
	cpuReq, hasCPUReq := c.Resources.Requests[v1.ResourceCPU]
	cpuLim, memLim := c.Resources.Limits[v1.ResourceCPU], c.Resources.Limits[v1.ResourceMemory]
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if cpuLim.IsZero() {
			cpuLim = pod.Spec.Resources.Limits[v1.ResourceCPU]
		}
		if memLim.IsZero() {
			memLim = pod.Spec.Resources.Limits[v1.ResourceMemory]
		}
	}
	return cpuReq.MilliValue(), hasCPUReq, cpuLim.MilliValue(), memLim.Value()
}
