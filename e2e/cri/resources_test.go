package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResourceLimitsBecomeCgroupLimits: a container's memory and CPU
// limits are the limits of its cgroup, read back from the cgroup files on
// the host (cgroup v1: memory.limit_in_bytes, cpu.cfs_quota_us over
// cpu.cfs_period_us; v2: memory.max, cpu.max), and, as upstream's kubelet
// keeps containers from swapping by default (NoSwap), where the host
// limits swap its memory plus swap is its memory limit (v1:
// memory.memsw.limit_in_bytes) or its swap is 0 (v2: memory.swap.max).
// containerd's CRI plugin gives a container with a memory limit the same
// swap limit when the kubelet sets none (containerd#7838), so this checks
// that runc accepts the kubelet's limits, not that the kubelet sent them
// (impl/kubelet's TestNoSwapReachesRuntime does).
func TestResourceLimitsBecomeCgroupLimits(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("limited", "exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	createPod(t, ns, p)
	waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	procCgroup := mustKubectl(t, "exec", "-n", ns, p.Name, "--", "cat", "/proc/self/cgroup")
	memory, cpuQuota, cpuPeriod, err := cgroupLimits(procCgroup)
	if err != nil {
		t.Fatal(err)
	}
	if memory != 64<<20 || cpuPeriod == 0 || cpuQuota*1000/cpuPeriod != 250 {
		t.Fatalf("cgroup limits: memory %d (want %d), cpu quota %d per period %d (want 250m)", memory, 64<<20, cpuQuota, cpuPeriod)
	}
	swapFile, swap, err := cgroupSwapLimit(procCgroup)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Logf("no swap control on this host (%v): swap not checked", err)
	case err != nil:
		t.Fatal(err)
	case filepath.Base(swapFile) == "memory.memsw.limit_in_bytes" && swap != "67108864",
		filepath.Base(swapFile) == "memory.swap.max" && swap != "0":
		t.Fatalf("%s = %s; want no swap beyond the memory limit (%d bytes of memory plus swap on cgroup v1, 0 swap on v2)", swapFile, swap, 64<<20)
	}
}

// cgroupSwapLimit reads the swap limit of the cgroup a process is in,
// given its /proc/<pid>/cgroup: cgroup v1's memory.memsw.limit_in_bytes
// (memory plus swap), v2's memory.swap.max; an fs.ErrNotExist error when
// the host has no swap control (the kubelet finds the same:
// memory.memsw.limit_in_bytes missing from the v1 root, memory.swap.max
// from the kubelet's v2 cgroup).
func cgroupSwapLimit(procCgroup string) (file, limit string, err error) {
	paths := cgroupPaths(procCgroup)
	if mem, ok := paths["memory"]; ok { // cgroup v1
		if _, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"); err != nil {
			return "", "", err
		}
		file = filepath.Join("/sys/fs/cgroup/memory", mem, "memory.memsw.limit_in_bytes")
	} else {
		self, err := os.ReadFile("/proc/self/cgroup") // the kubelet's cgroup: this process's or its child's
		if err != nil {
			return "", "", err
		}
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", cgroupPaths(string(self))[""], "memory.swap.max")); err != nil {
			return "", "", err
		}
		file = filepath.Join("/sys/fs/cgroup", paths[""], "memory.swap.max")
	}
	b, err := os.ReadFile(file)
	return file, strings.TrimSpace(string(b)), err
}

// cgroupPaths are the cgroup paths of a /proc/<pid>/cgroup by controller
// ("" for the v2 unified hierarchy).
func cgroupPaths(procCgroup string) map[string]string {
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	return paths
}

// cgroupLimits reads the memory limit and CPU quota and period of the
// cgroup a process is in, given its /proc/<pid>/cgroup.
func cgroupLimits(procCgroup string) (memory, quota, period int64, err error) {
	paths := cgroupPaths(procCgroup)
	read := func(file string) (string, error) {
		b, err := os.ReadFile(file)
		return strings.TrimSpace(string(b)), err
	}
	if mem, ok := paths["memory"]; ok { // cgroup v1
		s, err := read(filepath.Join("/sys/fs/cgroup/memory", mem, "memory.limit_in_bytes"))
		if err != nil {
			return 0, 0, 0, err
		}
		fmt.Sscan(s, &memory)
		cpuDir := filepath.Join("/sys/fs/cgroup/cpu", paths["cpu"])
		if _, err := os.Stat(cpuDir); err != nil {
			cpuDir = filepath.Join("/sys/fs/cgroup/cpu,cpuacct", paths["cpu"])
		}
		q, err := read(filepath.Join(cpuDir, "cpu.cfs_quota_us"))
		if err != nil {
			return 0, 0, 0, err
		}
		pe, err := read(filepath.Join(cpuDir, "cpu.cfs_period_us"))
		if err != nil {
			return 0, 0, 0, err
		}
		fmt.Sscan(q, &quota)
		fmt.Sscan(pe, &period)
		return memory, quota, period, nil
	}
	dir := filepath.Join("/sys/fs/cgroup", paths[""]) // cgroup v2
	s, err := read(filepath.Join(dir, "memory.max"))
	if err != nil {
		return 0, 0, 0, err
	}
	fmt.Sscan(s, &memory)
	c, err := read(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0, 0, 0, err
	}
	fmt.Sscan(c, &quota, &period)
	return memory, quota, period, nil
}
