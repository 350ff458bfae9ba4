package eviction

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// ContainerStatsLister is CRI's ListContainerStats, which a runtime client
// may offer; HostProvider measures pods with it when it is there. If it
// is a runtime.StatsProvider too, pod sandbox stats (process counts) and
// the image filesystem (ImageFsInfo) are used as well.
type ContainerStatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// measured is one pod's usage as the runtime reports it.
type measured struct {
	memory map[string]int64 // working set by container name
	disk   map[string]int64 // writable layer bytes by container name
	inodes map[string]int64
	pids   int64 // -1: not reported
}

// containerLister is CRI's ListContainers, which a runtime client
// offers: with it measure knows which containers run.
type containerLister interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// measure collects CRI container stats (and, when the runtime offers
// them, pod sandbox stats) by pod UID. When the runtime lists its
// containers, only running ones count, whatever their kind, as
// upstream's CRI stats provider drops exited containers
// (removeTerminatedContainers: a finished init container, an earlier
// instance of a restarted one). ok is false when the runtime did not
// answer ListContainerStats (or ListContainers).
func measure(ctx context.Context, l ContainerStatsLister) (map[string]*measured, bool) {
	var running map[string]struct{} // nil: states unknown, all count
	if cl, ok := l.(containerLister); ok {
		list, err := cl.ListContainers(ctx, &runtimeapi.ContainerFilter{})
		if err != nil {
			return nil, false
		}
		running = make(map[string]struct{}, len(list))
		for _, c := range list {
			if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running[c.GetId()] = struct{}{}
			}
		}
	}
	all, err := l.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, false
	}
	byPod := map[string]*measured{}
	pod := func(uid string) *measured {
		m := byPod[uid]
		if m == nil {
			m = &measured{memory: map[string]int64{}, disk: map[string]int64{}, inodes: map[string]int64{}, pids: -1}
			byPod[uid] = m
		}
		return m
	}
	for _, s := range all {
		labels := s.GetAttributes().GetLabels()
		uid, name := labels[runtime.LabelPodUID], labels[runtime.LabelContainerName]
		if uid == "" || name == "" {
			continue
		}
		if running != nil {
			if _, ok := running[s.GetAttributes().GetId()]; !ok {
				continue
			}
		}
		m := pod(uid)
		// Without container states, exited instances count too: they
		// report no memory, but their writable layers take disk.
		if ws := s.GetMemory().GetWorkingSetBytes(); ws != nil {
			m.memory[name] += int64(ws.Value)
		}
		// Every reported container has an entry (its logs count), 0 if
		// the runtime reports no writable layer.
		fs := s.GetWritableLayer()
		m.disk[name] += int64(fs.GetUsedBytes().GetValue())
		m.inodes[name] += int64(fs.GetInodesUsed().GetValue())
	}
	if sp, ok := l.(runtime.StatsProvider); ok {
		if sandboxes, err := sp.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{}); err == nil {
			for _, s := range sandboxes {
				uid := s.GetAttributes().GetLabels()[runtime.LabelPodUID]
				if uid == "" {
					uid = s.GetAttributes().GetMetadata().GetUid()
				}
				if n := s.GetLinux().GetProcess().GetProcessCount(); uid != "" && n != nil {
					m := pod(uid)
					m.pids = max(m.pids, 0) + int64(n.Value)
				}
			}
		}
	}
	return byPod, true
}

// podStats is one pod's usage: what the runtime measured for its
// containers (an app container it does not report keeps its request),
// plus its log files and local ephemeral volumes on the node filesystem
// (its emptyDirs of other media are measured for their sizeLimit only)
// and its managed hosts file (Storage.EtcHosts: for its limit, not the
// disk ranking).
// The local storage (Storage.Rootfs, Storage.Logs) is that of every
// container measure reports (the running ones), of any kind: app, init,
// sidecar or ephemeral, as upstream's pod ephemeral storage sums the
// rootfs and logs of every container its stats hold; without runtime
// stats, the app containers' logs.
func (h HostProvider) podStats(p *v1.Pod, m *measured) PodStats {
	ps := requestStats(p)
	st := &LocalStorage{Volumes: map[string]int64{}, Rootfs: map[string]int64{}, Logs: map[string]int64{}}
	ps.Storage = st
	if m != nil {
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			if used, ok := m.memory[c.Name]; ok {
				ps.Memory[c.Name] = used
			}
			if _, ok := m.disk[c.Name]; ok {
				ps.Disk -= containerRequest(c, v1.ResourceEphemeralStorage)
			}
		}
		for name, used := range m.disk {
			ps.Disk += used
			ps.Inodes += m.inodes[name]
			st.Rootfs[name] = used
		}
		if m.pids >= 0 {
			ps.PIDs = m.pids
		}
	}
	if h.LogsDir != "" {
		// <LogsDir>/<namespace>_<name>_<uid>/<container>/<attempt>.log
		// Each counted container's log directory, for the limits and the
		// ranking alike (upstream's podDiskUsage sums its containers'
		// logs): not those of a container that no longer runs.
		dir := filepath.Join(h.LogsDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
		logs := func(name string) {
			b, n := du(filepath.Join(dir, name))
			ps.Disk, ps.Inodes = ps.Disk+b, ps.Inodes+n
			if b > 0 {
				st.Logs[name] = b
			}
		}
		if m != nil {
			for name := range m.disk {
				logs(name)
			}
		} else {
			for i := range p.Spec.Containers {
				logs(p.Spec.Containers[i].Name)
			}
		}
	}
	// The kubelet-managed /etc/hosts (<pod dir>/etc-hosts): upstream's
	// getPodEtcHostsStats measures it (MetricsDu, absent for none) into
	// the pod's ephemeral storage, which its pod limit is checked against;
	// its disk ranking (podDiskUsage) leaves it out, as here.
	st.EtcHosts, _ = du(filepath.Join(h.RootDir, "pods", string(p.UID), EtcHostsFile))
	for i := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[i]
		plugin := measuredVolumePlugin(vol)
		if plugin == "" {
			continue
		}
		// As upstream's emptyDir and configMap plugins measure a volume
		// (MetricsDu of its directory: a memory emptyDir's tmpfs
		// included); only local ephemeral volumes add to the disk use.
		b, n := du(filepath.Join(h.RootDir, "pods", string(p.UID), "volumes", plugin, vol.Name))
		st.Volumes[vol.Name] = b
		if localEphemeralVolume(vol) {
			ps.Disk, ps.Inodes = ps.Disk+b, ps.Inodes+n
		}
	}
	return ps
}

// EtcHostsFile is the name, in a pod's directory, of the pod's managed
// hosts file (upstream's getEtcHostsPath): the kubelet writes it under
// this name and the HostProvider measures it.
const EtcHostsFile = "etc-hosts"

// duMaxEntries bounds one du walk: every pod's emptyDirs, configMaps and
// logs are walked each eviction interval (upstream's kubelet measures
// volumes in the background once a minute), so a directory of millions of
// files must not make an interval take seconds. Past the bound the walk
// stops and what it counted stands: use is under-counted, never over. (A
// variable for tests.)
var duMaxEntries int64 = 200_000

// errDuBound stops a walk at duMaxEntries.
var errDuBound = errors.New("du: entry bound reached")

// du is the bytes (allocated blocks) and inodes under dir, as upstream's
// DiskUsage (pkg/volume/util/fs) measures a volume: on dir's filesystem
// only (as du -x: a volume mounted inside is not the pod's local
// storage; a tmpfs mounted at dir itself is measured), a file of several
// hard links once, at most duMaxEntries entries; 0 if it does not exist.
func du(dir string) (bytes, inodes int64) {
	var dev uint64
	devKnown := false
	var entries int64
	var linked map[uint64]struct{} // made for the first hard-linked file
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if entries >= duMaxEntries {
			return errDuBound
		}
		entries++
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if ok {
			if !devKnown {
				dev, devKnown = uint64(st.Dev), true
			} else if uint64(st.Dev) != dev {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && st.Nlink > 1 {
				if _, seen := linked[st.Ino]; seen {
					return nil
				}
				if linked == nil {
					linked = map[uint64]struct{}{}
				}
				linked[st.Ino] = struct{}{}
			}
		}
		inodes++
		if ok {
			bytes += st.Blocks * 512
		} else {
			bytes += info.Size()
		}
		return nil
	})
	return bytes, inodes
}

// statfsNearest is statfs of dir, or of its nearest existing parent (the
// kubelet may not have created it yet).
func statfsNearest(dir string) (syscall.Statfs_t, error) {
	var st syscall.Statfs_t
	dir = filepath.Clean(dir)
	for {
		err := syscall.Statfs(dir, &st)
		if err == nil {
			return st, nil
		}
		if !errors.Is(err, syscall.ENOENT) || dir == filepath.Dir(dir) {
			return st, err
		}
		dir = filepath.Dir(dir)
	}
}

// imageFsMountpoint is where the runtime keeps images, from CRI's
// ImageFsInfo ("" if the runtime does not say or it is not a directory
// here).
func (h HostProvider) imageFsMountpoint(ctx context.Context) string {
	sp, ok := h.Stats.(runtime.StatsProvider)
	if !ok {
		return ""
	}
	imageFs, _, err := sp.ImageFsInfo(ctx)
	if err != nil || len(imageFs) == 0 {
		return ""
	}
	mp := imageFs[0].GetFsId().GetMountpoint()
	if mp == "" {
		return ""
	}
	if fi, err := os.Stat(mp); err != nil || !fi.IsDir() {
		return ""
	}
	return mp
}

// DedicatedImageFs implements DedicatedImageFsReporter: the runtime's
// image filesystem is another filesystem than the root directory's.
func (h HostProvider) DedicatedImageFs(ctx context.Context) bool {
	mp := h.imageFsMountpoint(ctx)
	if mp == "" {
		return false
	}
	root, err := statfsNearest(h.RootDir)
	if err != nil {
		return false
	}
	img, err := statfsNearest(mp)
	return err == nil && img.Fsid != root.Fsid
}
