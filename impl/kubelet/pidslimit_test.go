package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The node's process capacity is read as upstream's pidlimit.Stats: the
// least of kernel.pid_max and kernel.threads-max, either alone when the
// other cannot be read, none when neither can.
func TestReadPIDCapacity(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"both, pid_max less", fstest.MapFS{"pid_max": {Data: []byte("32768\n")}, "threads-max": {Data: []byte("192730\n")}}, 32768},
		{"both, threads-max less", fstest.MapFS{"pid_max": {Data: []byte("4194304\n")}, "threads-max": {Data: []byte("63368\n")}}, 63368},
		{"pid_max only", fstest.MapFS{"pid_max": {Data: []byte("4194304\n")}}, 4194304},
		{"threads-max unreadable", fstest.MapFS{"pid_max": {Data: []byte("32768\n")}, "threads-max": {Data: []byte("lots\n")}}, 32768},
		{"neither", fstest.MapFS{}, 0},
	} {
		if got := ReadPIDCapacity(tc.fs); got != tc.want {
			t.Errorf("%s: %d; want %d", tc.name, got, tc.want)
		}
	}
}

// --pod-max-pids is every pod's cgroup's pids limit when above 0, as
// upstream's pod container manager adds it to ResourceConfigForPod's
// values (BestEffort pods' too); 0 and -1 (the default) give none. The
// node allocatable cgroup's is the node's process capacity.
func TestPidsLimitValues(t *testing.T) {
	pods := map[string]*v1.Pod{
		"BestEffort": cgroupPod("be"),
		"Burstable":  cgroupPod("bu", req("100m", "", "", "")),
		"Guaranteed": cgroupPod("g", req("100m", "64Mi", "100m", "64Mi")),
	}
	for class, pod := range pods {
		for limit, want := range map[int64]int64{100: 100, 1: 1, 0: 0, -1: 0} {
			got := podCgroupValues(pod, cpuCFS{}, limit)
			if got.pids != want {
				t.Errorf("%s pod, --pod-max-pids %d: pids %d; want %d", class, limit, got.pids, want)
			}
			if got.pids = 0; got != podCgroupValues(pod, cpuCFS{}, 0) {
				t.Errorf("%s pod, --pod-max-pids %d: other values changed: %+v", class, limit, got)
			}
		}
	}
	capacity := (&Config{CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi")}).capacity()
	if got := nodeAllocatableCgroupConfig(capacity, 32768); got != (cgroupConfig{cpuShares: 2048, memory: 4 << 30, pids: 32768}) {
		t.Errorf("kubepods with 32768 pids: %+v", got)
	}
	if got := nodeAllocatableCgroupConfig(capacity, 0); got.pids != 0 {
		t.Errorf("kubepods of an unknown pid capacity: %+v; want no pids limit", got)
	}
}

// cgroupfs writes pids.max where the node's cgroups have the pids
// controller: on cgroup v1 in the pids hierarchy (the cgroup made there
// when missing), on v2 with the controller handed down (+pids in each
// ancestor's cgroup.subtree_control), "max" for none; nothing, and no
// error, where there is no pids controller.
func TestCgroupfsPidsMax(t *testing.T) {
	const name = "/kubepods/besteffort/podx"
	v1dir := t.TempDir()
	for _, h := range []string{"cpu", "memory", "pids"} {
		os.Mkdir(filepath.Join(v1dir, h), 0o755)
	}
	m := cgroupfs{root: v1dir}
	if err := m.create(name, cgroupConfig{cpuShares: 2, pids: 100}); err != nil {
		t.Fatal(err)
	}
	if got := readCgroupFile(t, v1dir, "pids", name, "pids.max"); got != "100" {
		t.Errorf("v1 pids.max = %q; want 100", got)
	}
	// kubepods made before (no pids cgroup) and limited afterwards.
	if err := m.set("/kubepods", cgroupConfig{pids: -1}); err != nil {
		t.Fatal(err)
	}
	if got := readCgroupFile(t, v1dir, "pids", "kubepods", "pids.max"); got != "max" {
		t.Errorf("v1 kubepods pids.max = %q; want max", got)
	}
	noPids := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(noPids, h), 0o755)
	}
	if err := (cgroupfs{root: noPids}).create(name, cgroupConfig{cpuShares: 2, pids: 100}); err != nil {
		t.Fatalf("v1 without a pids hierarchy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(noPids, "pids")); err == nil {
		t.Error("v1 without a pids hierarchy: a pids directory made")
	}

	for _, controllers := range []string{"cpu memory pids", "cpu memory"} {
		v2dir := t.TempDir()
		os.WriteFile(filepath.Join(v2dir, "cgroup.controllers"), []byte(controllers+"\n"), 0o644)
		u := cgroupfs{root: v2dir, unified: true}
		if err := u.create(name, cgroupConfig{cpuShares: 2, pids: 100}); err != nil {
			t.Fatal(err)
		}
		want, wantSubtree := "100", "+cpu +memory +pids"
		if controllers == "cpu memory" {
			want, wantSubtree = "", "+cpu +memory"
		}
		if got := readCgroupFile(t, v2dir, name, "pids.max"); got != want {
			t.Errorf("v2 (%s) pids.max = %q; want %q", controllers, got, want)
		}
		if got := readCgroupFile(t, v2dir, "cgroup.subtree_control"); got != wantSubtree {
			t.Errorf("v2 (%s) cgroup.subtree_control = %q; want %q", controllers, got, wantSubtree)
		}
	}
}

// On this machine's cgroup v1 (root): a kubelet of --pod-max-pids 64
// makes a pod's cgroup with pids.max 64 in the real pids hierarchy, the
// kernel taking it, and kubepods's pids.max is the node's process
// capacity (kernel.pid_max or threads-max, the least), written when made
// and at start.
func TestPodPidsLimitRealCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	if unified, err := CgroupUnified(SysFsCgroup); err != nil || unified {
		t.Skipf("needs cgroup v1 at %s (unified %v, %v)", SysFsCgroup, unified, err)
	}
	if fi, err := os.Stat(filepath.Join(SysFsCgroup, "pids")); err != nil || !fi.IsDir() {
		t.Skipf("no pids hierarchy: %v", err)
	}
	root := fmt.Sprintf("/kp-test-pids-%d-%d", os.Getpid(), time.Now().UnixNano())
	fs := cgroupfs{root: SysFsCgroup}
	t.Cleanup(func() {
		if err := fs.destroy(root); err != nil {
			t.Errorf("removing the test's cgroups: %v", err)
		}
	})
	for _, h := range fs.v1Required() { // as upstream's Validate wants the root
		if err := os.MkdirAll(filepath.Join(SysFsCgroup, h, root), 0o755); err != nil { // cpuacct may be cpu's
			t.Fatal(err)
		}
	}
	h := newHarness(t, func(c *Config) {
		c.CgroupDir, c.CgroupRoot, c.PodPidsLimit = SysFsCgroup, root, 64
	})
	p := h.create(h.pod("pids", nil))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	podCgroup := filepath.Join(SysFsCgroup, "pids", root, "kubepods", "besteffort", "poduid-pids")
	if got := readCgroupFile(t, podCgroup, "pids.max"); got != "64" {
		t.Errorf("%s/pids.max = %q; want 64", podCgroup, got)
	}
	least := int64(-1)
	for _, f := range []string{"pid_max", "threads-max"} {
		v, err := strconv.ParseInt(readCgroupFile(t, "/proc/sys/kernel", f), 10, 64)
		if err == nil && (least < 0 || v < least) {
			least = v
		}
	}
	kubepods := filepath.Join(SysFsCgroup, "pids", root, "kubepods", "pids.max")
	if got := readCgroupFile(t, kubepods); got != strconv.FormatInt(least, 10) {
		t.Errorf("%s = %q; want the node's process capacity %d", kubepods, got, least)
	}
	// Changed behind the kubelet: written again at start.
	if err := os.WriteFile(kubepods, []byte("10"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !h.k.enforceNodeAllocatable() || readCgroupFile(t, kubepods) != strconv.FormatInt(least, 10) {
		t.Errorf("%s after enforcement: %q", kubepods, readCgroupFile(t, kubepods))
	}
}
