package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// checkCFSQuota takes cpuCFSQuota and cpuCFSQuotaPeriod as upstream's
// kubelet: quotas by default over 100 ms, none with cpuCFSQuota false; a
// period other than 100 ms refused without the CustomCPUCFSQuotaPeriod
// gate, and with it one outside [1ms, 1s], with upstream's messages.
func TestCheckCFSQuota(t *testing.T) {
	for _, tc := range []struct {
		name    string
		quota   *bool
		period  time.Duration
		custom  bool
		want    cpuCFS
		wantErr string
	}{
		{name: "defaults", want: cpuCFS{period: 100000}},
		{name: "quota on, 100ms", quota: ptr.To(true), period: 100 * time.Millisecond, want: cpuCFS{period: 100000}},
		{name: "quota off", quota: ptr.To(false), want: cpuCFS{off: true, period: 100000}},
		{name: "gate off, 200ms", period: 200 * time.Millisecond,
			wantErr: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {200ms} requires feature gate CustomCPUCFSQuotaPeriod"},
		{name: "gate off, negative", period: -time.Second,
			wantErr: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {-1s} requires feature gate CustomCPUCFSQuotaPeriod"},
		{name: "gate on, 200ms", period: 200 * time.Millisecond, custom: true, want: cpuCFS{period: 200000}},
		{name: "gate on, 1ms", period: time.Millisecond, custom: true, want: cpuCFS{period: 1000}},
		{name: "gate on, 1s", period: time.Second, custom: true, want: cpuCFS{period: 1000000}},
		{name: "gate on, 100ms", custom: true, want: cpuCFS{period: 100000}},
		{name: "gate on, 2s", period: 2 * time.Second, custom: true,
			wantErr: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {2s} must be between 1ms and 1sec, inclusive"},
		{name: "gate on, 999us", period: 999 * time.Microsecond, custom: true,
			wantErr: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {999µs} must be between 1ms and 1sec, inclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkCFSQuota(tc.quota, tc.period, tc.custom)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("checkCFSQuota = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	// New refuses it too, before anything else.
	_, err := New(t.Context(), nil, Config{NodeName: "n", CPUCFSQuotaPeriod: 50 * time.Millisecond}, nil)
	if err == nil || !strings.Contains(err.Error(), "{50ms} requires feature gate CustomCPUCFSQuotaPeriod") {
		t.Errorf("New with a 50ms period and no gate: %v", err)
	}
}

// The CFS settings reach every cgroup value as upstream's
// calculateLinuxResources and ResourceConfigForPod use them: containers'
// and sandboxes' CRI resources have a quota of their CPU limit over the
// period (the period set with or without a limit), neither with quotas
// off; a pod cgroup's quota is over the period, unlimited (-1) with
// quotas off, its period set either way.
func TestCFSQuotaCgroupValues(t *testing.T) {
	guaranteed := cgroupPod("g", req("200m", "64Mi", "200m", "64Mi"))
	guaranteed.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	burstable := cgroupPod("b", req("100m", "", "", ""))
	for _, tc := range []struct {
		name                              string
		cfs                               cpuCFS
		quota, period                     int64 // the container's and sandbox's
		overheadQuota                     int64
		podQuota, podPeriod               int64 // the Guaranteed pod cgroup's
		burstableQuota, burstablePeriod   int64 // the Burstable container's (no CPU limit)
		burstablePodQuota, burstablePodPd int64
	}{
		{name: "default", cfs: cpuCFS{}, quota: 20000, period: 100000, overheadQuota: 10000, podQuota: 30000, podPeriod: 100000, burstablePeriod: 100000},
		{name: "quota off", cfs: cpuCFS{off: true, period: 100000}, overheadQuota: 0, podQuota: -1, podPeriod: 100000},
		{name: "50ms period", cfs: cpuCFS{period: 50000}, quota: 10000, period: 50000, overheadQuota: 5000, podQuota: 15000, podPeriod: 50000, burstablePeriod: 50000},
		{name: "1ms period: the least quota", cfs: cpuCFS{period: 1000}, quota: 1000, period: 1000, overheadQuota: 1000, podQuota: 1000, podPeriod: 1000, burstablePeriod: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cgroupParams{nodeMemory: 8 << 30, cfs: tc.cfs}
			c := containerConfig(guaranteed, &guaranteed.Spec.Containers[0], false, 0, nil, nil, p).GetLinux().GetResources()
			if c.CpuQuota != tc.quota || c.CpuPeriod != tc.period || c.CpuShares != 204 || c.MemoryLimitInBytes != 64<<20 {
				t.Errorf("container: %v; want quota %d period %d", c, tc.quota, tc.period)
			}
			sb, overhead := sandboxResources(guaranteed, p)
			if sb.CpuQuota != tc.quota || sb.CpuPeriod != tc.period || overhead.CpuQuota != tc.overheadQuota || overhead.CpuPeriod != tc.period {
				t.Errorf("sandbox: %v, overhead %v; want quota %d, %d, period %d", sb, overhead, tc.quota, tc.overheadQuota, tc.period)
			}
			if got := podCgroupValues(guaranteed, tc.cfs, 0); got.cpuQuota != tc.podQuota || got.cpuPeriod != tc.podPeriod || got.cpuShares != 307 || got.memory != 80<<20 {
				t.Errorf("Guaranteed pod cgroup: %+v; want quota %d period %d", got, tc.podQuota, tc.podPeriod)
			}
			bc := containerConfig(burstable, &burstable.Spec.Containers[0], false, 0, nil, nil, p).GetLinux().GetResources()
			if bc.CpuQuota != 0 || bc.CpuPeriod != tc.burstablePeriod {
				t.Errorf("Burstable container without a CPU limit: %v; want no quota, period %d", bc, tc.burstablePeriod)
			}
			if got := podCgroupValues(burstable, tc.cfs, 0); got.cpuQuota != 0 || got.cpuPeriod != 0 {
				t.Errorf("Burstable pod cgroup without CPU limits: %+v; want no quota nor period", got)
			}
			// resizeNeeded compares the runtime's values with the same
			// settings: what a container was given is no resize.
			if shares, q, mem := cgroupValues(200, true, 200, 64<<20, tc.cfs); shares != c.CpuShares || q != c.CpuQuota || mem != c.MemoryLimitInBytes {
				t.Errorf("cgroupValues: %d %d %d; want the container's", shares, q, mem)
			}
		})
	}
}

// A node's --cpu-cfs-quota=false and --cpu-cfs-quota-period reach the
// running pod: its container's CRI resources and its cgroup (cgroup v1
// files), and a pod so started is not taken for one to resize.
func TestCFSQuotaSettingsReachPod(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		mutate                func(*Config)
		quota, period         int64
		cgroupQuota, cgroupPd string
	}{
		{name: "quota off", mutate: func(c *Config) { c.CPUCFSQuota = ptr.To(false) }, cgroupQuota: "-1", cgroupPd: "100000"},
		{name: "custom period", mutate: func(c *Config) { c.CustomCPUCFSQuotaPeriod = true; c.CPUCFSQuotaPeriod = 20 * time.Millisecond },
			quota: 4000, period: 20000, cgroupQuota: "4000", cgroupPd: "20000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, h := range []string{"cpu", "memory"} {
				os.Mkdir(filepath.Join(dir, h), 0o755)
			}
			h, rec := resizeHarness(t, func(c *Config) { c.CgroupDir = dir; tc.mutate(c) })
			p := h.create(h.pod("g", func(p *v1.Pod) {
				p.Status.QOSClass = v1.PodQOSGuaranteed
				p.Spec.Containers[0].Resources = resources("200m", "200m", "64Mi", "64Mi")
			}))
			if got := h.sync(p); got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", got.Status.Phase)
			}
			if r := h.runtimeResources(p, "app"); r.CpuQuota != tc.quota || r.CpuPeriod != tc.period || r.CpuShares != 204 {
				t.Errorf("container resources %v; want quota %d period %d", r, tc.quota, tc.period)
			}
			const name = "/kubepods/poduid-g"
			if q, pd := readCgroupFile(t, dir, "cpu", name, "cpu.cfs_quota_us"), readCgroupFile(t, dir, "cpu", name, "cpu.cfs_period_us"); q != tc.cgroupQuota || pd != tc.cgroupPd {
				t.Errorf("pod cgroup cpu.cfs_quota_us %q cpu.cfs_period_us %q; want %s %s", q, pd, tc.cgroupQuota, tc.cgroupPd)
			}
			drain(rec)
			h.sync(p)
			if evs := drain(rec); hasEvent(evs, "Normal ResizeStarted") {
				t.Errorf("a resize started for a pod as started: %q", evs)
			}
			if r := h.runtimeResources(p, "app"); r.CpuQuota != tc.quota || r.CpuPeriod != tc.period {
				t.Errorf("container resources after another sync %v", r)
			}
		})
	}
}

// A kubelet restarted with --cpu-cfs-quota=false finds its running pod's
// container with the quota an earlier kubelet gave it, and leaves it:
// not a resize (no update, no ResizeStarted, no PodResizeInProgress), as
// upstream's, whose computePodResizeAction compares the CPU limit the
// runtime reports (the quota's) with the allocated one, the same. A
// resize of its CPU request is still made, the quota left as it is.
func TestCFSQuotaOffKeepsRunningPods(t *testing.T) {
	h, rec := resizeHarness(t, nil)
	p := h.create(h.pod("g", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "64Mi")
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	h.k = h.newKubelet(func(c *Config) {
		c.Recorder, c.CPU, c.CPUCFSQuota = rec, resource.MustParse("1"), ptr.To(false)
	})
	drain(rec)
	for range 2 {
		got := h.sync(p)
		if c := condOf(got, v1.PodResizeInProgress); c != nil {
			t.Fatalf("PodResizeInProgress %+v for a pod as it runs", c)
		}
	}
	if evs := drain(rec); hasEvent(evs, "Normal ResizeStarted") {
		t.Errorf("a resize started: %q", evs)
	}
	if r := h.runtimeResources(p, "app"); r.CpuQuota != 20000 || r.CpuShares != 102 {
		t.Errorf("container resources %v; want its quota and shares kept", r)
	}
	h.resize(p, "app", resources("200m", "200m", "64Mi", "64Mi"))
	h.sync(p)
	h.sync(p)
	if r := h.runtimeResources(p, "app"); r.CpuShares != 204 || r.CpuQuota != 20000 {
		t.Errorf("after a CPU request resize: %v; want 204 shares, the quota kept", r)
	}
	if c := condOf(h.get(p), v1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress %+v once the request is applied", c)
	}
}

// A kubelet restarted with CFS quotas turned on, or with another period,
// finds its running pod's container with what an earlier kubelet gave it
// (no quota; a quota over the old period) and leaves it: not a resize (no
// update, no ResizeStarted, no PodResizeInProgress), as upstream's, which
// compares the allocated CPU limit with the actuated one (actuated_pods_state),
// both millicores, so the node's CFS settings alone change nothing. A
// container of an old period has a quota standing for its limit over
// that period: the same limit. A resize then made is applied with the
// node's settings.
func TestCFSQuotaSettingsChangedKeepRunningPods(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after func(*Config)
		quota, period int64 // the container's, kept
		newQuota      int64 // after a resize to a 300m limit
		newPeriod     int64
	}{
		{name: "quota turned on", before: func(c *Config) { c.CPUCFSQuota = ptr.To(false) }, after: func(*Config) {},
			newQuota: 30000, newPeriod: 100000},
		{name: "period changed", before: func(*Config) {},
			after: func(c *Config) { c.CustomCPUCFSQuotaPeriod = true; c.CPUCFSQuotaPeriod = 50 * time.Millisecond },
			quota: 20000, period: 100000, newQuota: 15000, newPeriod: 50000},
		{name: "period changed back", before: func(c *Config) { c.CustomCPUCFSQuotaPeriod = true; c.CPUCFSQuotaPeriod = 30 * time.Millisecond },
			after: func(*Config) {},
			quota: 6000, period: 30000, newQuota: 30000, newPeriod: 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := resizeHarness(t, tc.before)
			p := h.create(h.pod("g", func(p *v1.Pod) {
				p.Status.QOSClass = v1.PodQOSBurstable
				p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "64Mi")
			}))
			if got := h.sync(p); got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", got.Status.Phase)
			}
			if r := h.runtimeResources(p, "app"); r.CpuQuota != tc.quota || r.CpuPeriod != tc.period {
				t.Fatalf("container resources %v; want quota %d period %d", r, tc.quota, tc.period)
			}
			h.k = h.newKubelet(func(c *Config) {
				c.Recorder, c.CPU = rec, resource.MustParse("1")
				tc.after(c)
			})
			drain(rec)
			for range 2 {
				if c := condOf(h.sync(p), v1.PodResizeInProgress); c != nil {
					t.Fatalf("PodResizeInProgress %+v for a pod as it runs", c)
				}
			}
			if evs := drain(rec); hasEvent(evs, "Normal ResizeStarted") || hasEvent(evs, "Normal ResizeCompleted") {
				t.Errorf("a resize: %q", evs)
			}
			if r := h.runtimeResources(p, "app"); r.CpuQuota != tc.quota || r.CpuPeriod != tc.period || r.CpuShares != 102 {
				t.Errorf("container resources %v; want quota %d period %d kept", r, tc.quota, tc.period)
			}
			h.resize(p, "app", resources("100m", "300m", "64Mi", "64Mi"))
			h.sync(p)
			h.sync(p)
			if r := h.runtimeResources(p, "app"); r.CpuQuota != tc.newQuota || r.CpuPeriod != tc.newPeriod {
				t.Errorf("after a CPU limit resize: %v; want quota %d period %d", r, tc.newQuota, tc.newPeriod)
			}
			if c := condOf(h.get(p), v1.PodResizeInProgress); c != nil {
				t.Errorf("PodResizeInProgress %+v once the limit is applied", c)
			}
		})
	}
}

// A memory-only resize of a running container, made by a kubelet
// restarted with other CFS settings, gives the container its CPU limit's
// quota over the node's current period, as upstream's
// updatePodContainerResources, which builds a memory update from the
// container's current CPU request and limit (millicores) through
// generateContainerResources, with the kubelet's period. Was: the
// container's old quota and period kept.
func TestMemoryResizeUsesCurrentCFSPeriod(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after func(*Config)
		quota, period int64 // after the memory resize: 200m over the new period
	}{
		{name: "quota turned on", before: func(c *Config) { c.CPUCFSQuota = ptr.To(false) }, after: func(*Config) {},
			quota: 20000, period: 100000},
		{name: "period changed", before: func(*Config) {},
			after: func(c *Config) { c.CustomCPUCFSQuotaPeriod = true; c.CPUCFSQuotaPeriod = 50 * time.Millisecond },
			quota: 10000, period: 50000},
		{name: "period changed back", before: func(c *Config) { c.CustomCPUCFSQuotaPeriod = true; c.CPUCFSQuotaPeriod = 30 * time.Millisecond },
			after: func(*Config) {}, quota: 20000, period: 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := resizeHarness(t, tc.before)
			p := h.create(h.pod("g", func(p *v1.Pod) {
				p.Status.QOSClass = v1.PodQOSBurstable
				p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "64Mi")
			}))
			if got := h.sync(p); got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", got.Status.Phase)
			}
			h.k = h.newKubelet(func(c *Config) {
				c.Recorder, c.CPU = rec, resource.MustParse("1")
				tc.after(c)
			})
			h.sync(p)
			h.resize(p, "app", resources("100m", "200m", "64Mi", "128Mi"))
			h.sync(p)
			h.sync(p)
			r := h.runtimeResources(p, "app")
			if r.MemoryLimitInBytes != 128<<20 {
				t.Fatalf("memory limit %d after the resize; want 128Mi", r.MemoryLimitInBytes)
			}
			if r.CpuQuota != tc.quota || r.CpuPeriod != tc.period || r.CpuShares != 102 {
				t.Errorf("after a memory resize: %v; want quota %d period %d, 102 shares", r, tc.quota, tc.period)
			}
			if c := condOf(h.get(p), v1.PodResizeInProgress); c != nil {
				t.Errorf("PodResizeInProgress %+v once the resize is applied", c)
			}
		})
	}
}

// runningCPULimit is the CPU limit (millicores) a memory-only update
// carries over, upstream's actuated limit, whatever the kubelet's period
// now: the allocated one when the container's quota stands for it over
// its own period; the limit before the last admitted resize, or else the
// allocated one, for a container without a period; otherwise the quota
// over its period (none for no quota).
func TestRunningCPULimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lim           int64
		quota, period int64
		before        int64
		ok            bool
		want          int64
	}{
		{"quota stands for the limit, another period", 200, 6000, 30000, 0, false, 200},
		{"no period, a limit before the resize", 400, 0, 0, 200, true, 200},
		{"no period, nothing before", 400, 0, 0, 0, false, 400},
		{"CPU resize pending: the quota's limit", 400, 6000, 30000, 200, true, 200},
		{"no quota (-1): none", 400, -1, 100000, 0, true, 0},
		{"no quota (0): none", 400, 0, 100000, 0, false, 0},
		{"no limit, none running", 0, -1, 100000, 0, false, 0},
	} {
		cur := &runtimeapi.LinuxContainerResources{CpuQuota: tc.quota, CpuPeriod: tc.period}
		if got := runningCPULimit(tc.lim, cur, tc.before, tc.ok); got != tc.want {
			t.Errorf("%s: runningCPULimit(%d, quota %d period %d, %d %v) = %d; want %d",
				tc.name, tc.lim, tc.quota, tc.period, tc.before, tc.ok, got, tc.want)
		}
	}
}
