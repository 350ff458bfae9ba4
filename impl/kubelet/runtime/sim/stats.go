package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Stats and image management of the simulated runtime
// (runtime.StatsProvider, runtime.ImageManager). What a container uses is
// read from the pod's annotations (suffix ".<container name>" for one
// container, as the fault annotations): nothing unless set.
const (
	// AnnotationMemoryUsage: a running container's memory working set, a
	// quantity ("300Mi").
	AnnotationMemoryUsage = "sim.kubeproof.io/memory-usage"
	// AnnotationCPUUsage: a running container's CPU use, a quantity of
	// cores ("250m").
	AnnotationCPUUsage = "sim.kubeproof.io/cpu-usage"
	// AnnotationDiskUsage: the bytes a container wrote to its writable
	// layer ("1Gi"); kept after it exits, until it is removed.
	AnnotationDiskUsage = "sim.kubeproof.io/disk-usage"
	// AnnotationProcesses: the number of processes a running container
	// runs (default 1).
	AnnotationProcesses = "sim.kubeproof.io/processes"
)

// DefaultImageSize is the size of a simulated image unless SetImageSize
// says otherwise.
const DefaultImageSize = 10 << 20

// diskState is the simulated image filesystem. Guarded by Runtime.mu.
type diskState struct {
	imageSizes map[string]uint64 // normalized image name -> size
	mountpoint string
}

var (
	_ runtime.StatsProvider = (*Runtime)(nil)
	_ runtime.ImageManager  = (*Runtime)(nil)
)

// SetImageSize sets the size ListImages and ImageFsInfo report for an
// image (present or pulled later), named by any spelling of its reference.
func (r *Runtime) SetImageSize(image string, bytes uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disk.imageSizes == nil {
		r.disk.imageSizes = map[string]uint64{}
	}
	r.disk.imageSizes[normalizedImage(image)] = bytes
}

// SetImageFsMountpoint sets the mountpoint ImageFsInfo reports (a real
// directory lets a kubelet statfs it for capacity).
func (r *Runtime) SetImageFsMountpoint(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disk.mountpoint = path
}

// imageSize is an image's size. r.mu is held.
func (r *Runtime) imageSize(name string) uint64 {
	if s, ok := r.disk.imageSizes[name]; ok {
		return s
	}
	return DefaultImageSize
}

// ListImages implements runtime.ImageManager: present images, by the
// name they were pulled as, with containerd's repo tags and repo digests
// (normalized references) and image user. The filter is ignored, as
// containerd's CRI ListImages ignores it (1.7 and 2.x: every image in its
// store, whatever the request's ImageFilter).
func (r *Runtime) ListImages(_ context.Context, _ *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.imageIDs))
	for id := range r.imageIDs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return r.imageIDs[ids[i]].name < r.imageIDs[ids[j]].name })
	out := make([]*runtimeapi.Image, 0, len(ids))
	for _, id := range ids {
		n := r.imageIDs[id]
		img := &runtimeapi.Image{Id: id, Size: r.imageSize(n.name)}
		if n.tag != "" {
			img.RepoTags = []string{n.tag}
		}
		if n.digest != id {
			img.RepoDigests = []string{n.digest}
		}
		if uid, user := r.imageUser(n.name); uid != nil {
			img.Uid = &runtimeapi.Int64Value{Value: *uid}
		} else {
			img.Username = user
		}
		out = append(out, img)
	}
	return out, nil
}

// RemoveImage implements runtime.ImageManager: image is an id or a
// reference of the image, and the image goes with every reference of it,
// as containerd's. As containerd, an image some container was created
// from can be removed (the container keeps running); an absent one is no
// error.
func (r *Runtime) RemoveImage(_ context.Context, image *runtimeapi.ImageSpec) error {
	if image.GetImage() == "" {
		return fmt.Errorf("remove image: no image given")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, err := r.resolveImage(image.Image)
	if err != nil {
		return resolveError(image.Image, err)
	}
	if id == "" {
		return nil
	}
	for ref, of := range r.images {
		if of == id {
			delete(r.images, ref)
		}
	}
	delete(r.imageIDs, id)
	return nil
}

// ImageFsInfo implements runtime.StatsProvider: one filesystem holding
// images and writable layers, its used bytes the images' sizes plus what
// containers wrote, one inode per image and container.
func (r *Runtime) ImageFsInfo(context.Context) ([]*runtimeapi.FilesystemUsage, []*runtimeapi.FilesystemUsage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var used, inodes uint64
	for _, n := range r.imageIDs {
		used += r.imageSize(n.name)
		inodes++
	}
	for _, c := range r.containers {
		used += r.usage(c).disk
		inodes++
	}
	fs := &runtimeapi.FilesystemUsage{
		Timestamp: r.clock.Now().UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: r.disk.mountpoint},
		UsedBytes: &runtimeapi.UInt64Value{Value: used}, InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
	}
	return []*runtimeapi.FilesystemUsage{fs}, nil, nil
}

// containerUsage is what a simulated container uses now.
type containerUsage struct {
	memory, nanoCores, disk, processes uint64
	cpuTotal                           uint64 // core-nanoseconds since start
}

// usage reads a container's usage from its pod's annotations. r.mu is
// held; c is refreshed by the caller.
func (r *Runtime) usage(c *container) containerUsage {
	var u containerUsage
	s := r.sandboxes[c.sandboxSeq]
	if s == nil {
		return u
	}
	name := c.meta.GetName()
	quantity := func(key string) (resource.Quantity, bool) {
		v, ok := lookup(s.annotations, key, name)
		if !ok {
			return resource.Quantity{}, false
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return resource.Quantity{}, false
		}
		return q, true
	}
	if q, ok := quantity(AnnotationDiskUsage); ok && c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		u.disk = uint64(q.Value())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return u
	}
	if q, ok := quantity(AnnotationMemoryUsage); ok {
		u.memory = uint64(q.Value())
	}
	if q, ok := quantity(AnnotationCPUUsage); ok {
		u.nanoCores = uint64(q.MilliValue()) * 1_000_000
		u.cpuTotal = uint64(float64(u.nanoCores) * r.clock.Since(c.started()).Seconds())
	}
	u.processes = 1
	if v, ok := lookup(s.annotations, AnnotationProcesses, name); ok {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			u.processes = n
		}
	}
	return u
}

// containerStats is CRI's ContainerStats of c. r.mu is held.
func (r *Runtime) containerStats(c *container, now time.Time) *runtimeapi.ContainerStats {
	u := r.usage(c)
	ts := now.UnixNano()
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: r.ids.id(c.seq), Metadata: c.meta, Labels: c.labels.toMap(), Annotations: c.annotations},
		Cpu: &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: u.cpuTotal},
			UsageNanoCores: &runtimeapi.UInt64Value{Value: u.nanoCores}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: u.memory},
			UsageBytes: &runtimeapi.UInt64Value{Value: u.memory}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: ts, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: r.disk.mountpoint},
			UsedBytes: &runtimeapi.UInt64Value{Value: u.disk}, InodesUsed: &runtimeapi.UInt64Value{Value: min(u.disk, 1)}},
	}
}

// ListContainerStats implements runtime.StatsProvider.
func (r *Runtime) ListContainerStats(_ context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var out []*runtimeapi.ContainerStats
	id, sandboxID := r.idFilter(filter.GetId()), r.idFilter(filter.GetPodSandboxId())
	for _, c := range r.sortedContainers() {
		if filter != nil && (!id.matches(c.seq) || !sandboxID.matches(c.sandboxSeq) || !c.labels.matches(filter.LabelSelector)) {
			continue
		}
		c.refresh(now)
		out = append(out, r.containerStats(c, now))
	}
	return out, nil
}

// sortedContainers are the containers oldest first. r.mu is held.
func (r *Runtime) sortedContainers() []*container {
	list := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	return list
}

// ListPodSandboxStats implements runtime.StatsProvider: a sandbox's
// memory, CPU and processes are its running containers' sums.
func (r *Runtime) ListPodSandboxStats(_ context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	ts := now.UnixNano()
	bySeq := map[uint64]*runtimeapi.PodSandboxStats{}
	var out []*runtimeapi.PodSandboxStats
	seqs := make([]uint64, 0, len(r.sandboxes))
	for seq := range r.sandboxes {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	id := r.idFilter(filter.GetId())
	for _, seq := range seqs {
		s := r.sandboxes[seq]
		if filter != nil && (!id.matches(s.seq) || !s.labels.matches(filter.LabelSelector)) {
			continue
		}
		st := &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: r.ids.id(s.seq), Metadata: s.metadata(), Labels: s.labels.toMap(), Annotations: s.annotations},
			Linux: &runtimeapi.LinuxPodSandboxStats{
				Cpu:     &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}, UsageNanoCores: &runtimeapi.UInt64Value{}},
				Memory:  &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}},
				Process: &runtimeapi.ProcessUsage{Timestamp: ts, ProcessCount: &runtimeapi.UInt64Value{}},
			},
		}
		bySeq[seq] = st
		out = append(out, st)
	}
	for _, c := range r.sortedContainers() {
		st := bySeq[c.sandboxSeq]
		if st == nil {
			continue
		}
		c.refresh(now)
		cs := r.containerStats(c, now)
		l := st.Linux
		l.Containers = append(l.Containers, cs)
		u := r.usage(c)
		l.Cpu.UsageCoreNanoSeconds.Value += u.cpuTotal
		l.Cpu.UsageNanoCores.Value += u.nanoCores
		l.Memory.WorkingSetBytes.Value += u.memory
		l.Memory.UsageBytes.Value += u.memory
		l.Process.ProcessCount.Value += u.processes
	}
	return out, nil
}
