package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rl is a ResourceList of name=quantity pairs ("cpu=1,memory=1Gi").
func rl(t *testing.T, s string) v1.ResourceList {
	t.Helper()
	out, err := ParseReserved(s)
	if err != nil && s != "" {
		// Not a reservation (hugepages, pods): parse it plainly.
		out = v1.ResourceList{}
		for _, pair := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(pair, "=")
			out[v1.ResourceName(k)] = resource.MustParse(v)
		}
	}
	return out
}

// sameResources reports whether a and b hold the same quantities.
func sameResources(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if r, ok := b[name]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

func show(l v1.ResourceList) string {
	var parts []string
	for _, name := range sortedNames(l) {
		q := l[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// The node's allocatable is its capacity less the system and kube
// reservations and the hard eviction thresholds, per resource and never
// below zero, memory less the huge pages' too (upstream's
// GetNodeAllocatableReservation and MachineInfo setter); kubepods's is the
// capacity less the reservations only, pid included
// (getNodeAllocatableAbsoluteImpl).
func TestNodeAllocatableArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		capacity, system, kube, evict             string
		wantReservation, wantAllocatable, wantAbs string
	}{{
		name:            "no reservations",
		capacity:        "cpu=4,memory=8Gi,ephemeral-storage=100Gi,pods=110",
		wantReservation: "",
		wantAllocatable: "cpu=4,memory=8Gi,ephemeral-storage=100Gi,pods=110",
		wantAbs:         "cpu=4,memory=8Gi,ephemeral-storage=100Gi,pods=110",
	}, {
		name:            "eviction thresholds only",
		capacity:        "cpu=4,memory=8Gi,ephemeral-storage=100Gi,pods=110",
		evict:           "memory=100Mi,ephemeral-storage=10Gi",
		wantReservation: "memory=100Mi,ephemeral-storage=10Gi",
		wantAllocatable: "cpu=4,memory=8092Mi,ephemeral-storage=90Gi,pods=110",
		wantAbs:         "cpu=4,memory=8Gi,ephemeral-storage=100Gi,pods=110",
	}, {
		name:            "system, kube and eviction summed",
		capacity:        "cpu=4,memory=8Gi,ephemeral-storage=100Gi,pods=110,pid=32768",
		system:          "cpu=500m,memory=1Gi,ephemeral-storage=5Gi,pid=1000",
		kube:            "cpu=250m,memory=512Mi,pid=24",
		evict:           "memory=100Mi,ephemeral-storage=10Gi",
		wantReservation: "cpu=750m,memory=1636Mi,ephemeral-storage=15Gi,pid=1024",
		wantAllocatable: "cpu=3250m,memory=6556Mi,ephemeral-storage=85Gi,pods=110,pid=31744",
		wantAbs:         "cpu=3250m,memory=6656Mi,ephemeral-storage=95Gi,pods=110,pid=31744",
	}, {
		name:            "a reservation beyond the capacity floored at zero",
		capacity:        "cpu=1,memory=1Gi",
		system:          "cpu=2",
		kube:            "memory=2Gi",
		wantReservation: "cpu=2,memory=2Gi",
		wantAllocatable: "cpu=0,memory=0",
		wantAbs:         "cpu=0,memory=0",
	}, {
		name:            "a reservation of a resource the node lacks is no reservation",
		capacity:        "cpu=1,memory=1Gi",
		system:          "ephemeral-storage=1Gi,pid=10",
		wantReservation: "",
		wantAllocatable: "cpu=1,memory=1Gi",
		wantAbs:         "cpu=1,memory=1Gi",
	}, {
		name:            "huge pages off the memory left",
		capacity:        "cpu=2,memory=4Gi,hugepages-2Mi=1Gi",
		system:          "memory=1Gi",
		evict:           "memory=100Mi",
		wantReservation: "memory=1124Mi",
		wantAllocatable: "cpu=2,memory=1948Mi,hugepages-2Mi=1Gi",
		wantAbs:         "cpu=2,memory=3Gi,hugepages-2Mi=1Gi",
	}, {
		name:            "huge pages beyond the memory left floored at zero",
		capacity:        "cpu=2,memory=4Gi,hugepages-1Gi=3Gi",
		system:          "memory=2Gi",
		wantReservation: "memory=2Gi",
		wantAllocatable: "cpu=2,memory=0,hugepages-1Gi=3Gi",
		wantAbs:         "cpu=2,memory=2Gi,hugepages-1Gi=3Gi",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			capacity := rl(t, tc.capacity)
			res := allocatableReservation(capacity, rl(t, tc.system), rl(t, tc.kube), rl(t, tc.evict))
			if want := rl(t, tc.wantReservation); !sameResources(res, want) && !(len(res) == 0 && len(want) == 0) {
				t.Errorf("reservation %s; want %s", show(res), show(want))
			}
			if got, want := nodeAllocatable(capacity, res), rl(t, tc.wantAllocatable); !sameResources(got, want) {
				t.Errorf("allocatable %s; want %s", show(got), show(want))
			}
			if got, want := allocatableAbsolute(capacity, rl(t, tc.system), rl(t, tc.kube)), rl(t, tc.wantAbs); !sameResources(got, want) {
				t.Errorf("kubepods %s; want %s", show(got), show(want))
			}
			if show(capacity) != show(rl(t, tc.capacity)) {
				t.Errorf("capacity changed: %s", show(capacity))
			}
		})
	}
}

// --system-reserved and --kube-reserved as upstream's kubelet reads them:
// pairs of cpu, memory, ephemeral-storage or pid and a quantity not below
// zero, with its messages.
func TestParseReserved(t *testing.T) {
	got, err := ParseReserved(" cpu=200m, memory = 1Gi ,ephemeral-storage=2Gi,pid=1000,")
	if err != nil || show(got) != "cpu=200m,ephemeral-storage=2Gi,memory=1Gi,pid=1k" {
		t.Errorf("ParseReserved: %s, %v", show(got), err)
	}
	if got, err := ParseReserved(""); got != nil || err != nil {
		t.Errorf("ParseReserved(\"\"): %v, %v; want nil", got, err)
	}
	for in, want := range map[string]string{
		"cpu":                     "malformed pair, expect string=string",
		"cpu=1, ,memory=1Gi":      "malformed pair, expect string=string", // only empty pairs are skipped
		"cpu=1,hugepages-2Mi=2Mi": `cannot reserve "hugepages-2Mi" resource`,
		"pods=10":                 `cannot reserve "pods" resource`,
		"memory=lots":             `failed to parse quantity "lots" for "memory" resource: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		"cpu=-1":                  `resource quantity for "cpu" cannot be negative: -1`,
	} {
		if _, err := ParseReserved(in); err == nil || err.Error() != want {
			t.Errorf("ParseReserved(%q): %v; want %s", in, err, want)
		}
	}
	for _, tc := range []struct {
		reserved v1.ResourceList
		want     string
	}{
		{v1.ResourceList{v1.ResourcePods: resource.MustParse("1")}, `kubelet config: --system-reserved value failed to parse: cannot reserve "pods" resource`},
		{v1.ResourceList{v1.ResourceMemory: resource.MustParse("-1Mi")}, `kubelet config: --system-reserved value failed to parse: resource quantity for "memory" cannot be negative: -1Mi`},
	} {
		cfg := Config{NodeName: "n", SystemReserved: tc.reserved}
		if err := cfg.setDefaults(); err == nil || err.Error() != tc.want {
			t.Errorf("setDefaults of %v: %v; want %s", tc.reserved, err, tc.want)
		}
	}
	// Both wrong: the kube reservation is read first, as upstream's.
	cfg := Config{NodeName: "n", SystemReserved: v1.ResourceList{v1.ResourcePods: resource.MustParse("1")},
		KubeReserved: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	if err := cfg.setDefaults(); err == nil || err.Error() != `kubelet config: --kube-reserved value failed to parse: cannot reserve "nvidia.com/gpu" resource` {
		t.Errorf("setDefaults of a kube reservation of GPUs: %v", err)
	}
}

// --enforce-node-allocatable as upstream's validation takes it.
func TestCheckEnforceNodeAllocatable(t *testing.T) {
	const (
		sysCgroup  = "invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when \"system-reserved\" or \"system-reserved-compressible\" included in enforceNodeAllocatable (--enforce-node-allocatable)"
		kubeCgroup = "invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when \"kube-reserved\" or \"kube-reserved-compressible\" included in enforceNodeAllocatable (--enforce-node-allocatable)"
	)
	for _, tc := range []struct {
		keys      []string
		sys, kube string
		want      nodeAllocatableEnforcement
		err       string
	}{
		{keys: []string{"pods"}, want: nodeAllocatableEnforcement{pods: true}},
		{keys: nil},
		{keys: []string{"none"}},
		{keys: []string{"pods", "system-reserved", "kube-reserved"}, sys: "/system.slice", kube: "/kube.slice",
			want: nodeAllocatableEnforcement{pods: true, system: true, kube: true}},
		{keys: []string{"system-reserved-compressible", "kube-reserved-compressible"}, sys: "/s", kube: "/k",
			want: nodeAllocatableEnforcement{systemCompressible: true, kubeCompressible: true}},
		{keys: []string{"pods", "system-reserved"}, err: sysCgroup},
		{keys: []string{"kube-reserved-compressible"}, sys: "/s", err: kubeCgroup},
		{keys: []string{"system-reserved", "kube-reserved"}, err: "[" + sysCgroup + ", " + kubeCgroup + "]"},
		{keys: []string{"none", "pods"}, err: `invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified`},
		{keys: []string{"pods", "pods"}, err: `invalid configuration: duplicated enforcements "pods" in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{keys: []string{"system-reserved", "system-reserved-compressible"}, sys: "/s",
			err: `invalid configuration: both "system-reserved" and "system-reserved-compressible" cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{keys: []string{"kube-reserved-compressible", "kube-reserved"}, kube: "/k",
			err: `invalid configuration: both "kube-reserved" and "kube-reserved-compressible" cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{keys: []string{"Pods"}, err: `invalid configuration: option "Pods" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"`},
	} {
		got, err := checkEnforceNodeAllocatable(tc.keys, tc.sys, tc.kube)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: %v; want %s", tc.keys, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.keys, got, err, tc.want)
		}
	}
	// Through New's configuration: nil is "pods", an error is refused.
	cfg := Config{NodeName: "n"}
	if err := cfg.setDefaults(); err != nil || !cfg.enforce.pods {
		t.Errorf("default enforcement %+v, %v; want pods", cfg.enforce, err)
	}
	cfg = Config{NodeName: "n", EnforceNodeAllocatable: []string{"pods", "kube-reserved"}}
	if err := cfg.setDefaults(); err == nil || err.Error() != "kubelet config: "+kubeCgroup {
		t.Errorf("kube-reserved without its cgroup: %v", err)
	}
}

// A node whose reservations and hard eviction thresholds come to more
// than a resource's capacity is refused, with upstream's message.
func TestReservationAboveCapacityRefused(t *testing.T) {
	// 1Gi of memory: 700Mi + 300Mi reserved and 100Mi for memory.available.
	cfg := Config{NodeName: "n", CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"),
		SystemReserved: rl(t, "memory=700Mi,cpu=1"), KubeReserved: rl(t, "memory=300Mi,cpu=1,pid=99999999")}
	err := cfg.setDefaults()
	want := "kubelet config: invalid Node Allocatable configuration. " +
		`Resource "memory" has a reservation of {{1153433600 0} {<nil>}  BinarySI} but capacity of {{1073741824 0} {<nil>} 1Gi BinarySI}. Expected capacity >= reservation.`
	if err == nil || err.Error() != want {
		t.Errorf("setDefaults: %v\nwant %s", err, want)
	}
	// Just at the capacity (cpu 2 of 2; pid, not a capacity of the node's,
	// not checked): allowed.
	cfg = Config{NodeName: "n", CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"),
		SystemReserved: rl(t, "memory=700Mi,cpu=1"), KubeReserved: rl(t, "memory=224Mi,cpu=1,pid=99999999")}
	if err := cfg.setDefaults(); err != nil {
		t.Errorf("setDefaults at capacity: %v", err)
	}
	if err := validateNodeAllocatable(rl(t, "cpu=1,memory=1Gi"), rl(t, "cpu=2,memory=2Gi")); err == nil ||
		!strings.HasPrefix(err.Error(), `invalid Node Allocatable configuration. Resource "cpu" has a reservation of `) ||
		!strings.Contains(err.Error(), `Expected capacity >= reservation. Resource "memory" has a reservation of `) {
		t.Errorf("two resources over: %v", err)
	}
}

// The Node's status.allocatable, and the admission of pods against it,
// keep back the reservations; the Node does not report pid.
func TestNodeStatusAllocatableKeepsReservations(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.CPU, c.Memory = resource.MustParse("4"), resource.MustParse("8Gi")
		c.SystemReserved = rl(t, "cpu=500m,memory=1Gi,ephemeral-storage=5Gi,pid=1000")
		c.KubeReserved = rl(t, "cpu=500m,memory=924Mi")
	})
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	node, err := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := rl(t, "cpu=3,memory=6Gi,ephemeral-storage=85Gi,pods=110") // 8Gi-1Gi-924Mi-100Mi
	if !sameResources(node.Status.Allocatable, want) {
		t.Errorf("allocatable %s; want %s (capacity %s)", show(node.Status.Allocatable), show(want), show(node.Status.Capacity))
	}
	if _, ok := node.Status.Capacity[ResourcePID]; ok {
		t.Errorf("capacity reports pid: %s", show(node.Status.Capacity))
	}
	// A pod of 3.5 CPUs fits the capacity less the eviction thresholds
	// but not the reservations: refused as upstream's OutOfcpu.
	pod := h.pod("big", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m")}
	})
	if ok, reason, _ := Admit(h.k.allocatable, pod, nil); ok || reason != "OutOfcpu" {
		t.Errorf("admission of 3.5 CPUs: %v %s; want OutOfcpu", ok, reason)
	}
}

// kubeFS is a fake cgroup filesystem of cgroup v1 (cpu, memory and pids
// hierarchies) or v2 (those controllers).
func kubeFS(t *testing.T, unified bool) string {
	dir := t.TempDir()
	if unified {
		os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
		return dir
	}
	for _, h := range []string{"cpu", "memory", "pids"} {
		os.Mkdir(filepath.Join(dir, h), 0o755)
	}
	return dir
}

// reservedCgroupFiles reads a cgroup's CPU shares (v2: its weight), memory limit
// and pids.max on a kubeFS.
func reservedCgroupFiles(t *testing.T, dir string, unified bool, name string) (cpu, memory, pids string) {
	t.Helper()
	if unified {
		return readCgroupFile(t, dir, name, "cpu.weight"), readCgroupFile(t, dir, name, "memory.max"), readCgroupFile(t, dir, name, "pids.max")
	}
	return readCgroupFile(t, dir, "cpu", name, "cpu.shares"), readCgroupFile(t, dir, "memory", name, "memory.limit_in_bytes"),
		readCgroupFile(t, dir, "pids", name, "pids.max")
}

// kubepods has the capacity less the system and kube reservations with
// "pods" enforced (pid too, not less the eviction thresholds), and the
// capacity itself without, on cgroup v1 and v2; the Node's allocatable
// keeps the reservations back either way.
func TestKubepodsKeepsReservations(t *testing.T) {
	for _, unified := range []bool{false, true} {
		for _, enforce := range [][]string{nil, {"none"}, {}} {
			t.Run(map[bool]string{false: "v1", true: "v2"}[unified]+"/"+strings.Join(enforce, ",")+map[bool]string{true: "default"}[enforce == nil], func(t *testing.T) {
				dir := kubeFS(t, unified)
				h, _ := resizeHarness(t, func(c *Config) {
					c.CgroupDir = dir
					c.CPU, c.Memory, c.PIDCapacity = resource.MustParse("4"), resource.MustParse("8Gi"), 32768
					c.SystemReserved = rl(t, "cpu=500m,memory=1Gi,pid=1000")
					c.KubeReserved = rl(t, "cpu=250m,memory=512Mi,pid=24")
					c.EnforceNodeAllocatable = enforce
				})
				if err := h.k.updateQOSCgroups(); err != nil {
					t.Fatal(err)
				}
				if !h.k.enforceNodeAllocatable() {
					t.Fatal("kubepods not enforced")
				}
				shares, memory, pids := int64(3328), int64(6656<<20), "31744" // 3250m; 8Gi-1.5Gi; 32768-1024
				if enforce != nil {
					shares, memory, pids = 4096, 8<<30, "32768"
				}
				wantCPU := strconv.FormatInt(shares, 10)
				if unified {
					wantCPU = strconv.FormatInt(cpuWeight(shares), 10)
				}
				cpu, mem, p := reservedCgroupFiles(t, dir, unified, "kubepods")
				if cpu != wantCPU || mem != strconv.FormatInt(memory, 10) || p != pids {
					t.Errorf("kubepods cpu %s, memory %s, pids %s; want %s, %d, %s", cpu, mem, p, wantCPU, memory, pids)
				}
				if got := h.k.allocatable[v1.ResourceCPU]; got.MilliValue() != 3250 {
					t.Errorf("allocatable cpu %s; want 3250m", got.String())
				}
			})
		}
	}
}

// With "system-reserved" and "kube-reserved" (or its compressible form)
// enforced, their cgroups get the reservations as limits at start, with
// upstream's events; a cgroup missing is upstream's error and warning,
// and the kubelet does not run; a cgroup enforced without a reservation
// is upstream's "not configured properly".
func TestReservedCgroupsEnforced(t *testing.T) {
	for _, unified := range []bool{false, true} {
		t.Run(map[bool]string{false: "v1", true: "v2"}[unified], func(t *testing.T) {
			dir := kubeFS(t, unified)
			mutate := func(c *Config) {
				c.CgroupDir = dir
				c.SystemReserved = rl(t, "cpu=500m,memory=1Gi,pid=1000")
				c.KubeReserved = rl(t, "cpu=250m,memory=512Mi")
				c.EnforceNodeAllocatable = []string{"pods", "system-reserved", "kube-reserved-compressible"}
				c.SystemReservedCgroup, c.KubeReservedCgroup = "/system.slice", "kube.slice/"
			}
			h, rec := resizeHarness(t, mutate)
			err := h.k.enforceReservedCgroups()
			want := `Failed to enforce System Reserved Cgroup Limits on "/system.slice": cgroup ["system.slice"] has some missing paths: ` +
				filepath.Join(dir, "cpu", "system.slice") + ", " + filepath.Join(dir, "memory", "system.slice") + ", " + filepath.Join(dir, "pids", "system.slice")
			if unified {
				want = `Failed to enforce System Reserved Cgroup Limits on "/system.slice": could not read controllers for cgroup ["system.slice"]: open ` +
					filepath.Join(dir, "system.slice", "cgroup.controllers") + ": no such file or directory"
			}
			if err == nil || err.Error() != want {
				t.Errorf("enforceReservedCgroups: %v\nwant %s", err, want)
			}
			if evs := drain(rec); len(evs) != 1 || evs[0] != "Warning FailedNodeAllocatableEnforcement "+want {
				t.Errorf("events %q", evs)
			}
			// Run fails the same way, once kubepods is made.
			ctx, cancel := context.WithTimeout(h.ctx, time.Minute) // a Run that goes on ends with nil
			defer cancel()
			if err := h.newKubelet(mutate).Run(ctx); err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("Run: %v; want %s", err, want)
			}
			// The cgroups made: the system's limited in CPU, memory and
			// processes, the kube's in CPU shares only.
			for _, name := range []string{"system.slice", "kube.slice"} {
				if unified {
					os.Mkdir(filepath.Join(dir, name), 0o755)
					os.WriteFile(filepath.Join(dir, name, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
					continue
				}
				for _, hier := range []string{"cpu", "memory", "pids"} {
					os.Mkdir(filepath.Join(dir, hier, name), 0o755)
				}
			}
			drain(rec)
			if err := h.k.enforceReservedCgroups(); err != nil {
				t.Fatal(err)
			}
			wantEvs := []string{"Normal NodeAllocatableEnforced Updated limits on system reserved cgroup /system.slice",
				"Normal NodeAllocatableEnforced Updated limits on kube reserved cgroup kube.slice/"}
			if evs := drain(rec); !slices.Equal(evs, wantEvs) {
				t.Errorf("events %q; want %q", evs, wantEvs)
			}
			shares := func(s int64) string {
				if unified {
					return strconv.FormatInt(cpuWeight(s), 10)
				}
				return strconv.FormatInt(s, 10)
			}
			if cpu, mem, pids := reservedCgroupFiles(t, dir, unified, "system.slice"); cpu != shares(512) || mem != strconv.Itoa(1<<30) || pids != "1000" {
				t.Errorf("system.slice cpu %s, memory %s, pids %s; want %s, %d, 1000", cpu, mem, pids, shares(512), 1<<30)
			}
			if cpu, mem, pids := reservedCgroupFiles(t, dir, unified, "kube.slice"); cpu != shares(256) || mem != "" || pids != "" {
				t.Errorf("kube.slice cpu %s, memory %q, pids %q; want %s and no others", cpu, mem, pids, shares(256))
			}
		})
	}
	// Enforced with no reservation to enforce.
	dir := kubeFS(t, false)
	h, _ := resizeHarness(t, func(c *Config) {
		c.CgroupDir = dir
		c.EnforceNodeAllocatable = []string{"pods", "kube-reserved"}
		c.KubeReservedCgroup = "/kube.slice"
	})
	if err := h.k.enforceReservedCgroups(); err == nil ||
		err.Error() != `Failed to enforce Kube Reserved Cgroup Limits on "/kube.slice": ["kube.slice"] cgroup is not configured properly` {
		t.Errorf("kube-reserved without a reservation: %v", err)
	}
	// A simulated node has no cgroups to enforce on.
	sim := newHarness(t, func(c *Config) {
		c.EnforceNodeAllocatable = []string{"system-reserved"}
		c.SystemReservedCgroup = "/system.slice"
	})
	if err := sim.k.enforceReservedCgroups(); err != nil {
		t.Errorf("simulated node: %v", err)
	}
}
