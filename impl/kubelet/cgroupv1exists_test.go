package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCgroupV1ExistsInEveryAllowlistedHierarchy: on cgroup v1 a cgroup
// exists, as upstream's cgroup manager Exists (cgroupV1impl.Validate)
// sees it, when it is in every mounted hierarchy of its allow-list (cpu,
// cpuacct, cpuset, memory, systemd, pids, and hugetlb when that is
// mounted); others (devices) do not count. create makes it in each of
// them (runc's cgroupfs manager makes it in every mounted hierarchy), so
// a cgroup missing from one, hugetlb included, is made again rather than
// taken for made. The cgroup root is validated the same way, with
// upstream's message. Before, only cpu and memory were looked at.
func TestCgroupV1ExistsInEveryAllowlistedHierarchy(t *testing.T) {
	const name = "/kubepods/burstable/podx"
	root := t.TempDir()
	for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "systemd", "pids", "hugetlb", "devices"} {
		if err := os.Mkdir(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := cgroupfs{root: root}
	if err := m.create(name, cgroupConfig{cpuShares: 102}); err != nil { // no hugetlb limits to write
		t.Fatal(err)
	}
	if !m.exists(name) {
		t.Fatal("not there after create")
	}
	for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "systemd", "pids", "hugetlb"} {
		if _, err := os.Stat(filepath.Join(root, h, name)); err != nil {
			t.Errorf("create did not make it in the %s hierarchy: %v", h, err)
		}
	}
	if err := os.Remove(filepath.Join(root, "devices", name)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if !m.exists(name) {
		t.Error("missing from devices (not on the allow-list): taken for gone")
	}
	for _, h := range []string{"hugetlb", "cpuset", "pids"} {
		dir := filepath.Join(root, h, name)
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if m.exists(name) {
			t.Errorf("missing from the mounted %s hierarchy: taken for there", h)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// No hugetlb hierarchy: not wanted.
	noHugetlb := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(noHugetlb, h, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if !(cgroupfs{root: noHugetlb}).exists(name) {
		t.Error("without a hugetlb (cpuset, pids...) hierarchy: not there")
	}

	// The cgroup root, validated at start: upstream's message, every
	// path missing.
	if err := os.MkdirAll(filepath.Join(root, "cpu", "custom"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "memory", "custom"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := m.validateRoot("/custom")
	if err == nil || !strings.HasPrefix(err.Error(), `invalid configuration: cgroup ["custom"] has some missing paths: `) ||
		!strings.Contains(err.Error(), filepath.Join(root, "hugetlb", "custom")) || !strings.Contains(err.Error(), filepath.Join(root, "pids", "custom")) ||
		strings.Contains(err.Error(), filepath.Join(root, "devices", "custom")) {
		t.Errorf("validateRoot of a root missing from cpuset, hugetlb...: %v", err)
	}
}

// TestCgroupV1CreateInEveryMountedHierarchy: on cgroup v1 create makes a
// cgroup in every hierarchy mounted, those off the allow-list (devices,
// freezer, blkio) and combined ones (cpu,cpuacct, its links cpu and
// cpuacct) too, as upstream's cgroupfs Create (libctCgroupConfig sets
// only Path, so the runc manager's Apply makes it in each of its
// subsystems mounted), while exists looks only at the allow-list
// (TestCgroupV1ExistsInEveryAllowlistedHierarchy), and as destroy
// removes it from every one. Before, it was made in the allow-listed ones
// only.
func TestCgroupV1CreateInEveryMountedHierarchy(t *testing.T) {
	const name = "/kubepods/besteffort/pody"
	root := t.TempDir()
	for _, h := range []string{"cpu,cpuacct", "memory", "devices", "freezer", "blkio", "pids", "systemd"} {
		if err := os.Mkdir(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	m := cgroupfs{root: root}
	if err := m.create(name, cgroupConfig{cpuShares: 2}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"cpu,cpuacct", "memory", "devices", "freezer", "blkio", "pids", "systemd"} {
		if _, err := os.Stat(filepath.Join(root, h, name)); err != nil {
			t.Errorf("create did not make it in the %s hierarchy: %v", h, err)
		}
	}
}
