package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

type fakeStats struct {
	stats []*runtimeapi.ContainerStats
	err   error
}

func (f fakeStats) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return f.stats, f.err
}

func containerStats(uid, name string, workingSet, disk, inodes uint64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes:    &runtimeapi.ContainerAttributes{Labels: map[string]string{runtime.LabelPodUID: uid, runtime.LabelContainerName: name}},
		Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: workingSet}},
		WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: disk}, InodesUsed: &runtimeapi.UInt64Value{Value: inodes}},
	}
}

// With CRI stats, a pod's measured usage replaces its requests (and a
// container the runtime does not report keeps its request); without an
// answer, requests stand in.
func TestHostProviderMeasuresWithCRIStats(t *testing.T) {
	a := pod("a", 100*mi, 0)
	a.UID = types.UID("uid-a")
	a.Spec.Containers = append(a.Spec.Containers, v1.Container{Name: "side"})
	b := pod("b", 200*mi, 0)
	b.UID = types.UID("uid-b")
	lister := fakeStats{stats: []*runtimeapi.ContainerStats{
		containerStats("uid-a", "app", 300*mi, 5*mi, 40),
		containerStats("uid-a", "side", 7*mi, 1*mi, 2),
		containerStats("uid-other", "app", 999*mi, 0, 0),
	}}
	_, stats, err := HostProvider{RootDir: t.TempDir(), Stats: lister}.Observe(t.Context(), []*v1.Pod{a, b})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if got := stats[0]; got.Memory["app"] != 300*mi || got.Memory["side"] != 7*mi || got.Disk != 6*mi || got.Inodes != 42 {
		t.Errorf("measured pod a: %+v", got)
	}
	if got := stats[1]; got.Memory["app"] != 200*mi {
		t.Errorf("unreported pod b keeps its request: %+v", got)
	}
	_, stats, _ = HostProvider{RootDir: t.TempDir(), Stats: fakeStats{err: errors.New("unimplemented")}}.Observe(t.Context(), []*v1.Pod{a})
	if got := stats[0]; got.Memory["app"] != 100*mi || got.Memory["side"] != 0 {
		t.Errorf("fallback to requests: %+v", got)
	}
}

// On the host, a pod's local storage for its limits is each container's
// CRI writable layer, each container's log directory and each emptyDir's
// directory (du).
func TestHostProviderMeasuresLocalStorage(t *testing.T) {
	root, logs := t.TempDir(), t.TempDir()
	p := storagePod("web", []v1.Volume{emptyDir("cache", "1Mi", ""), emptyDir("shm", "1Mi", v1.StorageMediumMemory)}, [2]string{"app", ""}, [2]string{"side", ""})
	p.UID = types.UID("uid-web")
	write := func(path string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "cache", "blob"), 2*mi)
	write(filepath.Join(root, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "shm", "blob"), 2*mi)
	write(filepath.Join(logs, "default_web_uid-web", "app", "0.log"), 64<<10)
	lister := fakeStats{stats: []*runtimeapi.ContainerStats{containerStats("uid-web", "app", 0, 0, 0), containerStats("uid-web", "side", 0, 3*mi, 1)}}
	_, stats, err := HostProvider{RootDir: root, LogsDir: logs, Stats: lister}.Observe(t.Context(), []*v1.Pod{p})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	s := stats[0].Storage
	if s == nil || s.Volumes["cache"] < 2*mi || s.Volumes["shm"] < 2*mi || len(s.Volumes) != 2 || s.Logs["app"] < 64<<10 || s.Logs["side"] != 0 || s.Rootfs["side"] != 3*mi {
		t.Fatalf("storage %+v", s)
	}
	evs := LocalStorageEvictions(stats, false)
	if len(evs) != 1 || evs[0].Limit != LimitEmptyDir || evs[0].Message != `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ` {
		t.Fatalf("evictions %+v", evs)
	}
}

// On the host, the pod's local ephemeral storage counts the du of its
// disk-backed emptyDir and configMap directories (upstream's
// IsLocalEphemeralVolume, each measured as its plugin's MetricsDu of the
// volume directory); a memory-backed emptyDir is measured (for its
// sizeLimit) but not counted, and a secret's directory (a tmpfs on CRI
// nodes, upstream's stats report it but nothing counts it) is neither.
func TestHostProviderLocalEphemeralVolumes(t *testing.T) {
	root := t.TempDir()
	volumes := []v1.Volume{
		emptyDir("cache", "", ""),
		{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		emptyDir("shm", "", v1.StorageMediumMemory),
		{Name: "tok", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}},
	}
	p := storagePod("web", volumes, [2]string{"app", "2Mi"})
	p.UID = types.UID("uid-web")
	vols := filepath.Join(root, "pods", "uid-web", "volumes")
	for path, n := range map[string]int{
		"kubernetes.io~empty-dir/cache/blob":                        1 * mi,
		"kubernetes.io~configmap/conf/..2026_11_25_14_00_00.1/data": 2 * mi,
		"kubernetes.io~empty-dir/shm/blob":                          4 * mi,
		"kubernetes.io~secret/tok/blob":                             8 * mi,
	} {
		path = filepath.Join(vols, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stats, err := HostProvider{RootDir: root}.Observe(t.Context(), []*v1.Pod{p})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	s := stats[0].Storage
	if s.Volumes["cache"] < 1*mi || s.Volumes["conf"] < 2*mi || s.Volumes["shm"] < 4*mi || len(s.Volumes) != 3 {
		t.Fatalf("volumes measured %v, want cache, conf and shm", s.Volumes)
	}
	if want := s.Volumes["cache"] + s.Volumes["conf"]; stats[0].Disk != want {
		t.Fatalf("disk %d, want %d (cache and conf only)", stats[0].Disk, want)
	}
	// 3Mi of emptyDir and configMap over the pod's 2Mi.
	evs := LocalStorageEvictions(stats, false)
	if len(evs) != 1 || evs[0].Limit != LimitPodEphemeral {
		t.Fatalf("evictions %+v, want the pod's ephemeral storage limit", evs)
	}
}

// du counts a file with several hard links in the directory once, as
// upstream's DiskUsage dedupes inodes.
func TestDuCountsHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, make([]byte, 1*mi), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link1", "link2", "link3"} {
		if err := os.Link(file, filepath.Join(dir, name)); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	b, n := du(dir)
	if n != 2 || b < 1*mi || b >= 2*mi {
		t.Fatalf("du = %d bytes, %d inodes; want the file once: 2 inodes, 1Mi to 2Mi", b, n)
	}
}

// du counts a directory's allocated blocks and entries, and stops at its
// entry bound.
func TestDuIsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(dir, string(rune('a'+i))), make([]byte, 8192), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, n := du(dir); n != 11 || b < 10*8192 {
		t.Fatalf("du = %d bytes, %d entries; want 11 entries, at least 80 KiB", b, n)
	}
	defer func(old int64) { duMaxEntries = old }(duMaxEntries)
	duMaxEntries = 4
	if _, n := du(dir); n != 4 {
		t.Fatalf("bounded du counted %d entries, want 4", n)
	}
	if b, n := du(filepath.Join(dir, "missing")); b != 0 || n != 0 {
		t.Fatalf("missing directory: %d %d", b, n)
	}
}

// fakeRuntimeStats is a runtime that lists its containers too (CRI
// ListContainers), so their states are known.
type fakeRuntimeStats struct {
	fakeStats
	containers []*runtimeapi.Container
}

func (f fakeRuntimeStats) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return f.containers, nil
}

// The pod's local ephemeral storage counts the writable layer and logs of
// every running container the runtime reports for it, whatever its kind
// (a sidecar, an init container while it runs, an ephemeral container),
// and of no exited one (an init container that finished, an earlier
// instance of a restarted container), as upstream's CRI stats provider
// (removeTerminatedContainers) sums its containers' rootfs and logs.
func TestHostProviderCountsRunningContainersOfEveryKind(t *testing.T) {
	logs := t.TempDir()
	p := storagePod("web", nil, [2]string{"app", "3Mi"})
	p.UID = types.UID("uid-web")
	p.Spec.InitContainers = []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}}
	write := func(path string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(logs, "default_web_uid-web", "side", "0.log"), 1*mi+1)
	write(filepath.Join(logs, "default_web_uid-web", "init", "0.log"), 8*mi)
	stat := func(id, name string, disk uint64) *runtimeapi.ContainerStats {
		s := containerStats("uid-web", name, 0, disk, 1)
		s.Attributes.Id = id
		return s
	}
	ctr := func(id string, state runtimeapi.ContainerState) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, State: state}
	}
	lister := fakeRuntimeStats{
		fakeStats: fakeStats{stats: []*runtimeapi.ContainerStats{
			stat("init-0", "init", 16*mi), stat("app-0", "app", 16*mi), stat("app-1", "app", 1*mi), stat("side-0", "side", 1*mi),
		}},
		containers: []*runtimeapi.Container{
			ctr("init-0", runtimeapi.ContainerState_CONTAINER_EXITED), ctr("app-0", runtimeapi.ContainerState_CONTAINER_EXITED),
			ctr("app-1", runtimeapi.ContainerState_CONTAINER_RUNNING), ctr("side-0", runtimeapi.ContainerState_CONTAINER_RUNNING),
		},
	}
	_, stats, err := HostProvider{RootDir: t.TempDir(), LogsDir: logs, Stats: lister}.Observe(t.Context(), []*v1.Pod{p})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	s := stats[0].Storage
	if s.Rootfs["app"] != 1*mi || s.Rootfs["side"] != 1*mi || len(s.Rootfs) != 2 || s.Logs["side"] < 1*mi || s.Logs["init"] != 0 {
		t.Fatalf("storage %+v, want the running app and sidecar only", s)
	}
	// The disk ranking likewise (upstream's podDiskUsage: its containers'
	// rootfs and logs): not the finished init container's logs.
	if want := s.Rootfs["app"] + s.Rootfs["side"] + s.Logs["side"]; stats[0].Disk != want {
		t.Fatalf("disk %d, want %d (the running containers' layers and logs)", stats[0].Disk, want)
	}
	// app 1Mi, side 1Mi and its logs over 1Mi: over the pod's 3Mi.
	evs := LocalStorageEvictions(stats, false)
	if len(evs) != 1 || evs[0].Limit != LimitPodEphemeral {
		t.Fatalf("evictions %+v, want the pod's ephemeral storage limit", evs)
	}
}

// The pod's managed hosts file (<pod dir>/etc-hosts, the kubelet's) counts
// towards its local ephemeral storage, measured as upstream's
// getPodEtcHostsStats does (MetricsDu: its allocated blocks), and so
// towards its ephemeral-storage limit (podEphemeralStorageLimitEviction
// reads the pod's ephemeral storage stats, etc-hosts included); the disk
// ranking (podDiskUsage) leaves it out.
func TestHostProviderCountsEtcHosts(t *testing.T) {
	root := t.TempDir()
	// The writable layer alone is 1 byte under the pod's 1Mi; with the
	// hosts file it is over.
	p := storagePod("web", nil, [2]string{"app", "1Mi"})
	p.UID = types.UID("uid-web")
	lister := fakeStats{stats: []*runtimeapi.ContainerStats{containerStats("uid-web", "app", 0, mi-1, 1)}}
	observe := func() PodStats {
		t.Helper()
		_, stats, err := HostProvider{RootDir: root, Stats: lister}.Observe(t.Context(), []*v1.Pod{p})
		if err != nil {
			t.Skipf("no /proc here: %v", err)
		}
		return stats[0]
	}
	if ps := observe(); ps.Storage.EtcHosts != 0 || len(LocalStorageEvictions([]PodStats{ps}, false)) != 0 {
		t.Fatalf("without a hosts file: etc-hosts %d, evictions %+v", ps.Storage.EtcHosts, LocalStorageEvictions([]PodStats{ps}, false))
	}
	path := filepath.Join(root, "pods", "uid-web", "etc-hosts")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := du(path)
	ps := observe()
	if want <= 0 || ps.Storage.EtcHosts != want {
		t.Fatalf("etc-hosts measured %d, want its du %d", ps.Storage.EtcHosts, want)
	}
	if ps.Disk != mi-1 {
		t.Errorf("disk for the ranking %d, want the writable layer's %d only", ps.Disk, mi-1)
	}
	evs := LocalStorageEvictions([]PodStats{ps}, false)
	if len(evs) != 1 || evs[0].Limit != LimitPodEphemeral {
		t.Fatalf("evictions %+v, want the pod's ephemeral storage limit (layer and hosts file over 1Mi)", evs)
	}
}
