package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// subPath mounts made safe as upstream's kubelet makes them on Linux
// (pkg/volume/util/subpath/subpath_linux.go; the search index holds one
// copy of it, not tagged 1.37): a kubelet of a real runtime opens the
// subPath from its volume component by component with openat(O_NOFOLLOW)
// (safeOpen: a symlink swapped in after the checks is refused, not
// followed) and bind-mounts the opened descriptor (/proc/<pid>/fd/<fd>)
// at <pod dir>/volume-subpaths/<volume>/<container>/<index>, the path the
// runtime is given (bindSubPath); the mounts go when the pod's volumes do:
// once the pod has terminated (cleanTerminatedSubPaths) and, at the
// latest, before its directory is removed (cleanPodSubPaths; a restarted
// kubelet adopts the pod directories it finds, so a gone pod's are
// cleaned up too). A kubelet of the simulated runtime mounts nothing (it
// runs without root, and its containers read no files): it keeps the
// checks of prepareSubPath and pays nothing for this.

const (
	// volumeSubpathsDir is the pod directory's directory of subPath bind
	// mounts (upstream's containerSubPathDirectoryName).
	volumeSubpathsDir = "volume-subpaths"
	// oPath is O_PATH, which package syscall does not define: this value
	// on every Linux GOARCH Go supports (golang.org/x/sys/unix's tables
	// differ only for sparc64, which Go does not support); other GOOSes
	// do not build package kubelet (its eviction package's Statfs_t use
	// already), so no build tag is needed.
	oPath = 0x200000
	// umountNoFollow is UMOUNT_NOFOLLOW (the same on every architecture):
	// a symlink at the unmounted path is not followed.
	umountNoFollow = 0x8
)

// bindsSubPaths reports whether the kubelet bind-mounts its subPath mounts
// (a real runtime's kubelet, as upstream's) rather than giving the runtime
// the checked path (the simulated runtime's).
func (k *Kubelet) bindsSubPaths() bool { return k.rt.Type() != "sim" }

// safeOpen opens path, which must be base or under it (both clean, their
// symlinks resolved), from base one component at a time with
// openat(O_PATH|O_NOFOLLOW), as upstream's doSafeOpen: base itself must not
// be a symlink, and a component that is one ("unexpected symlink found")
// or leads out of base is refused, so what is opened is inside base
// whatever a container did to the volume since the path was resolved. The
// descriptor is the caller's to close.
func safeOpen(path, base string) (int, error) {
	path, base = filepath.Clean(path), filepath.Clean(base)
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return -1, err
	}
	parent, err := syscall.Open(base, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cannot open directory %s: %w", base, err)
	}
	current := base
	for seg := range strings.SplitSeq(rel, "/") {
		current = filepath.Join(current, seg)
		if !pathWithin(current, base) {
			syscall.Close(parent)
			return -1, fmt.Errorf("path %s is outside of allowed base %s", current, base)
		}
		child, err := openat(parent, seg, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		syscall.Close(parent)
		if err != nil {
			return -1, fmt.Errorf("cannot open %s: %w", current, err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(child, &st); err != nil {
			syscall.Close(child)
			return -1, fmt.Errorf("error running fstat on %s with %w", current, err)
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			syscall.Close(child)
			return -1, fmt.Errorf("unexpected symlink found %s", current)
		}
		parent = child
	}
	return parent, nil
}

// openat is openat(2), retried on EINTR.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, mode)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// safeMakeDir creates the missing directories of host, a path in the
// volume at base, with mode (its permission, sticky, setgid and setuid
// bits, fchmod-ed after each mkdir so that the umask does not narrow
// them), as upstream's SafeMakeDir: the deepest existing directory above
// host, its symlinks resolved, must be in the volume, is opened from the
// volume without following symlinks (safeOpen), and each directory is made
// with mkdirat in its parent's descriptor and opened without following
// symlinks before the next, so nothing is made outside the volume even if
// a container swaps a directory for a symlink meanwhile. An existing
// host is left as it is (a directory) or an error (anything else).
func safeMakeDir(host, base string, mode os.FileMode) error {
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %s: %w", base, err)
	}
	rel, err := filepath.Rel(base, host)
	if err != nil {
		return err
	}
	pathname := filepath.Join(realBase, rel)
	if !pathWithin(pathname, realBase) {
		return fmt.Errorf("path %s is outside of allowed base %s", pathname, realBase)
	}
	if st, err := os.Stat(pathname); err == nil {
		if st.IsDir() {
			return nil
		}
		return &os.PathError{Op: "mkdir", Path: pathname, Err: syscall.ENOTDIR}
	}
	existing, toCreate, err := existingPrefix(realBase, pathname)
	if err != nil {
		return fmt.Errorf("error opening directory %s: %w", pathname, err)
	}
	fullExisting, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("error opening directory %s: %w", existing, err)
	}
	if !pathWithin(fullExisting, realBase) {
		return fmt.Errorf("path %s is outside of allowed base %s", fullExisting, realBase)
	}
	parent, err := safeOpen(fullExisting, realBase)
	if err != nil {
		return fmt.Errorf("cannot open directory %s: %w", existing, err)
	}
	defer func() { syscall.Close(parent) }()
	perm := uint32(mode.Perm())
	if mode&os.ModeSetgid != 0 {
		perm |= syscall.S_ISGID
	}
	if mode&os.ModeSetuid != 0 {
		perm |= syscall.S_ISUID
	}
	if mode&os.ModeSticky != 0 {
		perm |= syscall.S_ISVTX
	}
	current := fullExisting
	for _, dir := range toCreate {
		current = filepath.Join(current, dir)
		if err := syscall.Mkdirat(parent, dir, uint32(mode.Perm())); err != nil {
			return fmt.Errorf("cannot create directory %s: %w", current, err)
		}
		child, err := openat(parent, dir, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open %s: %w", current, err)
		}
		syscall.Close(parent)
		parent = child
		if err := syscall.Fchmod(parent, perm); err != nil {
			return fmt.Errorf("chmod %q failed: %w", current, err)
		}
	}
	return nil
}

// existingPrefix is the deepest existing path of pathname under base
// (following symlinks, as upstream's findExistingPrefix) and the names of
// the directories below it still to be made.
func existingPrefix(base, pathname string) (string, []string, error) {
	rel, err := filepath.Rel(base, pathname)
	if err != nil {
		return base, nil, err
	}
	dirs := strings.Split(rel, "/")
	fd, err := syscall.Open(base, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return pathname, nil, fmt.Errorf("error opening %s: %w", base, err)
	}
	defer func() { syscall.Close(fd) }()
	current := base
	for i, dir := range dirs {
		// O_PATH: a directory swapped for a FIFO does not block the open.
		child, err := openat(fd, dir, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, syscall.ENOENT) {
				return current, dirs[i:], nil
			}
			return base, nil, err
		}
		syscall.Close(fd)
		fd = child
		current = filepath.Join(current, dir)
	}
	return pathname, nil, nil
}

// subPathTarget is where the index-th volume mount of container, a
// subPath of volume, is bind-mounted in the pod directory podDir
// (upstream's getSubpathBindTarget; a container name is a DNS label).
func subPathTarget(podDir, volume, container string, index int) string {
	return filepath.Join(podDir, volumeSubpathsDir, volume, container, strconv.Itoa(index))
}

// subPathOpened, set by tests only, runs in bindSubPath between the
// subPath's opening and its mount: where a container may swap it.
var subPathOpened func()

// bindSubPath bind-mounts path, a subPath in the volume at volumePath, at
// its subPathTarget and returns that target, as upstream's doBindSubPath:
// both resolved through their symlinks, path must stay in the volume
// ("subpath ... not within volume path ..."), is opened from the volume
// without following symlinks (safeOpen) and the opened descriptor is
// what is mounted, so a symlink swapped in later changes nothing. A
// target already holding that file or directory is kept (a container
// started again); one holding something else (a configMap's payload
// since changed) is unmounted and mounted anew. A failed mount leaves no
// target behind.
func bindSubPath(podDir, volume, container string, index int, path, volumePath string) (string, error) {
	resolved, base, err := resolveWithin(path, volumePath)
	if err != nil {
		return "", err
	}
	fd, err := safeOpen(resolved, base)
	if err != nil {
		return "", fmt.Errorf("error opening subpath %v: %w", resolved, err)
	}
	defer syscall.Close(fd)
	var src syscall.Stat_t
	if err := syscall.Fstat(fd, &src); err != nil {
		return "", fmt.Errorf("error running fstat on %s: %w", resolved, err)
	}
	target := subPathTarget(podDir, volume, container, index)
	var cur syscall.Stat_t
	switch err := syscall.Lstat(target, &cur); {
	case err == nil && cur.Dev == src.Dev && cur.Ino == src.Ino:
		return target, nil // mounted already
	case err == nil:
		// Something else: whatever is mounted there goes, then the
		// (empty) mount point, which may be of the wrong kind.
		if err := unmountAll(target); err != nil {
			return "", fmt.Errorf("error ummounting %s: %w", target, err)
		}
		if err := os.Remove(target); err != nil {
			return "", fmt.Errorf("error removing %s: %w", target, err)
		}
	case !errors.Is(err, syscall.ENOENT):
		return "", fmt.Errorf("error checking path %s for mount: %w", target, err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", fmt.Errorf("error creating directory %s: %w", filepath.Dir(target), err)
	}
	if src.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("error creating directory %s: %w", target, err)
		}
	} else {
		// A file is a mount point for anything not a directory.
		if err := os.WriteFile(target, nil, 0o640); err != nil {
			return "", fmt.Errorf("error creating file %s: %w", target, err)
		}
	}
	if subPathOpened != nil {
		subPathOpened()
	}
	source := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(fd)
	if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
		if cerr := cleanSubPath(podDir, target); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return "", fmt.Errorf("error mounting %s: %w", resolved, err)
	}
	return target, nil
}

// cleanSubPath removes one subPath target (unmountAll, then the mount
// point) and the directories above it that it leaves empty, up to podDir
// (upstream's cleanSubPath and removeEmptyDirs).
func cleanSubPath(podDir, target string) error {
	if err := cleanMountPoint(target); err != nil {
		return err
	}
	for dir := filepath.Dir(target); dir != podDir && pathWithin(dir, podDir); dir = filepath.Dir(dir) {
		if err := os.Remove(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if errors.Is(err, fs.ErrExist) { // not empty
				break
			}
			return fmt.Errorf("error removing directory %q: %w", dir, err)
		}
	}
	return nil
}

// cleanMountPoint unmounts whatever is mounted at path and removes the
// mount point (upstream's CleanupMountPoint): never anything under it, so
// a mount that stays (busy) is an error, not its content deleted.
func cleanMountPoint(path string) error {
	if err := unmountAll(path); err != nil {
		return fmt.Errorf("error cleaning subpath mount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("error cleaning subpath mount %s: %w", path, err)
	}
	return nil
}

// unmountAll unmounts path (not following a symlink there) until nothing
// is mounted at it (EINVAL: not a mount point).
func unmountAll(path string) error {
	for range 16 {
		err := syscall.Unmount(path, umountNoFollow)
		switch {
		case err == nil, errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOENT):
			return nil
		}
		return err
	}
	return fmt.Errorf("%s: still mounted after 16 unmounts", path)
}

// cleanSubPaths tears down the subPath bind mounts of volume in the pod
// directory podDir, as upstream's CleanSubPaths when a volume is unmounted:
// each target is unmounted and removed, then its container's and the
// volume's directories, then volume-subpaths if that left it empty. Not
// having any is no error.
func cleanSubPaths(podDir, volume string) error {
	dir := filepath.Join(podDir, volumeSubpathsDir, volume)
	containers, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("error reading %s: %w", dir, err)
	}
	for _, c := range containers {
		if !c.IsDir() {
			continue
		}
		cdir := filepath.Join(dir, c.Name())
		targets, err := os.ReadDir(cdir)
		if err != nil {
			return fmt.Errorf("error processing %s: %w", cdir, err)
		}
		for _, t := range targets {
			if err := cleanMountPoint(filepath.Join(cdir, t.Name())); err != nil {
				return fmt.Errorf("error processing %s: %w", cdir, err)
			}
		}
		if err := os.Remove(cdir); err != nil {
			return fmt.Errorf("error deleting %s: %w", cdir, err)
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("error deleting %s: %w", dir, err)
	}
	top := filepath.Join(podDir, volumeSubpathsDir)
	if err := os.Remove(top); err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("error deleting %s: %w", top, err)
	}
	return nil
}

// cleanPodSubPaths is cleanSubPaths of every volume with subPath mounts
// in the pod directory podDir: what the pod's volumes' teardown does
// before the directory is removed.
func cleanPodSubPaths(podDir string) error {
	vols, err := os.ReadDir(filepath.Join(podDir, volumeSubpathsDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("error reading %s: %w", filepath.Join(podDir, volumeSubpathsDir), err)
	}
	for _, v := range vols {
		if err := cleanSubPaths(podDir, v.Name()); err != nil {
			return err
		}
	}
	return nil
}

// cleanTerminatedSubPaths undoes the subPath bind mounts of pod once it
// has terminated (nothing of it runs or starts again), while it may still
// be in the API (a finished Job's pod), as upstream's volume manager
// unmounts a terminated pod's volumes (its desired state drops the pod
// once ShouldPodRuntimeBeRemoved; UnmountVolume runs CleanSubPaths
// first) and its status manager deletes a pod from the API only once they
// are: the first step of tearDownTerminatedVolumes (memoryvolumes.go),
// whose caller fails the sync (retried) and sends no final delete on an
// error. Nothing on simulated nodes, nor for a pod without a subPath
// mount (no system call).
func (k *Kubelet) cleanTerminatedSubPaths(pod *v1.Pod) error {
	if !k.bindsSubPaths() || !hasSubPathMount(pod.Spec.InitContainers) && !hasSubPathMount(pod.Spec.Containers) {
		return nil
	}
	if err := cleanPodSubPaths(k.podDir(pod.UID)); err != nil {
		k.log.Error("Failed to clean the subPath mounts of a terminated pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return fmt.Errorf("error cleaning subPath mounts of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// hasSubPathMount reports whether one of the containers mounts a subPath
// (an ephemeral container may not: API validation).
func hasSubPathMount(cs []v1.Container) bool {
	for i := range cs {
		for _, vm := range cs[i].VolumeMounts {
			if vm.SubPath != "" || vm.SubPathExpr != "" {
				return true
			}
		}
	}
	return false
}

// podDirUIDs are the UIDs of the pod directories under the root
// directory of a real runtime's kubelet (none for the simulated
// runtime's, whose nodes may share one root directory), which
// adoptRuntimeState gives records at start, as upstream's kubelet finds
// its orphaned pod directories and reconstructs their volumes from disk:
// a pod deleted while the kubelet was down, with nothing of it left in
// the runtime, is then cleaned up as any other gone pod once the source
// has delivered every pod (cleanupPod: its subPath bind mounts, then its
// directory).
func (k *Kubelet) podDirUIDs() []types.UID {
	if !k.bindsSubPaths() {
		return nil
	}
	dir := filepath.Join(k.cfg.RootDir, "pods")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			k.log.Info("Failed to read the pod directories", "path", dir, "err", err)
		}
		return nil
	}
	uids := make([]types.UID, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			uids = append(uids, types.UID(e.Name()))
		}
	}
	return uids
}
