package kubelet

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// hugetlbOf is hugetlb limits of (page size, limit) pairs.
func hugetlbOf(pairs ...int64) hugetlbLimits {
	var h hugetlbLimits
	for i := 0; i+1 < len(pairs); i += 2 {
		h.add(pairs[i], pairs[i+1])
	}
	return h
}

// withHugePages adds hugepages-<size> requests and limits of q to r.
func withHugePages(r v1.ResourceRequirements, size, q string) v1.ResourceRequirements {
	name := v1.ResourceName(v1.ResourceHugePagesPrefix + size)
	if r.Requests == nil {
		r.Requests = v1.ResourceList{}
	}
	if r.Limits == nil {
		r.Limits = v1.ResourceList{}
	}
	r.Requests[name], r.Limits[name] = resource.MustParse(q), resource.MustParse(q)
	return r
}

// The hugetlb limits of the kubelet's cgroups are upstream's, worked out
// by hand from its rules: a pod's cgroup its hugepages-<size> requests as
// PodRequests adds them up (containers summed, an init container's peak,
// a pod-level request replacing the sum, the overhead added), 0 for every
// node page size it does not request (maybeSetHugetlb); kubepods the
// allocatable's (HugePageLimits: by page size, entries of one size added
// up); the QoS classes' 1<<62 of every size (setHugePagesUnbounded).
func TestHugetlbLimitsAsUpstream(t *testing.T) {
	const mi, gi = int64(1 << 20), int64(1 << 30)
	node := []HugePages{{PageSize: 2 * mi, Pages: 512}, {PageSize: gi, Pages: 2}}

	summed := cgroupPod("s", withHugePages(req("100m", "64Mi", "", ""), "2Mi", "4Mi"),
		withHugePages(withHugePages(req("100m", "64Mi", "", ""), "2Mi", "4Mi"), "1Gi", "1Gi"))
	initPeak := cgroupPod("i", withHugePages(req("100m", "64Mi", "", ""), "2Mi", "4Mi"))
	initPeak.Spec.InitContainers = []v1.Container{{Name: "init", Resources: withHugePages(req("100m", "64Mi", "", ""), "2Mi", "10Mi")}}
	podLevel := cgroupPod("l", withHugePages(req("100m", "64Mi", "", ""), "2Mi", "4Mi"))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{"hugepages-2Mi": resource.MustParse("16Mi")}}
	overhead := cgroupPod("o", withHugePages(req("100m", "64Mi", "", ""), "2Mi", "4Mi"))
	overhead.Spec.Overhead = v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi"), v1.ResourceCPU: resource.MustParse("10m")}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want hugetlbLimits
	}{
		{"none requested", cgroupPod("n", req("100m", "64Mi", "", "")), hugetlbOf(2*mi, 0, gi, 0)},
		{"containers summed", summed, hugetlbOf(2*mi, 8*mi, gi, gi)},
		{"init container peak", initPeak, hugetlbOf(2*mi, 10*mi, gi, 0)},
		{"pod level", podLevel, hugetlbOf(2*mi, 16*mi, gi, 0)},
		{"overhead", overhead, hugetlbOf(2*mi, 6*mi, gi, 0)},
	} {
		if got := podHugetlb(tc.pod, node); got != tc.want {
			t.Errorf("%s: podHugetlb %s; want %s", tc.name, got, tc.want)
		}
	}
	if got := podHugetlb(summed, nil); got.n != 0 {
		t.Errorf("podHugetlb on a node without huge pages: %s; want none", got)
	}

	allocatable := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), "hugepages-1Gi": resource.MustParse("2Gi"),
		"hugepages-2Mi": resource.MustParse("1Gi"), "hugepages-2048Ki": resource.MustParse("4Mi"), "hugepages-x": resource.MustParse("1")}
	if got, want := listHugetlb(allocatable), hugetlbOf(2*mi, gi+4*mi, gi, 2*gi); got != want {
		t.Errorf("listHugetlb %s; want %s", got, want)
	}
	if got, want := unboundedHugetlb(node), hugetlbOf(2*mi, 1<<62, gi, 1<<62); got != want {
		t.Errorf("unboundedHugetlb %s; want %s", got, want)
	}
	if got := hugetlbOf(2*mi, 0, gi, 5).String(); got != "[2MB:0 1GB:5]" {
		t.Errorf("String: %s", got)
	}

	many := make([]HugePages, maxHugePageSizes+1)
	for i := range many {
		many[i] = HugePages{PageSize: int64(64<<10) << i}
	}
	if _, err := checkHugePages(many); err == nil {
		t.Errorf("checkHugePages of %d sizes: no error", len(many))
	}
}

// cgroupfs writes hugetlb limits as runc does, only where the hugetlb
// controller is (upstream's maybeSetHugetlb): on cgroup v1 in the hugetlb
// hierarchy (the cgroup made there), hugetlb.<size>.limit_in_bytes and,
// where the kernel has it, hugetlb.<size>.rsvd.limit_in_bytes; on v2
// hugetlb.<size>.max and .rsvd.max, the controller handed down.
func TestCgroupfsHugetlbFiles(t *testing.T) {
	const name = "/kubepods/burstable/podh"
	c := cgroupConfig{cpuShares: 102, hugetlb: hugetlbOf(2<<20, 4<<20, 1<<30, 0)}

	v1dir := t.TempDir()
	for _, h := range []string{"cpu", "memory", "hugetlb"} {
		os.Mkdir(filepath.Join(v1dir, h), 0o755)
	}
	m := cgroupfs{root: v1dir}
	if err := m.create(name, c); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"hugetlb.2MB.limit_in_bytes": "4194304", "hugetlb.1GB.limit_in_bytes": "0"} {
		if got := readCgroupFile(t, v1dir, "hugetlb", name, file); got != want {
			t.Errorf("v1 %s = %q; want %q", file, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(v1dir, "hugetlb", name, "hugetlb.2MB.rsvd.limit_in_bytes")); err == nil {
		t.Error("a reservation limit file made where the kernel has none")
	}
	// A kernel with reservation accounting: its files written too.
	const other = "/kubepods/podr"
	os.MkdirAll(filepath.Join(v1dir, "hugetlb", other), 0o755)
	for _, f := range []string{"hugetlb.2MB.rsvd.limit_in_bytes", "hugetlb.1GB.rsvd.limit_in_bytes"} {
		os.WriteFile(filepath.Join(v1dir, "hugetlb", other, f), []byte("9223372036854771712\n"), 0o644)
	}
	if err := m.set(other, cgroupConfig{hugetlb: hugetlbOf(2<<20, 1<<62, 1<<30, 1<<62)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"hugetlb.2MB.limit_in_bytes", "hugetlb.2MB.rsvd.limit_in_bytes", "hugetlb.1GB.rsvd.limit_in_bytes"} {
		if got := readCgroupFile(t, v1dir, "hugetlb", other, f); got != strconv.FormatInt(1<<62, 10) {
			t.Errorf("v1 %s = %q; want 1<<62", f, got)
		}
	}
	// No hugetlb hierarchy: nothing of it written.
	noHugetlb := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(noHugetlb, h), 0o755)
	}
	if err := (cgroupfs{root: noHugetlb}).create(name, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(noHugetlb, "hugetlb")); err == nil {
		t.Error("hugetlb written without the hugetlb hierarchy")
	}

	for _, controllers := range []string{"cpu memory hugetlb pids", "cpu memory pids"} {
		v2dir := t.TempDir()
		for _, d := range []string{"", "kubepods", "kubepods/burstable"} {
			os.MkdirAll(filepath.Join(v2dir, d), 0o755)
			os.WriteFile(filepath.Join(v2dir, d, "cgroup.controllers"), []byte(controllers+"\n"), 0o644)
		}
		if err := (cgroupfs{root: v2dir, unified: true}).create(name, c); err != nil {
			t.Fatal(err)
		}
		got := readCgroupFile(t, v2dir, name, "hugetlb.2MB.max") + "," + readCgroupFile(t, v2dir, name, "hugetlb.1GB.max")
		want := "4194304,0"
		if controllers == "cpu memory pids" {
			want = ","
		}
		if got != want {
			t.Errorf("v2 (controllers %s) hugetlb.2MB.max,hugetlb.1GB.max = %q; want %q", controllers, got, want)
		}
	}
}

// A kubelet managing its node's cgroups gives a pod's cgroup, when it
// makes it, the hugetlb limits of the pod's huge page requests and 0 of
// every other page size of the node; kubepods is made with the
// allocatable huge pages, and the QoS classes' cgroups are unbounded,
// kubepods too once they are brought up to date, as upstream's
// UpdateCgroups leaves it; enforcing the node's allocatable at start
// writes its allocatable again. An in-place resize leaves the pod's
// limits as they are.
func TestPodCgroupHugetlbLimits(t *testing.T) {
	dir := t.TempDir()
	for _, h := range []string{"cpu", "memory", "hugetlb"} {
		os.Mkdir(filepath.Join(dir, h), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) {
		c.CgroupDir = dir
		c.Memory = resource.MustParse("4Gi")
		c.HugePages = []HugePages{{PageSize: 2 << 20, Pages: 512}, {PageSize: 1 << 30, Pages: 1}}
	})
	huge := h.create(h.pod("huge", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = withHugePages(resources("100m", "200m", "64Mi", "64Mi"), "2Mi", "4Mi")
	}))
	plain := h.create(h.pod("plain", func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBestEffort }))
	h.sync(huge)
	h.sync(plain)
	unbounded := strconv.FormatInt(1<<62, 10)
	for _, tc := range []struct{ cgroup, size, want string }{
		{"/kubepods/burstable/poduid-huge", "2MB", "4194304"},
		{"/kubepods/burstable/poduid-huge", "1GB", "0"},
		{"/kubepods/besteffort/poduid-plain", "2MB", "0"},
		{"/kubepods/besteffort/poduid-plain", "1GB", "0"},
		{"/kubepods/burstable", "2MB", unbounded},
		{"/kubepods/besteffort", "1GB", unbounded},
		// Brought up to date before the second pod's cgroup was made.
		{"/kubepods", "2MB", unbounded},
	} {
		if got := readCgroupFile(t, dir, "hugetlb", tc.cgroup, "hugetlb."+tc.size+".limit_in_bytes"); got != tc.want {
			t.Errorf("%s hugetlb.%s.limit_in_bytes = %q; want %s", tc.cgroup, tc.size, got, tc.want)
		}
	}
	if !h.k.enforceNodeAllocatable() {
		t.Fatal("node allocatable not enforced")
	}
	for size, want := range map[string]string{"2MB": strconv.Itoa(1 << 30), "1GB": strconv.Itoa(1 << 30)} {
		if got := readCgroupFile(t, dir, "hugetlb", "kubepods", "hugetlb."+size+".limit_in_bytes"); got != want {
			t.Errorf("kubepods hugetlb.%s.limit_in_bytes after enforcement = %q; want the allocatable %s", size, got, want)
		}
	}
	if err := h.k.updateQOSCgroups(); err != nil {
		t.Fatal(err)
	}
	if got := readCgroupFile(t, dir, "hugetlb", "kubepods", "hugetlb.1GB.limit_in_bytes"); got != unbounded {
		t.Errorf("kubepods hugetlb.1GB.limit_in_bytes after a QoS update = %q; want %s", got, unbounded)
	}

	h.resize(huge, "app", withHugePages(resources("100m", "200m", "64Mi", "128Mi"), "2Mi", "4Mi"))
	h.sync(huge)
	h.sync(huge)
	if got := readCgroupFile(t, dir, "memory", "/kubepods/burstable/poduid-huge", "memory.limit_in_bytes"); got != strconv.Itoa(128<<20) {
		t.Fatalf("pod memory limit after the resize %q; want 128Mi", got)
	}
	if got := readCgroupFile(t, dir, "hugetlb", "/kubepods/burstable/poduid-huge", "hugetlb.2MB.limit_in_bytes"); got != "4194304" {
		t.Errorf("pod hugetlb.2MB.limit_in_bytes after a resize = %q; want 4194304 kept", got)
	}
}

// The reservations' cgroups get hugetlb limits of 0 of every node page
// size where a whole reservation is enforced, as upstream's
// enforceExistingCgroup: getCgroupConfig gives them the reservation's
// huge pages (none can be reserved: an empty HugePageLimit), which
// maybeSetHugetlb writes as 0 of every size. Where only its compressible
// part is (CPU shares, no HugePageLimit), they are left as they are, as
// a resize leaves a pod's (hugetlb.go).
func TestReservedCgroupsHugetlb(t *testing.T) {
	for _, unified := range []bool{false, true} {
		t.Run(map[bool]string{false: "v1", true: "v2"}[unified], func(t *testing.T) {
			dir := t.TempDir()
			if unified {
				for _, d := range []string{"", "system.slice", "kube.slice"} {
					os.MkdirAll(filepath.Join(dir, d), 0o755)
					os.WriteFile(filepath.Join(dir, d, "cgroup.controllers"), []byte("cpu memory hugetlb pids\n"), 0o644)
				}
			} else {
				for _, h := range []string{"cpu", "memory", "hugetlb"} {
					for _, d := range []string{"system.slice", "kube.slice"} {
						os.MkdirAll(filepath.Join(dir, h, d), 0o755)
					}
				}
			}
			h, _ := resizeHarness(t, func(c *Config) {
				c.CgroupDir = dir
				c.Memory = resource.MustParse("8Gi")
				c.HugePages = []HugePages{{PageSize: 2 << 20, Pages: 512}, {PageSize: 1 << 30, Pages: 1}}
				c.SystemReserved = rl(t, "cpu=500m,memory=1Gi")
				c.KubeReserved = rl(t, "cpu=250m,memory=512Mi")
				c.EnforceNodeAllocatable = []string{"pods", "system-reserved", "kube-reserved-compressible"}
				c.SystemReservedCgroup, c.KubeReservedCgroup = "/system.slice", "/kube.slice"
			})
			if err := h.k.enforceReservedCgroups(); err != nil {
				t.Fatal(err)
			}
			file := func(name, size string) string {
				if unified {
					return readCgroupFile(t, dir, name, "hugetlb."+size+".max")
				}
				return readCgroupFile(t, dir, "hugetlb", name, "hugetlb."+size+".limit_in_bytes")
			}
			for _, size := range []string{"2MB", "1GB"} {
				if got := file("system.slice", size); got != "0" {
					t.Errorf("system.slice hugetlb %s limit %q; want 0", size, got)
				}
				if got := file("kube.slice", size); got != "" {
					t.Errorf("kube.slice (compressible only) hugetlb %s limit %q; want none written", size, got)
				}
			}
		})
	}
}
