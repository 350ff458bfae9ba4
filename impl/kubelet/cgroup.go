package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// SysFsCgroup is where Linux mounts the cgroup filesystem; a `kubeproof
// kubelet --runtime cri` detects the node's cgroup mode there
// (Config.CgroupDir).
const SysFsCgroup = "/sys/fs/cgroup"

// CgroupUnified reports whether the cgroup filesystem at dir is cgroup
// v2's unified hierarchy: its root holds cgroup.controllers, which a
// cgroup v1 or hybrid mount (a tmpfs of per-controller v1 hierarchies,
// with v2's under unified/) lacks. Upstream's kubelet asks the same of
// /sys/fs/cgroup (libcontainer's IsCgroup2UnifiedMode, by the mount's
// filesystem type). No such file, or no dir, is cgroup v1; any other
// failure to look is an error. It is eviction.CgroupUnified, which the
// eviction manager's HostProvider asks too.
func CgroupUnified(dir string) (bool, error) {
	return eviction.CgroupUnified(dir)
}

// oomGroupKill is whether the kubelet asks the runtime to kill a
// container's whole cgroup when the OOM killer picks one of its processes
// (memory.oom.group=1 in its CRI Unified resources, oomGroupUnified), as
// upstream's kubelet decides it from KubeletConfiguration's
// singleProcessOOMKill on a node of cgroup v2 (unified) or v1: on v2 unless
// singleProcessOOMKill is true (nil is false there); never on v1, where
// singleProcessOOMKill is always true and setting it to false is
// upstream's configuration error.
func oomGroupKill(unified bool, singleProcessOOMKill *bool) (bool, error) {
	if !unified {
		if singleProcessOOMKill != nil && !*singleProcessOOMKill {
			return false, errors.New("invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1")
		}
		return false, nil
	}
	return singleProcessOOMKill == nil || !*singleProcessOOMKill, nil
}

// oomGroupUnified is the CRI Unified resources (cgroup v2 files) of a
// container or sandbox of a node that kills whole containers on OOM
// (oomGroupKill): the kernel's memory.oom.group on, as upstream's
// calculateLinuxResources. A new map each time: the runtime may keep it.
func oomGroupUnified() map[string]string {
	return map[string]string{"memory.oom.group": "1"}
}

// swapControl is how a node's cgroups limit the swap of a container, which
// the kubelet detects once at start (detectSwapControl) and uses to limit
// every container's swap (containerSwap).
type swapControl uint8

const (
	// swapUncontrolled: no swap controller the kubelet knows of (upstream's
	// swapControllerAvailable false), or a simulated node (no
	// Config.CgroupDir): swap is left alone.
	swapUncontrolled swapControl = iota
	// swapMemsw: cgroup v1 whose memory controller limits memory plus swap
	// (memory.memsw.limit_in_bytes).
	swapMemsw
	// swapMax: cgroup v2 whose cgroups limit swap (memory.swap.max).
	swapMax
)

// procSelfCgroup lists the cgroups of the process reading it; the kubelet
// finds its own cgroup v2 cgroup there (detectSwapControl).
const procSelfCgroup = "/proc/self/cgroup"

// detectSwapControl is the swap control of the cgroup filesystem at dir,
// cgroup v2 (unified) or v1, as upstream's kubelet finds it
// (swapControllerAvailable): on v1, the root memory controller has
// memory.memsw.limit_in_bytes; on v2, the kubelet's own cgroup (the path
// of selfCgroup's unified line, "0::<path>", selfCgroup being
// procSelfCgroup but for tests) has memory.swap.max, which the root
// cgroup never has. Upstream assumes no controller when it cannot tell,
// and so does this: swapUncontrolled, with an error saying why when the
// reason is not simply a missing file (for a debug log).
func detectSwapControl(dir string, unified bool, selfCgroup string) (swapControl, error) {
	file, found := filepath.Join(dir, "memory", "memory.memsw.limit_in_bytes"), swapMemsw
	if unified {
		b, err := os.ReadFile(selfCgroup)
		if err != nil {
			return swapUncontrolled, fmt.Errorf("detecting the swap controller: finding the kubelet's cgroup: %w", err)
		}
		self, err := unifiedCgroupPath(string(b))
		if err != nil {
			return swapUncontrolled, fmt.Errorf("detecting the swap controller: parsing %s: %w", selfCgroup, err)
		}
		file, found = filepath.Join(dir, self, "memory.swap.max"), swapMax
	}
	switch _, err := os.Stat(file); {
	case err == nil:
		return found, nil
	case errors.Is(err, fs.ErrNotExist):
		return swapUncontrolled, nil
	default:
		return swapUncontrolled, fmt.Errorf("detecting the swap controller: %w", err)
	}
}

// unifiedCgroupPath is the cgroup v2 path in a /proc/<pid>/cgroup listing
// (lines "hierarchy-ID:controllers:path"), that of the line without
// controllers; "" when there is none, as upstream's lookup of
// ParseCgroupFile's result. A line without two colons makes the listing
// invalid, as there.
func unifiedCgroupPath(listing string) (string, error) {
	path := ""
	for line := range strings.Lines(listing) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		_, rest, ok := strings.Cut(line, ":")
		controllers, p, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			return "", fmt.Errorf("invalid cgroup entry %q: must contain at least two colons", line)
		}
		if controllers == "" {
			path = p
		}
	}
	return path, nil
}

// SwapBehavior is KubeletConfiguration's memorySwap.swapBehavior: how
// much swap the kubelet lets its containers use (Config.MemorySwapBehavior).
type SwapBehavior string

const (
	// NoSwap: no container swaps (noSwap); "" means the same, as upstream.
	NoSwap SwapBehavior = "NoSwap"
	// LimitedSwap: the containers of Burstable pods may swap in proportion
	// to their memory requests (containerSwapBehavior, limitedSwapBytes);
	// cgroup v2 only.
	LimitedSwap SwapBehavior = "LimitedSwap"
)

// checkSwapBehavior refuses what upstream's kubelet refuses of
// memorySwap.swapBehavior, with its messages (the NodeSwap gate being GA
// and locked on): a value other than "", NoSwap and LimitedSwap (its
// configuration validation), and LimitedSwap on a node of cgroup v1 (not
// unified), which its kubelet refuses at start.
func checkSwapBehavior(b SwapBehavior, unified bool) error {
	switch b {
	case "", NoSwap:
	case LimitedSwap:
		if !unified {
			return errors.New("swap feature is enabled and LimitedSwap but it is only supported with cgroupv2")
		}
	default:
		return fmt.Errorf("invalid configuration: memorySwap.swapBehavior %q must be one of: \"\", %q or %q", string(b), LimitedSwap, NoSwap)
	}
	return nil
}

// checkFailSwapOn refuses a node with swap on (swapOn) when failSwapOn is
// set, as upstream's kubelet refuses to start there, with its message.
func checkFailSwapOn(failSwapOn, swapOn bool) error {
	if failSwapOn && swapOn {
		return errors.New("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false")
	}
	return nil
}

// nodeSwap is what the kubelet knows at start of how its node's
// containers may swap (Config.swap): the node's swap control
// (detectSwapControl), whether memorySwap.swapBehavior is LimitedSwap
// (checkSwapBehavior having refused it on cgroup v1) and the node's swap
// capacity in bytes (Config.SwapCapacity). The zero value is a node
// without swap control: swap is left alone.
type nodeSwap struct {
	control  swapControl
	limited  bool
	capacity int64
}

// containerSwapBehavior is the swap behaviour of container c of pod on a
// node of swap ns, as upstream's GetContainerSwapBehavior: LimitedSwap
// only when the node is configured so and its cgroup v2 cgroups limit
// swap, for a container of a Burstable pod (its QoS class as upstream's
// GetPodQOS, pod-level resources included) that is not critical (static,
// mirror, or of priority system-cluster-critical or higher:
// eviction.IsCritical, upstream's IsCriticalPod) and whose own memory
// request and limit are not both unset (or zero) and differ (a container
// requesting memory equal to its limit is a Guaranteed container inside
// the pod); NoSwap for every other container.
func containerSwapBehavior(pod *v1.Pod, c *v1.Container, ns nodeSwap) SwapBehavior {
	if !ns.limited || ns.control != swapMax {
		return NoSwap
	}
	if eviction.IsCritical(pod) || podQOS(pod) != v1.PodQOSBurstable {
		return NoSwap
	}
	req, lim := c.Resources.Requests[v1.ResourceMemory], c.Resources.Limits[v1.ResourceMemory]
	if req.IsZero() && lim.IsZero() || req.Cmp(lim) == 0 {
		return NoSwap
	}
	return LimitedSwap
}

// limitedSwapBytes is the swap a LimitedSwap container may use, as
// upstream's calcSwapForBurstablePods (KEP-2400): its memory request's
// share of the node's memory capacity, of the node's swap capacity,
// computed in float64 and truncated toward zero as upstream's. A node of
// no memory, or a request larger than the node's memory, is an error
// (upstream's kubelet then disallows swap).
func limitedSwapBytes(request, nodeMemory, swapCapacity int64) (int64, error) {
	if nodeMemory <= 0 {
		return 0, errors.New("total node memory is 0")
	}
	if request > nodeMemory {
		return 0, fmt.Errorf("container request %d is larger than total node memory %d", request, nodeMemory)
	}
	return int64(float64(request) / float64(nodeMemory) * float64(swapCapacity)), nil
}

// containerSwap sets the swap limits of container c of pod, whose other
// cgroup values r holds (cgroupResources), on a node of nodeMemory bytes
// of memory and swap ns, as upstream's configureContainerSwapResources:
// nothing without a swap controller; a LimitedSwap container
// (containerSwapBehavior) gets Unified memory.swap.max of its share
// (limitedSwapBytes; NoSwap when that cannot be computed, as upstream's,
// which logs why); every other container NoSwap (noSwap).
func containerSwap(r *runtimeapi.LinuxContainerResources, pod *v1.Pod, c *v1.Container, nodeMemory int64, ns nodeSwap) {
	if ns.control == swapUncontrolled {
		return
	}
	if containerSwapBehavior(pod, c, ns) == LimitedSwap {
		req := c.Resources.Requests[v1.ResourceMemory]
		if limit, err := limitedSwapBytes(req.Value(), nodeMemory, ns.capacity); err == nil {
			swapMaxUnified(r, limit)
			return
		}
	}
	noSwap(r, ns.control)
}

// swapMaxUnified sets cgroup v2's memory.swap.max of r to limit bytes.
func swapMaxUnified(r *runtimeapi.LinuxContainerResources, limit int64) {
	if r.Unified == nil {
		r.Unified = make(map[string]string, 1)
	}
	r.Unified["memory.swap.max"] = strconv.FormatInt(limit, 10)
}

// noSwap keeps a container from swapping beyond its memory limit, as
// upstream's kubelet does for every container (init, app and ephemeral;
// not sandboxes) under its default memorySwap.swapBehavior, NoSwap, and
// under LimitedSwap for the containers containerSwapBehavior does not
// let swap (ConfigureNoSwap). r holds the container's other cgroup
// values (cgroupResources): on cgroup v1 with memsw, memory plus swap
// limited to the memory limit (no limit stays none: 0 is unset); on
// cgroup v2, Unified memory.swap.max=0 whatever the memory limit and
// singleProcessOOMKill. No swap controller: r is left alone.
func noSwap(r *runtimeapi.LinuxContainerResources, sc swapControl) {
	switch sc {
	case swapMemsw:
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
	case swapMax:
		swapMaxUnified(r, 0)
	}
}

// cpuCFS is how the kubelet enforces CPU limits with the kernel's CFS
// bandwidth control, as KubeletConfiguration's cpuCFSQuota and
// cpuCFSQuotaPeriod say (Config.CPUCFSQuota, CPUCFSQuotaPeriod;
// checkCFSQuota). The zero value is upstream's default: quotas over a
// 100 ms period.
type cpuCFS struct {
	off    bool  // cpuCFSQuota false: no CFS quota limits CPU
	period int64 // µs; 0: cpuPeriod (100 ms)
}

// periodUS is the CFS period in µs (cgroup v1's cpu.cfs_period_us).
func (c cpuCFS) periodUS() int64 {
	if c.period == 0 {
		return cpuPeriod
	}
	return c.period
}

// defaultCFSQuotaPeriod is cpuCFSQuotaPeriod's default.
const defaultCFSQuotaPeriod = cpuPeriod * time.Microsecond

// checkCFSQuota is the cpuCFS of cpuCFSQuota (nil: true) and
// cpuCFSQuotaPeriod (0: 100 ms) with the CustomCPUCFSQuotaPeriod feature
// gate on or off (custom), refusing a period as upstream's validation
// does (CheckCFSQuotaPeriod).
func checkCFSQuota(quota *bool, period time.Duration, custom bool) (cpuCFS, error) {
	if period == 0 {
		period = defaultCFSQuotaPeriod
	}
	if err := CheckCFSQuotaPeriod(period, custom); err != nil {
		return cpuCFS{}, err
	}
	return cpuCFS{off: quota != nil && !*quota, period: int64(period / time.Microsecond)}, nil
}

// CheckCFSQuotaPeriod refuses a cpuCFSQuotaPeriod as upstream's
// KubeletConfiguration validation does, with its messages: another than
// 100 ms without the CustomCPUCFSQuotaPeriod feature gate (custom), or
// with it one not between 1 ms and 1 s. The period is quoted as upstream
// prints its metav1.Duration ({200ms}).
func CheckCFSQuotaPeriod(period time.Duration, custom bool) error {
	if !custom && period != defaultCFSQuotaPeriod {
		return fmt.Errorf("invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {%v} requires feature gate CustomCPUCFSQuotaPeriod", period)
	}
	if custom && (period < time.Millisecond || period > time.Second) {
		return fmt.Errorf("invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {%v} must be between 1ms and 1sec, inclusive", period)
	}
	return nil
}

// procSysKernel holds the kernel's process limits (ReadPIDCapacity).
const procSysKernel = "/proc/sys/kernel"

// ReadPIDCapacity is the node's process capacity as upstream's kubelet
// reads it (pidlimit.Stats): the least of pid_max and threads-max of
// kernel (/proc/sys/kernel), either when the other cannot be read; 0
// when neither can.
func ReadPIDCapacity(kernel fs.FS) int64 {
	least := int64(-1)
	for _, name := range [...]string{"pid_max", "threads-max"} {
		b, err := fs.ReadFile(kernel, name)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (least < 0 || v < least) {
			least = v
		}
	}
	return max(least, 0)
}
