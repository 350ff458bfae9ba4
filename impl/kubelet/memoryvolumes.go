package kubelet

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Memory-backed volumes and volume teardown, as upstream 1.37's volume
// plugins on Linux (pkg/volume/emptydir; the secret, downwardAPI and
// projected plugins set their volume up in an emptyDir of medium Memory
// they wrap, the configMap plugin in a disk-backed one):
//
//   - an emptyDir of medium Memory, a secret, a downwardAPI and a
//     projected volume (memoryBacked) is a tmpfs mounted at the volume's
//     directory on a real runtime's node (mountsTmpfs), sized as
//     upstream's calculateEmptyDirMemorySize (tmpfsSize: the node's
//     allocatable memory, or the pod's memory limit, or the emptyDir's
//     sizeLimit, whichever is least and set) with noswap where the kernel
//     has it (tmpfsNoswapSupported), as setupTmpfs mounts it: its pages
//     are charged to the memory cgroup of whoever writes them, so they
//     count towards the pod's memory (and its eviction), not its local
//     storage. The simulated runtime's nodes mount nothing (no root, and
//     their containers read no files): the directories are plain ones,
//     with the tmpfs root's mode (volumeDirMode). Only the set-up for a
//     new sandbox mounts over a directory it finds (setUpVolumes: not
//     the periodic refresh of a running pod's volumes, nor the one before
//     a container is started again; a kubelet before this one made them
//     plain directories, which the pod's running containers bound), and
//     not over an emptyDir's holding files (setUpTmpfs);
//   - once the pod has terminated, its volumes are torn down
//     (tearDownTerminatedVolumes), as upstream's volume manager unmounts a
//     terminated pod's volumes: subPath bind mounts undone first, then each
//     volume's directory unmounted if it is a tmpfs mount point and removed
//     with its contents (upstream's emptyDir TearDownAt, which the other
//     four plugins' teardowns call); the pod's sync fails (and is retried)
//     until that is done, and only then does the pod count as having its
//     volumes unmounted (no final delete before);
//   - a pod directory is removed (removePodDir, a pod gone from the API,
//     also one a restarted kubelet found on disk) only once its volumes
//     are torn down the same way and none of its volume directories is a
//     mount point any more, as upstream's cleanupOrphanedPodDirs refuses
//     while podVolumesExist; what is left of its volumes directory then
//     goes directories only (removeDirsOnly), as upstream's
//     removeOrphanedPodVolumeDirs: a file there stays, with the pod
//     directory.
//
// An emptyDir of medium HugePages or HugePages-<size> is a hugetlbfs of
// the page size the pod requests (hugePageSize, upstream's
// getPageSizeMountOption: a pod requesting no such pages, or several sizes
// for HugePages, fails the volume's set-up on every node), mounted on a
// real runtime's node as upstream's setupHugepages, and torn down as a
// tmpfs is.

// tmpfsMagic and hugetlbfsMagic are statfs(2)'s f_type of a tmpfs
// (TMPFS_MAGIC) and of a hugetlbfs (HUGETLBFS_MAGIC).
const (
	tmpfsMagic     = 0x01021994
	hugetlbfsMagic = 0x958458f6
)

// memoryBacked reports whether v is set up on a tmpfs, as upstream's
// plugins wrap it: an emptyDir of medium Memory, a secret, a downwardAPI
// or a projected volume (a configMap's wrapped emptyDir is disk-backed).
func memoryBacked(v *v1.Volume) bool {
	switch {
	case v.EmptyDir != nil:
		return v.EmptyDir.Medium == v1.StorageMediumMemory
	case v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
		return true
	}
	return false
}

// tmpfsSize is the size in bytes of a memory-backed volume v's tmpfs, as
// upstream's calculateEmptyDirMemorySize (SizeMemoryBackedVolumes, GA):
// the node's allocatable memory; the pod's memory limit instead if it has
// one (its cgroup's, podCgroupConfig: every container limits memory, or
// the pod does) above 0 and not above that; an emptyDir's sizeLimit
// instead if above 0 and not above what was reached. The wrapped emptyDir
// of a secret, downwardAPI or projected volume has no sizeLimit. 0 means
// no size given (the kernel's default, half the memory), as when the
// allocatable memory is 0.
func tmpfsSize(pod *v1.Pod, v *v1.Volume, allocatableMemory int64) int64 {
	size := allocatableMemory
	if lim := podCgroupConfig(pod).memory; lim > 0 && lim <= size {
		size = lim
	}
	if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
		if lim := v.EmptyDir.SizeLimit.Value(); lim > 0 && lim <= size {
			size = lim
		}
	}
	return size
}

// tmpfsMountData is the tmpfs mount options of a volume of size bytes, as
// upstream's generateTmpfsMountOptions: size=<bytes> when above 0, and
// noswap when the kernel has it.
func tmpfsMountData(size int64, noswap bool) string {
	var opts []string
	if size > 0 {
		opts = append(opts, "size="+strconv.FormatInt(size, 10))
	}
	if noswap {
		opts = append(opts, "noswap")
	}
	return strings.Join(opts, ",")
}

// tmpfsNoswapSupported reports whether a tmpfs can be mounted with
// noswap, as upstream's IsTmpfsNoswapOptionSupported, once per process
// (tmpfsNoswapCheck), its trial mount made in a directory under dir, the
// first caller's, as upstream's sync.Once keeps its first caller's
// mountPath: the kubelet's root directory at start (warnMemoryVolumesOnDisk,
// upstream's container manager's KubeletRootDir) or the emptyDir plugin's
// directory (noswapTrialDir) at a tmpfs's set-up.
var tmpfsNoswapSupported = func(log *slog.Logger, dir string) bool {
	noswapOnce.Do(func() {
		release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
		uidMap, err := os.ReadFile("/proc/self/uid_map")
		userNS := err == nil && inUserNS(string(uidMap))
		noswapOnce.ok = tmpfsNoswapCheck(log, userNS, strings.TrimSpace(string(release)), dir, func(dir string) error { return mountNoswapTrial(log, dir) })
	})
	return noswapOnce.ok
}

var noswapOnce struct {
	sync.Once
	ok bool
}

// tmpfsNoswapCheck reports whether a tmpfs takes noswap on the kernel
// release (uname -r), as upstream's IsTmpfsNoswapOptionSupported: not in
// a user namespace (userNS: the kernel refuses noswap to an unprivileged
// tmpfs mount); not if the release does not read as a kernel version
// (upstream's GetVersion error: no trial either); a kernel of 6.4 or
// later has it; on an older one a temporary directory
// tmpfs-noswap-test-* is made under parent (not made: not supported, as
// upstream's, which tries no other place), mount tries the noswap tmpfs
// there, and the directory is removed after.
func tmpfsNoswapCheck(log *slog.Logger, userNS bool, release, parent string, mount func(dir string) error) bool {
	if userNS {
		log.Info("Running under a user namespace - tmpfs noswap is not supported")
		return false
	}
	if _, _, ok := kernelVersion(release); !ok {
		log.Error("Cannot determine kernel version, unable to determine is tmpfs noswap is supported", "release", release)
		return false
	}
	if kernelAtLeast(release, 6, 4) {
		return true
	}
	dir, err := os.MkdirTemp(parent, "tmpfs-noswap-test-")
	if err != nil {
		log.Info("Error creating dir to test if tmpfs noswap is enabled. Assuming not supported", "mount path", parent, "err", err)
		return false
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			log.Error("Error removing test tmpfs dir", "mount path", dir, "err", err)
		}
	}()
	if err := mount(dir); err != nil {
		log.Info("Error mounting tmpfs with the noswap option. Assuming not supported", "err", err)
		return false
	}
	return true
}

// inUserNS reports whether the process runs in a user namespace other
// than the initial one, from /proc/self/uid_map's contents, as upstream's
// RunningInUserNS: the initial namespace maps the whole range, its first
// line "0 0 4294967295"; an empty first line (a new namespace's, not yet
// mapped) is one; a first line that does not start with three numbers is
// taken for the initial namespace (upstream's Sscanf error); an empty
// file is not told apart (not one).
func inUserNS(uidMap string) bool {
	if uidMap == "" {
		return false
	}
	line, _, _ := strings.Cut(uidMap, "\n")
	if line == "" {
		return true
	}
	f := strings.Fields(line)
	if len(f) < 3 {
		return false
	}
	var n [3]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return false
		}
		n[i] = v
	}
	return n != [3]int64{0, 0, 4294967295}
}

// mountNoswapTrial mounts a tmpfs with noswap at dir and unmounts it.
func mountNoswapTrial(log *slog.Logger, dir string) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "noswap"); err != nil {
		return fmt.Errorf("mounting a noswap tmpfs at %s: %w", dir, err)
	}
	if err := syscall.Unmount(dir, 0); err != nil {
		log.Error("Error unmounting test tmpfs dir", "mount path", dir, "err", err)
	}
	return nil
}

// noswapTrialDir is where setUpTmpfs has tmpfsNoswapSupported make its
// trial mount: the emptyDir plugin's directory under the kubelet's root,
// <root>/plugins/kubernetes.io/empty-dir, as upstream's setupTmpfs passes
// GetPluginDir of the plugin's name; where it is missing, a kernel older
// than 6.4 counts as without noswap (unless the check ran at start), as
// upstream's.
func (k *Kubelet) noswapTrialDir() string {
	return filepath.Join(k.cfg.RootDir, "plugins", "kubernetes.io", "empty-dir")
}

// kernelAtLeast reports whether the kernel release (uname -r, say
// "6.18.44-fc-v669") is major.minor or later; one it cannot read is not.
func kernelAtLeast(release string, major, minor int) bool {
	ma, mi, ok := kernelVersion(release)
	return ok && (ma > major || ma == major && mi >= minor)
}

// kernelVersion reads the major and minor version of a kernel release,
// as upstream's GetVersion reads it (ParseGeneric: at least two numbers
// separated by a dot, anything after); ok false if it does not.
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	ma, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, false
	}
	mi := parts[1]
	if i := strings.IndexFunc(mi, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mi = mi[:i]
	}
	n, err := strconv.Atoi(mi)
	if err != nil {
		return 0, 0, false
	}
	return ma, n, true
}

// mountsTmpfs reports whether the kubelet mounts its pods' memory-backed
// volumes (a real runtime's kubelet, as upstream's) rather than leaving
// them plain directories (the simulated runtime's).
func (k *Kubelet) mountsTmpfs() bool { return k.rt.Type() != "sim" }

// setUpTmpfs mounts a tmpfs at dir, the directory of pod's memory-backed
// volume v, sized by tmpfsSize, unless one is mounted there already, as
// upstream's setupTmpfs; mounted says whether it did. It comes here for a
// directory it found only for a new sandbox (setUpVolumes): nothing of
// the pod runs, a secret, downwardAPI or projected volume is mounted and
// its files written again, as upstream's remount of it; but an emptyDir
// whose directory holds files (a kubelet before this one made it a plain
// directory) is not mounted over, its files would be hidden from the
// containers started next (upstream's volume manager does not set an
// emptyDir up again once it has).
func (k *Kubelet) setUpTmpfs(pod *v1.Pod, v *v1.Volume, dir string) (mounted bool, err error) {
	onTmpfs, err := tmpfsMountPoint(dir)
	if err != nil || onTmpfs {
		return false, err
	}
	if v.EmptyDir != nil {
		if empty, err := dirEmpty(dir); err != nil || !empty {
			if err == nil {
				k.log.Info("Memory-backed emptyDir holds files and is no tmpfs; not mounted over", "volume", v.Name, "path", dir)
			}
			return false, err
		}
	}
	mem := k.allocatable[v1.ResourceMemory]
	data := tmpfsMountData(tmpfsSize(pod, v, mem.Value()), tmpfsNoswapSupported(k.log, k.noswapTrialDir()))
	k.log.Debug("Mounting tmpfs for volume", "path", dir, "options", data)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, data); err != nil {
		return false, fmt.Errorf("mount failed: mounting tmpfs at %s with options %q: %w", dir, data, err)
	}
	return true, nil
}

// dirEmpty reports whether the directory dir has no entries.
func dirEmpty(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}

// tmpfsMountPoint reports whether dir is the root of a tmpfs mount (a
// tmpfs whose device is not its parent's), as upstream's GetMountMedium
// tells a memory medium that is a mount point.
func tmpfsMountPoint(dir string) (bool, error) {
	st, mnt, err := mountStatfs(dir)
	return mnt && st.Type == tmpfsMagic, err
}

// mountStatfs is statfs(2) of dir when it is a mount point (mnt).
func mountStatfs(dir string) (st syscall.Statfs_t, mnt bool, err error) {
	if mnt, err = mountPoint(dir); err != nil || !mnt {
		return st, false, err
	}
	if err := syscall.Statfs(dir, &st); err != nil {
		return st, false, fmt.Errorf("statfs(%q): %w", dir, err)
	}
	return st, true, nil
}

// mountPoint reports whether path is a mount point as upstream's
// IsLikelyNotMountPoint tells (its device not its parent's; a bind mount
// of the same filesystem is not seen).
func mountPoint(path string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return false, err
	}
	if err := syscall.Stat(filepath.Dir(path), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// tearDownVolumeDir tears down a volume's directory as upstream's emptyDir
// TearDownAt: nothing if it is missing; a tmpfs or hugetlbfs mount point
// is unmounted (a symlink at dir not followed), then the directory is
// removed with its contents.
func tearDownVolumeDir(dir string) error {
	st, mnt, err := mountStatfs(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error checking the medium of %s: %w", dir, err)
	}
	if mnt && (st.Type == tmpfsMagic || st.Type == hugetlbfsMagic) {
		if err := syscall.Unmount(dir, umountNoFollow); err != nil {
			return fmt.Errorf("unmount failed: %s: %w", dir, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing volume directory %s: %w", dir, err)
	}
	return nil
}

// tearDownTerminatedVolumes tears down the volumes of pod once it has
// terminated (nothing of it runs or starts again), while it may still be
// in the API (a finished Job's pod), as upstream's volume manager
// unmounts a terminated pod's volumes (its desired state drops the pod
// once ShouldPodRuntimeBeRemoved) and its status manager deletes a pod
// only once they are: its subPath bind mounts (cleanTerminatedSubPaths),
// then its emptyDir, configMap, secret, downwardAPI and projected volumes
// (tearDownVolumeDir: unmounted when a tmpfs, removed). The caller fails
// the sync (retried) and sends no final delete on an error; the pod
// directory stays until the pod is gone (cleanupPod). A volume already
// torn down costs a stat.
func (k *Kubelet) tearDownTerminatedVolumes(pod *v1.Pod) error {
	if err := k.cleanTerminatedSubPaths(pod); err != nil {
		return err
	}
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		plugin := volumePlugin(v)
		if plugin == "" {
			continue
		}
		if err := tearDownVolumeDir(k.volumeDir(pod.UID, plugin, v.Name)); err != nil {
			errs = append(errs, fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", v.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		k.log.Error("Failed to tear down the volumes of a terminated pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return fmt.Errorf("tearing down the volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// tearDownPodDirVolumes tears down (tearDownVolumeDir) every volume
// directory found under the pod directory podDir of the plugins the
// kubelet sets up, as upstream's volume manager tears down the volumes it
// reconstructs from disk for a pod it no longer has.
func tearDownPodDirVolumes(podDir string) error {
	var errs []error
	for _, plugin := range volumePlugins {
		dir := filepath.Join(podDir, "volumes", plugin)
		vols, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", dir, err))
			continue
		}
		for _, v := range vols {
			if err := tearDownVolumeDir(filepath.Join(dir, v.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeDirsOnly removes dir and the directories under it, as upstream's
// RemoveDirsOneFilesystem removes an orphaned pod's volumes directory
// once its volumes are torn down: anything else there (a file, a
// symlink: what a volume the kubelet did not tear down holds, a bind
// mount of the same filesystem included, which no device comparison
// tells) is an error ("not a directory") and stays, and a mount point is
// not entered. Nothing if dir is missing.
func removeDirsOnly(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			return &fs.PathError{Op: "rmdir", Path: p, Err: syscall.ENOTDIR}
		}
		if mnt, err := mountPoint(p); err != nil || mnt {
			if err == nil {
				err = fmt.Errorf("cannot delete directory %s: it is a mount point", p)
			}
			return err
		}
		if err := removeDirsOnly(p); err != nil {
			return err
		}
	}
	if err := syscall.Rmdir(dir); err != nil {
		return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	return nil
}

// EventPossibleMemoryBackedVolumesOnDisk is upstream's Warning on the
// Node when memory-backed volumes may be swapped out.
const EventPossibleMemoryBackedVolumesOnDisk = "PossibleMemoryBackedVolumesOnDisk"

// warnMemoryVolumesOnDisk records upstream's PossibleMemoryBackedVolumesOnDisk
// warning on the Node at start, as its NewContainerManager does, when the
// node has swap (the kubelet let run with --fail-swap-on=false) and its
// tmpfs has no noswap (tmpfsNoswapSupported): a real runtime's node only,
// the simulated runtime's mounting no tmpfs.
func (k *Kubelet) warnMemoryVolumesOnDisk() {
	if !k.mountsTmpfs() || k.cfg.SwapCapacity.Sign() <= 0 || tmpfsNoswapSupported(k.log, k.cfg.RootDir) {
		return
	}
	k.nodeEvent(v1.EventTypeWarning, EventPossibleMemoryBackedVolumesOnDisk,
		"The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) might be swapped to disk and should no longer be considered secure.")
}

// hugePagesMedium reports whether m is a huge pages medium: HugePages or
// HugePages-<size>.
func hugePagesMedium(m v1.StorageMedium) bool {
	return m == v1.StorageMediumHugePages || strings.HasPrefix(string(m), string(v1.StorageMediumHugePagesPrefix))
}

// hugePageSize is the page size of pod's emptyDir of huge pages medium,
// as upstream's getPageSizeMountOption: of the huge page sizes the pod
// requests (its pod-level requests, PodLevelResources being on, and every
// app and init container's), HugePages takes the one there is (several
// are an error), HugePages-<size> that size if requested; none is an
// error.
func hugePageSize(medium v1.StorageMedium, pod *v1.Pod) (resource.Quantity, error) {
	var want resource.Quantity
	if medium != v1.StorageMediumHugePages {
		q, err := resource.ParseQuantity(strings.TrimPrefix(string(medium), string(v1.StorageMediumHugePagesPrefix)))
		if err != nil {
			return resource.Quantity{}, fmt.Errorf("size not specified in %q: %w", medium, err)
		}
		want = q
	}
	var found bool
	var size resource.Quantity
	check := func(l v1.ResourceList) error {
		for name := range l {
			if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				continue
			}
			q, err := resource.ParseQuantity(strings.TrimPrefix(string(name), v1.ResourceHugePagesPrefix))
			if err != nil {
				return fmt.Errorf("size not specified in %q: %w", name, err)
			}
			switch {
			case medium == v1.StorageMediumHugePages:
				if found && size.Cmp(q) != 0 {
					return fmt.Errorf("medium: %s can't be used if container requests multiple huge page sizes", medium)
				}
				found, size = true, q
			case q.Cmp(want) == 0:
				found, size = true, q
			}
		}
		return nil
	}
	if pod.Spec.Resources != nil {
		if err := check(pod.Spec.Resources.Requests); err != nil {
			return resource.Quantity{}, err
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if err := check(cs[i].Resources.Requests); err != nil {
				return resource.Quantity{}, err
			}
		}
	}
	if !found {
		return resource.Quantity{}, fmt.Errorf("medium %s: hugePages storage requested, but there is no resource request for huge pages", medium)
	}
	return size, nil
}

// setUpHugetlbfs mounts a hugetlbfs of pageSize pages at dir, the
// directory of pod's emptyDir of huge pages medium, unless one is mounted
// there already (for HugePages-<size>, of that page size: another is an
// error), as upstream's setupHugepages; mounted says whether it did.
func (k *Kubelet) setUpHugetlbfs(pod *v1.Pod, medium v1.StorageMedium, dir string, pageSize resource.Quantity) (mounted bool, err error) {
	st, mnt, err := mountStatfs(dir)
	if err != nil {
		return false, err
	}
	if mnt && st.Type == hugetlbfsMagic {
		if medium == v1.StorageMediumHugePages || st.Bsize == pageSize.Value() {
			return false, nil
		}
		return false, fmt.Errorf("pod %v: mounted dir %s pagesize '%s' and requested medium size '%s' differ",
			pod.UID, dir, resource.NewQuantity(st.Bsize, resource.BinarySI).String(), pageSize.String())
	}
	data := "pagesize=" + pageSize.String()
	k.log.Debug("Mounting hugepages for volume", "path", dir, "options", data)
	if err := syscall.Mount("nodev", dir, "hugetlbfs", 0, data); err != nil {
		return false, fmt.Errorf("mount failed: mounting hugetlbfs at %s with options %q: %w", dir, data, err)
	}
	return true, nil
}
