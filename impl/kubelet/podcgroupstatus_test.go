package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// recordedLogs is a slog handler keeping every record as
// "LEVEL message key=value ...".
type recordedLogs struct {
	mu   sync.Mutex
	recs []string
}

func (r *recordedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordedLogs) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recordedLogs) WithGroup(string) slog.Handler            { return r }
func (r *recordedLogs) Handle(_ context.Context, rec slog.Record) error {
	s := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key != "err" {
			s += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		}
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, s)
	r.mu.Unlock()
	return nil
}

// take returns the records so far and forgets them.
func (r *recordedLogs) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recs
	r.recs = nil
	return out
}

// podCgroupNode is a harness whose kubelet manages a cgroup v1 node's
// cgroups in a temporary directory (the cpu and memory hierarchies), its
// logs recorded.
func podCgroupNode(t *testing.T) (*harness, string, *recordedLogs) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		if err := os.Mkdir(filepath.Join(dir, hier), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logs := &recordedLogs{}
	h := newHarness(t, func(c *Config) { c.CgroupDir = dir; c.Logger = slog.New(logs) })
	return h, dir, logs
}

// A Running pod's status.resources read the pod cgroup's CPU and memory
// separately, as upstream 1.37's convertToAPIPodLevelResourcesStatus
// (GetPodCgroupConfig of memory, then of cpu): a memory limit that cannot
// be read still reports the CPU values read (the memory limit the last
// reported one), a CPU config that cannot be read still reports the
// memory limit read (the CPU values the last reported ones), and each
// failure is logged at error level with upstream's messages (its CPU one
// says "memory cgroup limits").
func TestPodCgroupStatusReadsCPUAndMemorySeparately(t *testing.T) {
	h, dir, logs := podCgroupNode(t)
	const podCgroup = "/kubepods/burstable/poduid-web"
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "128Mi")
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	check := func(step string, got *v1.Pod, reqs, lims v1.ResourceList) {
		t.Helper()
		r := got.Status.Resources
		if r == nil || !apiequality.Semantic.DeepEqual(r.Requests, reqs) || !apiequality.Semantic.DeepEqual(r.Limits, lims) {
			t.Errorf("%s: status.resources %+v; want requests %v limits %v", step, r, reqs, lims)
		}
	}
	check("cgroup as made", h.sync(p), resList("cpu", "100m", "memory", "64Mi"), resList("cpu", "200m", "memory", "128Mi"))
	logs.take()

	write := func(hier, file, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, hier, podCgroup, file), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(hier, file string) {
		t.Helper()
		if err := os.Remove(filepath.Join(dir, hier, podCgroup, file)); err != nil {
			t.Fatal(err)
		}
	}

	// The memory limit unreadable: the CPU values are still read (512
	// shares are 500m, a 40 ms quota per 100 ms 400m).
	write("cpu", "cpu.shares", "512")
	write("cpu", "cpu.cfs_quota_us", "40000")
	remove("memory", "memory.limit_in_bytes")
	check("memory unreadable", h.sync(p), resList("cpu", "500m", "memory", "64Mi"), resList("cpu", "400m", "memory", "128Mi"))
	if l := logs.take(); !slices.Contains(l, "ERROR failed to read memory cgroup config for the pod podName=web") {
		t.Errorf("logs %q; want the memory read's failure at error level", l)
	}

	// The CPU config unreadable: the memory limit is still read.
	write("memory", "memory.limit_in_bytes", "268435456")
	remove("cpu", "cpu.shares")
	check("cpu unreadable", h.sync(p), resList("cpu", "500m", "memory", "64Mi"), resList("cpu", "400m", "memory", "256Mi"))
	if l := logs.take(); !slices.Contains(l, "ERROR failed to read memory cgroup limits for the pod podName=web") {
		t.Errorf("logs %q; want the CPU read's failure at error level", l)
	}
}

// On cgroup v1 a pod cgroup without a memory limit reads as the kernel
// shows it, its page-rounded maximum, and status.resources reports that
// as the pod's memory limit, as upstream's (GetCgroupConfig reads
// memory.limit_in_bytes as a number, MemoryLimitsFromConfig takes any
// above 0); cgroup v2's "max" is none (runc's GetCgroupParamUint reads
// it as the largest uint64, -1 once converted; TestCgroupfsFiles).
func TestPodCgroupStatusUnlimitedMemoryV1(t *testing.T) {
	h, dir, _ := podCgroupNode(t)
	const podCgroup = "/kubepods/burstable/poduid-web"
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "")
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	// What the kernel shows of a memory cgroup never limited (4 KiB pages).
	const unlimited = "9223372036854771712"
	if err := os.WriteFile(filepath.Join(dir, "memory", podCgroup, "memory.limit_in_bytes"), []byte(unlimited+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := h.sync(p)
	want := resList("cpu", "200m", "memory", unlimited)
	if r := got.Status.Resources; r == nil || !apiequality.Semantic.DeepEqual(r.Limits, want) {
		t.Fatalf("status.resources %+v; want limits %v", r, want)
	}
	if q := got.Status.Resources.Limits[v1.ResourceMemory]; q.Value() != 9223372036854771712 || q.Format != resource.BinarySI {
		t.Errorf("memory limit %v (%s); want 9223372036854771712 bytes, binary", q.String(), q.Format)
	}
}
