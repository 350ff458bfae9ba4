package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

func TestReclaimsNodeLevel(t *testing.T) {
	for _, tc := range []struct {
		s         Signal
		dedicated bool
		want      bool
	}{
		{SignalNodeFsAvailable, false, true},
		{SignalNodeFsInodesFree, false, true},
		{SignalImageFsAvailable, false, true},
		{SignalNodeFsAvailable, true, false},
		{SignalNodeFsInodesFree, true, false},
		{SignalImageFsAvailable, true, true},
		{SignalImageFsInodesFree, false, true},
		{SignalImageFsInodesFree, true, true},
		{SignalMemoryAvailable, false, false},
		{SignalPIDAvailable, false, false},
	} {
		if got := ReclaimsNodeLevel(tc.s, tc.dedicated); got != tc.want {
			t.Errorf("ReclaimsNodeLevel(%s, dedicated imagefs %v) = %v, want %v", tc.s, tc.dedicated, got, tc.want)
		}
	}
}

// After a reclaim every threshold counts with its minimum reclaim.
func TestReclaimSuffices(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "nodefs.available<100Mi,memory.available<10Mi", HardSet: true, MinimumReclaim: "nodefs.available=50Mi"})
	obs := func(disk int64) Observations {
		return Observations{SignalNodeFsAvailable: {Available: disk, Capacity: 1000 * mi}, SignalMemoryAvailable: {Available: 500 * mi, Capacity: 1000 * mi}}
	}
	for _, tc := range []struct {
		disk int64
		want bool
	}{{90 * mi, false}, {120 * mi, false}, {150 * mi, true}} {
		if got := ReclaimSuffices(cfg, obs(tc.disk)); got != tc.want {
			t.Errorf("ReclaimSuffices with %d Mi available = %v, want %v", tc.disk/mi, got, tc.want)
		}
	}
	low := obs(500 * mi)
	low[SignalMemoryAvailable] = Observation{Available: 5 * mi, Capacity: 1000 * mi}
	if ReclaimSuffices(cfg, low) {
		t.Error("a memory threshold still met: reclaim did not suffice")
	}
}

// scripted returns its observations in turn (the last one repeats).
type scripted struct {
	obs       []Observations
	calls     int
	dedicated bool
}

func (s *scripted) Observe(_ context.Context, pods []*v1.Pod) (Observations, []PodStats, error) {
	o := s.obs[min(s.calls, len(s.obs)-1)]
	s.calls++
	stats := make([]PodStats, 0, len(pods))
	for _, p := range pods {
		stats = append(stats, requestStats(p))
	}
	return o, stats, nil
}

type dedicatedScripted struct{ *scripted }

func (s dedicatedScripted) DedicatedImageFs(context.Context) bool { return true }

type fakeReclaimer struct {
	containers, images int
	err                error
}

func (f *fakeReclaimer) DeleteDeadContainers(context.Context, time.Time) (int, error) {
	f.containers++
	return 2, nil
}

func (f *fakeReclaimer) DeleteUnusedImages(context.Context, time.Time) (int64, error) {
	f.images++
	return 300 * mi, f.err
}

func diskObs(avail int64) Observations {
	return Observations{SignalNodeFsAvailable: {Available: avail, Capacity: 1000 * mi}, SignalImageFsAvailable: {Available: avail, Capacity: 1000 * mi},
		SignalMemoryAvailable: {Available: 500 * mi, Capacity: 1000 * mi}}
}

// Under disk pressure the manager reclaims dead containers and unused
// images first and evicts only if the node is still short afterwards;
// the DiskPressure condition is reported either way.
func TestManagerReclaimsBeforeEvicting(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "nodefs.available<100Mi,imagefs.available<100Mi,memory.available<100Mi", HardSet: true})
	p := pod("a", 0, 0)
	for _, tc := range []struct {
		name       string
		after      int64 // available after the reclaim
		err        error
		dedicated  bool
		memory     bool
		wantCalls  int
		wantEvict  bool
		wantSuffic bool
	}{
		{name: "reclaim suffices", after: 400 * mi, wantCalls: 1, wantSuffic: true},
		{name: "reclaim falls short", after: 90 * mi, wantCalls: 1, wantEvict: true},
		{name: "errors do not stop it", after: 400 * mi, err: errors.New("image in use"), wantCalls: 1, wantSuffic: true},
		{name: "memory is not reclaimed", memory: true, wantEvict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := diskObs(50 * mi)
			if tc.memory {
				before = diskObs(500 * mi)
				before[SignalMemoryAvailable] = Observation{Available: 50 * mi, Capacity: 1000 * mi}
			}
			prov := &scripted{obs: []Observations{before, diskObs(tc.after)}}
			m := NewManager(cfg, prov)
			r := &fakeReclaimer{err: tc.err}
			m.SetNodeReclaimer(r)
			d, _, err := m.Synchronize(t.Context(), []*v1.Pod{p}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if r.containers != tc.wantCalls || r.images != tc.wantCalls {
				t.Errorf("reclaim calls: %d container, %d image; want %d", r.containers, r.images, tc.wantCalls)
			}
			if (d.Evict != nil) != tc.wantEvict {
				t.Errorf("evict %v, want %v", d.Evict, tc.wantEvict)
			}
			if tc.wantCalls > 0 {
				if d.Reclaim == nil || d.Reclaim.Sufficed != tc.wantSuffic || d.Reclaim.ContainersRemoved != 2 || d.Reclaim.ImageBytesFreed != 300*mi ||
					(tc.err != nil) != (d.Reclaim.Err != nil) {
					t.Errorf("reclaim %+v", d.Reclaim)
				}
			}
			if want := v1.NodeDiskPressure; !tc.memory && (len(d.Conditions) != 1 || d.Conditions[0] != want) {
				t.Errorf("conditions %v, want DiskPressure", d.Conditions)
			}
		})
	}

	// With images on their own filesystem, nodefs pressure is not helped
	// by removing images.
	prov := &scripted{obs: []Observations{{SignalNodeFsAvailable: {Available: 50 * mi, Capacity: 1000 * mi}}}}
	m := NewManager(cfg, dedicatedScripted{prov})
	r := &fakeReclaimer{}
	m.SetNodeReclaimer(r)
	d, _, _ := m.Synchronize(t.Context(), []*v1.Pod{p}, t0)
	if r.images != 0 || d.Evict == nil {
		t.Errorf("dedicated imagefs, nodefs pressure: %d image reclaims, evict %v", r.images, d.Evict)
	}
}

func TestParseConfigImageGC(t *testing.T) {
	cfg := mustConfig(t, Flags{})
	if cfg.ImageGC.Enabled() {
		t.Errorf("Flags{} enables image GC: %+v", cfg.ImageGC)
	}
	cfg = mustConfig(t, Flags{ImageGCHighThresholdPercent: 85, ImageGCLowThresholdPercent: 80, MinimumImageTTLDuration: 2 * time.Minute})
	if cfg.ImageGC != gc.DefaultPolicy {
		t.Errorf("image GC policy %+v", cfg.ImageGC)
	}
	_, err := ParseConfig(Flags{ImageGCHighThresholdPercent: 80, ImageGCLowThresholdPercent: 85})
	if err == nil || !strings.Contains(err.Error(), "--image-gc-low-threshold") {
		t.Errorf("low above high: %v", err)
	}
	cfg = mustConfig(t, Flags{ImageGCHighThresholdPercent: 85, ImageGCLowThresholdPercent: 80, MinimumImageTTLDuration: 2 * time.Minute, ImageMaximumGCAge: time.Hour})
	if cfg.ImageGC.MaxAge != time.Hour {
		t.Errorf("--image-maximum-gc-age 1h: policy %+v", cfg.ImageGC)
	}
	_, err = ParseConfig(Flags{ImageGCHighThresholdPercent: 85, ImageGCLowThresholdPercent: 80, MinimumImageTTLDuration: 2 * time.Minute, ImageMaximumGCAge: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "--image-maximum-gc-age") {
		t.Errorf("maximum age below the minimum: %v", err)
	}
}

// statsRuntime is a runtime.StatsProvider with canned answers.
type statsRuntime struct {
	fakeStats
	sandboxes  []*runtimeapi.PodSandboxStats
	mountpoint string
}

func (s statsRuntime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return s.sandboxes, nil
}

func (s statsRuntime) ImageFsInfo(context.Context) ([]*runtimeapi.FilesystemUsage, []*runtimeapi.FilesystemUsage, error) {
	return []*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: s.mountpoint}, UsedBytes: &runtimeapi.UInt64Value{Value: 1}}}, nil, nil
}

var _ runtime.StatsProvider = statsRuntime{}

// A pod's disk use is its containers' writable layers plus its log files
// and disk-backed emptyDir volumes; its processes come from the pod
// sandbox stats; imagefs is the filesystem ImageFsInfo names.
func TestHostProviderLogsVolumesAndProcesses(t *testing.T) {
	root, logs := t.TempDir(), t.TempDir()
	p := pod("a", 0, 0)
	p.UID = types.UID("uid-a")
	p.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
	}
	write := func(path string, n int) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(logs, "default_a_uid-a", "app", "0.log"), 64<<10)
	write(filepath.Join(root, "pods", "uid-a", "volumes", "kubernetes.io~empty-dir", "scratch", "data"), 256<<10)
	write(filepath.Join(root, "pods", "uid-a", "volumes", "kubernetes.io~empty-dir", "ram", "data"), 1<<20)
	rt := statsRuntime{
		fakeStats: fakeStats{stats: []*runtimeapi.ContainerStats{containerStats("uid-a", "app", 10*mi, 1*mi, 3)}},
		sandboxes: []*runtimeapi.PodSandboxStats{{
			Attributes: &runtimeapi.PodSandboxAttributes{Labels: map[string]string{runtime.LabelPodUID: "uid-a"}},
			Linux:      &runtimeapi.LinuxPodSandboxStats{Process: &runtimeapi.ProcessUsage{ProcessCount: &runtimeapi.UInt64Value{Value: 7}}},
		}},
		mountpoint: t.TempDir(),
	}
	h := HostProvider{RootDir: root, LogsDir: logs, Stats: rt}
	obs, stats, err := h.Observe(t.Context(), []*v1.Pod{p})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	got := stats[0]
	// Allocated blocks: at least the bytes written, less than a page more
	// per file; the memory-backed volume is not counted.
	lo, hi := int64(1*mi+64<<10+256<<10), int64(1*mi+64<<10+256<<10+4*8192)
	if got.Disk < lo || got.Disk > hi || got.PIDs != 7 || got.Memory["app"] != 10*mi || got.Inodes < 3+2 {
		t.Errorf("pod stats %+v, disk want in [%d, %d]", got, lo, hi)
	}
	if _, ok := obs[SignalImageFsAvailable]; !ok {
		t.Error("no imagefs observation")
	}
	if h.DedicatedImageFs(t.Context()) {
		t.Error("two temp directories on one filesystem make a dedicated imagefs")
	}
}
