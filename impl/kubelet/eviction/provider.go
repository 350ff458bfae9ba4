package eviction

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

// Provider observes the node and its pods. pods are the pods the kubelet
// runs (admitted and not finished).
type Provider interface {
	Observe(ctx context.Context, pods []*v1.Pod) (Observations, []PodStats, error)
}

// AnnotationMemoryUsage, on a pod of a simulated node, is its memory
// working set (a quantity, e.g. "300Mi"), charged to its first container;
// without it a simulated container uses what it requests.
const AnnotationMemoryUsage = "eviction.kubeproof.io/memory-usage"

// Local storage use of a simulated node's pods, for the local storage
// limits (LocalStorageEvictions) and the disk signals' ranking; quantities
// of bytes. Without any of them a simulated pod uses no local storage
// for the limits and its containers' ephemeral-storage requests for the
// ranking.
const (
	// AnnotationEphemeralStorageUsage is a container's writable layer and
	// logs: "eviction.kubeproof.io/ephemeral-storage-usage.<container>"
	// (an app, init, sidecar or ephemeral container), or without the
	// suffix the pod's first app container. It counts while the container
	// runs (SetPodStates), as upstream's pod stats hold only running
	// containers.
	AnnotationEphemeralStorageUsage = "eviction.kubeproof.io/ephemeral-storage-usage"
	// AnnotationEmptyDirUsage is what an emptyDir volume holds:
	// "eviction.kubeproof.io/emptydir-usage.<volume>". Any medium is
	// checked against its sizeLimit (a simulated node's memory emptyDir
	// is a plain directory); only a disk-backed one adds to the pod's
	// local ephemeral storage (localEphemeralVolume).
	AnnotationEmptyDirUsage = "eviction.kubeproof.io/emptydir-usage"
	// AnnotationConfigMapUsage is what a configMap volume holds (local
	// ephemeral storage, as upstream counts it):
	// "eviction.kubeproof.io/configmap-usage.<volume>".
	AnnotationConfigMapUsage = "eviction.kubeproof.io/configmap-usage"
)

// requestStats is a pod's usage when nothing measures it: each container
// uses what it requests (memory, ephemeral storage), one process each.
func requestStats(p *v1.Pod) PodStats {
	s := PodStats{Pod: p, Memory: map[string]int64{}}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		s.Memory[c.Name] = containerRequest(c, v1.ResourceMemory)
		s.Disk += containerRequest(c, v1.ResourceEphemeralStorage)
		s.PIDs++
	}
	return s
}

// SimProvider is the simulated node's provider: capacities from the
// kubelet's config, usage from requests (or AnnotationMemoryUsage), and
// any signal's available amount can be set outright (SetAvailable), which
// is how tests and `kubeproof node pressure` make a node short of a
// resource. allocatableMemory.available is observed only so set (a
// simulated node has no pods cgroup to measure), of capacity the node's
// memory.
type SimProvider struct {
	capacity map[Signal]int64

	mu        sync.Mutex
	available map[Signal]int64
	states    PodStateReader
}

// PodStateReader reads a pod's containers from the simulated runtime
// (its PodState): which of them run.
type PodStateReader interface {
	PodState(ctx context.Context, podUID string) (*podstate.Pod, error)
}

// SetPodStates makes the provider count a container's
// AnnotationEphemeralStorageUsage only while the runtime r reports it
// running, as upstream's CRI stats provider drops the containers that
// are not (removeTerminatedContainers): an init container once it has
// completed, an app container that exited. Without one every annotated
// container counts.
func (p *SimProvider) SetPodStates(r PodStateReader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.states = r
}

// Simulated capacities of what a node's config does not give.
const (
	SimInodes = 1_000_000
	SimPIDs   = 32768
)

// NewSimProvider returns a provider for a simulated node of the given
// memory and ephemeral storage.
func NewSimProvider(memory, disk resource.Quantity) *SimProvider {
	return &SimProvider{
		capacity: map[Signal]int64{
			SignalMemoryAvailable: memory.Value(), SignalNodeFsAvailable: disk.Value(), SignalImageFsAvailable: disk.Value(),
			SignalNodeFsInodesFree: SimInodes, SignalImageFsInodesFree: SimInodes, SignalPIDAvailable: SimPIDs,
		},
		available: map[Signal]int64{},
	}
}

// SetAvailable sets (or with nil, clears) the available amount the
// simulated node reports for a signal.
func (p *SimProvider) SetAvailable(s Signal, q *resource.Quantity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q == nil {
		delete(p.available, s)
	} else {
		p.available[s] = q.Value()
	}
}

// Available reports the set available amounts.
func (p *SimProvider) Available() map[Signal]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Signal]int64, len(p.available))
	for s, v := range p.available {
		out[s] = v
	}
	return out
}

// ParseAvailable reads "memory.available=50Mi,pid.available=100" into
// quantities by signal ("none" or "": none), as `kubeproof node pressure`
// takes them.
func ParseAvailable(text string) (map[Signal]resource.Quantity, error) {
	out := map[Signal]resource.Quantity{}
	if text == "none" {
		return out, nil
	}
	kv, err := keyValues("available", text, "=")
	if err != nil {
		return nil, err
	}
	for s, v := range kv {
		if !knownSignal(s) {
			return nil, fmt.Errorf("available: unsupported eviction signal %s", s)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("signal %s: invalid quantity %q", s, v)
		}
		out[s] = q
	}
	return out, nil
}

// Observe implements Provider.
func (p *SimProvider) Observe(ctx context.Context, pods []*v1.Pod) (Observations, []PodStats, error) {
	p.mu.Lock()
	states := p.states
	p.mu.Unlock()
	stats := make([]PodStats, 0, len(pods))
	var mem, disk, pids int64
	for _, pod := range pods {
		s := requestStats(pod)
		if text, ok := pod.Annotations[AnnotationMemoryUsage]; ok && len(pod.Spec.Containers) > 0 {
			if q, err := resource.ParseQuantity(text); err == nil {
				for name := range s.Memory {
					s.Memory[name] = 0
				}
				s.Memory[pod.Spec.Containers[0].Name] = q.Value()
			}
		}
		st, err := simStorage(ctx, pod, states)
		if err != nil {
			return nil, nil, err
		}
		s.Storage = st
		if total := s.Storage.total(pod); total > 0 {
			s.Disk = total
		}
		mem += s.memory()
		disk += s.Disk
		pids += s.PIDs
		stats = append(stats, s)
	}
	used := map[Signal]int64{SignalMemoryAvailable: mem, SignalNodeFsAvailable: disk, SignalImageFsAvailable: 0, SignalPIDAvailable: pids}
	p.mu.Lock()
	defer p.mu.Unlock()
	obs := Observations{}
	for s, c := range p.capacity {
		avail := max(c-used[s], 0)
		if v, ok := p.available[s]; ok {
			avail = v
		}
		obs[s] = Observation{Available: avail, Capacity: c}
	}
	if v, ok := p.available[SignalAllocatableMemoryAvailable]; ok {
		obs[SignalAllocatableMemoryAvailable] = Observation{Available: v, Capacity: p.capacity[SignalMemoryAvailable]}
	}
	return obs, stats, nil
}

// simStorage is a simulated pod's local storage use from its
// annotations (AnnotationEphemeralStorageUsage, AnnotationEmptyDirUsage,
// AnnotationConfigMapUsage), for the volumes a CRI node measures
// (measuredVolumePlugin), each from its own kind's annotation, and for
// the containers of every kind (app, init, sidecar, ephemeral) that run
// (states, nil: all of them), as upstream's pod stats list the running
// containers, whose writable layers and logs podLocalEphemeralStorageUsage
// sums; its maps are made only for what a pod reports (most report
// nothing, and the runtime is not asked for them).
func simStorage(ctx context.Context, pod *v1.Pod, states PodStateReader) (*LocalStorage, error) {
	st := &LocalStorage{}
	reports, containers := false, false
	for key := range pod.Annotations {
		if strings.HasPrefix(key, AnnotationEphemeralStorageUsage) {
			reports, containers = true, true
			break
		}
		if strings.HasPrefix(key, AnnotationEmptyDirUsage) || strings.HasPrefix(key, AnnotationConfigMapUsage) {
			reports = true
		}
	}
	if !reports {
		return st, nil
	}
	quantity := func(key string) (int64, bool) {
		text, ok := pod.Annotations[key]
		if !ok {
			return 0, false
		}
		q, err := resource.ParseQuantity(text)
		if err != nil || q.Sign() < 0 {
			return 0, false
		}
		return q.Value(), true
	}
	set := func(m *map[string]int64, name string, b int64) {
		if *m == nil {
			*m = map[string]int64{}
		}
		(*m)[name] = b
	}
	if containers {
		var ps *podstate.Pod
		if states != nil {
			var err error
			if ps, err = states.PodState(ctx, string(pod.UID)); err != nil {
				return nil, fmt.Errorf("reading the containers of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
		}
		count := func(name string, first bool) {
			if states != nil {
				if c := ps.Named(name); c == nil || c.State != podstate.ContainerRunning {
					return
				}
			}
			if b, ok := quantity(AnnotationEphemeralStorageUsage + "." + name); ok {
				set(&st.Rootfs, name, b)
			} else if b, ok := quantity(AnnotationEphemeralStorageUsage); ok && first {
				set(&st.Rootfs, name, b)
			}
		}
		for i := range pod.Spec.InitContainers {
			count(pod.Spec.InitContainers[i].Name, false)
		}
		for i := range pod.Spec.Containers {
			count(pod.Spec.Containers[i].Name, i == 0)
		}
		for i := range pod.Spec.EphemeralContainers {
			count(pod.Spec.EphemeralContainers[i].Name, false)
		}
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var key string
		switch {
		case vol.EmptyDir != nil:
			key = AnnotationEmptyDirUsage
		case vol.ConfigMap != nil:
			key = AnnotationConfigMapUsage
		default:
			continue
		}
		if b, ok := quantity(key + "." + vol.Name); ok {
			set(&st.Volumes, vol.Name, b)
		}
	}
	return st, nil
}

// HostProvider observes the machine the kubelet runs on (the cri runtime):
//   - memory.available is /proc/meminfo's MemTotal less the root cgroup's
//     working set, and allocatableMemory.available the pods cgroup's
//     (PodsCgroup) memory limit less its working set (none while it has
//     no limit, is not there or cannot be read), as upstream's summary
//     provider measures them (cgroupmem.go);
//   - nodefs.available and nodefs.inodesFree are statfs of RootDir;
//   - imagefs.available and imagefs.inodesFree are statfs of the image
//     filesystem CRI's ImageFsInfo names when Stats offers it (and it is
//     a directory here), otherwise the same filesystem as nodefs;
//   - pid.available is kernel.pid_max less the processes in /proc.
//
// Pods' usage comes from CRI's ListContainerStats when Stats is set and
// the runtime answers: memory working set and writable layer per
// container, processes per pod from ListPodSandboxStats, plus the pod's
// log files under LogsDir and its local ephemeral volumes (disk-backed
// emptyDirs, configMaps) under RootDir. Otherwise every container counts as using what it requests,
// so ranking falls back to priority among pods within their requests.
type HostProvider struct {
	RootDir string
	// LogsDir is where the runtime writes pod logs
	// (<LogsDir>/<namespace>_<name>_<uid>/; "": logs are not counted).
	LogsDir string
	// Stats measures containers (nil: requests stand in).
	Stats ContainerStatsLister
	// ProcDir is /proc unless set (tests).
	ProcDir string
	// CgroupDir is the cgroup filesystem, cgroup v1 or v2
	// (/sys/fs/cgroup unless set).
	CgroupDir string
	// PodsCgroup is the cgroup the pods run under, upstream's pods system
	// container (kubepods under --cgroup-root, as a cgroupfs path:
	// "/kubepods"), whose memory allocatableMemory.available measures;
	// "": none (the kubelet does not manage the node's cgroups).
	PodsCgroup string
}

// DefaultCgroupDir is where Linux mounts the cgroup filesystem.
const DefaultCgroupDir = "/sys/fs/cgroup"

// Observe implements Provider.
func (h HostProvider) Observe(ctx context.Context, pods []*v1.Pod) (Observations, []PodStats, error) {
	proc := h.ProcDir
	if proc == "" {
		proc = "/proc"
	}
	obs, err := h.observeMemory(proc)
	if err != nil {
		return nil, nil, fmt.Errorf("observing memory: %w", err)
	}
	st, err := statfsNearest(h.RootDir)
	if err != nil {
		return nil, nil, fmt.Errorf("observing filesystem of %s: %w", h.RootDir, err)
	}
	fs := Observation{Available: int64(st.Bavail) * st.Bsize, Capacity: int64(st.Blocks) * st.Bsize}
	obs[SignalNodeFsAvailable], obs[SignalImageFsAvailable] = fs, fs
	if st.Files > 0 {
		obs[SignalNodeFsInodesFree] = Observation{Available: int64(st.Ffree), Capacity: int64(st.Files)}
		obs[SignalImageFsInodesFree] = obs[SignalNodeFsInodesFree]
	}
	if mp := h.imageFsMountpoint(ctx); mp != "" {
		if img, err := statfsNearest(mp); err == nil {
			obs[SignalImageFsAvailable] = Observation{Available: int64(img.Bavail) * img.Bsize, Capacity: int64(img.Blocks) * img.Bsize}
			delete(obs, SignalImageFsInodesFree)
			if img.Files > 0 {
				obs[SignalImageFsInodesFree] = Observation{Available: int64(img.Ffree), Capacity: int64(img.Files)}
			}
		}
	}
	if max, n, err := pids(proc); err == nil {
		obs[SignalPIDAvailable] = Observation{Available: max - n, Capacity: max}
	}
	var byPod map[string]*measured
	if h.Stats != nil {
		byPod, _ = measure(ctx, h.Stats)
	}
	stats := make([]PodStats, 0, len(pods))
	for _, p := range pods {
		var m *measured
		if byPod != nil {
			m = byPod[string(p.UID)]
		}
		stats = append(stats, h.podStats(p, m))
	}
	return obs, stats, nil
}

// observeMemory reads memory.available and, with a pods cgroup,
// allocatableMemory.available (cgroupmem.go).
func (h HostProvider) observeMemory(proc string) (Observations, error) {
	dir := h.CgroupDir
	if dir == "" {
		dir = DefaultCgroupDir
	}
	b, err := os.ReadFile(proc + "/meminfo")
	if err != nil {
		return nil, err
	}
	total, err := memTotal(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s/meminfo: %w", proc, err)
	}
	unified, err := CgroupUnified(dir)
	if err != nil {
		return nil, err
	}
	root, err := readCgroupMemory(dir, "", unified)
	if err != nil {
		return nil, fmt.Errorf("root cgroup: %w", err)
	}
	node, err := nodeMemoryObservation(total, root, unified)
	if err != nil {
		return nil, err
	}
	obs := Observations{SignalMemoryAvailable: node}
	if h.PodsCgroup == "" {
		return obs, nil
	}
	// A pods cgroup not made yet, or whose files fail, gives no
	// allocatableMemory.available and leaves the other signals, as
	// upstream's summary provider skips a system container whose stats
	// fail (logged) and its eviction manager then has no such signal.
	pods, err := readCgroupMemory(dir, h.PodsCgroup, unified)
	if errors.Is(err, fs.ErrNotExist) {
		return obs, nil
	}
	o, ok := Observation{}, false
	if err == nil {
		o, ok, err = podsMemoryObservation(pods, unified)
	}
	if err != nil {
		slog.Debug("eviction: no allocatableMemory.available", "cgroup", h.PodsCgroup, "err", err)
	} else if ok {
		obs[SignalAllocatableMemoryAvailable] = o
	}
	return obs, nil
}

// memTotal is /proc/meminfo's MemTotal in bytes (text: the file), the
// machine's memory capacity as cadvisor reads it.
func memTotal(text string) (int64, error) {
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "MemTotal:" {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("MemTotal: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no MemTotal")
}

func pids(proc string) (pidMax, running int64, err error) {
	b, err := os.ReadFile(proc + "/sys/kernel/pid_max")
	if err != nil {
		return 0, 0, err
	}
	pidMax, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			running++
		}
	}
	return pidMax, running, nil
}
