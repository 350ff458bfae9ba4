package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
// failure to look is an error.
func CgroupUnified(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "cgroup.controllers"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("detecting the cgroup mode of %s: %w", dir, err)
	}
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
// the kubelet detects once at start (detectSwapControl) and uses to keep
// every container from swapping (noSwap).
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

// noSwap keeps a container from swapping beyond its memory limit, as
// upstream's kubelet does for every container (init, app and ephemeral;
// not sandboxes) under its default memorySwap.swapBehavior, NoSwap
// (configureContainerSwapResources, ConfigureNoSwap; the NodeSwap gate is
// GA and LimitedSwap, which is not modelled, is refused on cgroup v1 and
// falls back to NoSwap for critical, BestEffort, Guaranteed and
// memory-unlimited containers anyway). r holds the container's other
// cgroup values (cgroupResources): on cgroup v1 with memsw, memory plus
// swap limited to the memory limit (no limit stays none: 0 is unset); on
// cgroup v2, Unified memory.swap.max=0 whatever the memory limit and
// singleProcessOOMKill. No swap controller: r is left alone.
func noSwap(r *runtimeapi.LinuxContainerResources, sc swapControl) {
	switch sc {
	case swapMemsw:
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
	case swapMax:
		if r.Unified == nil {
			r.Unified = make(map[string]string, 1)
		}
		r.Unified["memory.swap.max"] = "0"
	}
}
