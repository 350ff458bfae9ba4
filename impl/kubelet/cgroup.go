package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
