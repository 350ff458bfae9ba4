package kubelet

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// fsGroup ownership of a pod's volumes, as upstream's SetVolumeOwnership
// (pkg/volume/volume_linux.go) as its emptyDir, configMap, secret,
// downwardAPI and projected plugins call it:
//
//   - every file and directory of the volume gets the group fsGroup
//     (lchown, so a symlink itself and not its target), and its mode the
//     bits of the volume's mask added: group read/write (0660) for an
//     emptyDir, group read (0440) for the read-only atomic-writer volumes
//     (configMap, secret, downwardAPI, projected); a directory also gets
//     the setgid bit and group search (0110), so that files created in it
//     later are of the group too; a symlink's mode is left alone;
//   - an emptyDir is walked once, when it is created (upstream: before
//     its ready file exists); an atomic-writer volume every time its
//     payload is written (upstream's setPerms callback of the atomic
//     writer, over the whole volume), so files a changed ConfigMap or a
//     renewed token added are of the group too;
//   - a failed chown or chmod of one file is logged and the walk goes on
//     (upstream's changeFilePermission); only a directory that cannot be
//     read stops it. An emptyDir's walk error is only logged (upstream
//     discards it), an atomic-writer volume's fails its set-up;
//   - fsGroupChangePolicy is not consulted: these plugins pass upstream's
//     SetVolumeOwnership no policy (nil: the walk always runs), whatever
//     the pod says; OnRootMismatch only spares volumes whose plugins pass
//     the pod's policy (CSI and block-backed volumes, which kubeproof does
//     not have);
//   - hostPath volumes are never changed.
//
// A pod without fsGroup costs nothing here: setUpVolume asks podFSGroup,
// a nil check, before anything else.

// The bits upstream's SetVolumeOwnership adds to a volume's files.
const (
	ownershipRWMask   = 0o660 // group read/write: emptyDir
	ownershipROMask   = 0o440 // group read: configMap, secret, downwardAPI, projected
	ownershipExecMask = 0o110 // directories: search
)

// podFSGroup is the pod's fsGroup, nil when unset.
func podFSGroup(pod *v1.Pod) *int64 {
	if psc := pod.Spec.SecurityContext; psc != nil {
		return psc.FSGroup
	}
	return nil
}

// podFSUser is upstream's FsUserFrom: the runAsUser every container of
// the pod (init, app and ephemeral) runs as when they all set one (their
// own or the pod's) and it is the same; otherwise nil. A projected
// service account token is owned by it.
func podFSUser(pod *v1.Pod) *int64 {
	var user *int64
	psc := pod.Spec.SecurityContext
	one := func(sc *v1.SecurityContext) bool {
		u := (*int64)(nil)
		if psc != nil {
			u = psc.RunAsUser
		}
		if sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if u == nil || (user != nil && *user != *u) {
			user = nil
			return false
		}
		user = u
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !one(pod.Spec.InitContainers[i].SecurityContext) {
			return nil
		}
	}
	for i := range pod.Spec.Containers {
		if !one(pod.Spec.Containers[i].SecurityContext) {
			return nil
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if !one(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return nil
		}
	}
	return user
}

// ownedMode is the permission bits (st_mode & 07777) a file of mode mode
// gets under fsGroup ownership, as upstream's changeFilePermission: the
// volume's mask added, and setgid and search for a directory.
func ownedMode(mode uint32, dir, readOnly bool) uint32 {
	mask := uint32(ownershipRWMask)
	if readOnly {
		mask = ownershipROMask
	}
	if dir {
		mask |= syscall.S_ISGID | ownershipExecMask
	}
	return mode&0o7777 | mask
}

// setVolumeOwnership gives every file under dir (dir included) the group
// fsGroup and its owned mode (ownedMode). As upstream's walkDeep, a
// directory's entries are visited before it, unsorted. A chown or chmod
// that fails is logged and skipped; an error reading a directory stops the
// walk and is returned. Files already as wanted are not touched.
func (k *Kubelet) setVolumeOwnership(dir string, fsGroup int64, readOnly bool) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fmt.Errorf("setting the ownership of %s to fsGroup %d: %w", dir, fsGroup, &os.PathError{Op: "lstat", Path: dir, Err: err})
	}
	if err := k.ownTree(dir, &st, uint32(fsGroup), readOnly); err != nil {
		return fmt.Errorf("setting the ownership of %s to fsGroup %d: %w", dir, fsGroup, err)
	}
	return nil
}

// ownTree owns path (whose lstat is st) and, for a directory, what is in
// it, entries first.
func (k *Kubelet) ownTree(path string, st *syscall.Stat_t, gid uint32, readOnly bool) error {
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if isDir {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, name := range names {
			child := filepath.Join(path, name)
			var cst syscall.Stat_t
			if err := syscall.Lstat(child, &cst); err != nil {
				if errors.Is(err, syscall.ENOENT) {
					continue // gone meanwhile (a container removed it)
				}
				return &os.PathError{Op: "lstat", Path: child, Err: err}
			}
			if err := k.ownTree(child, &cst, gid, readOnly); err != nil {
				return err
			}
		}
	}
	if st.Gid != gid {
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			k.log.Error("volume ownership: lchown failed", "path", path, "gid", gid, "err", err)
		}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		return nil // chmod would change the target's mode
	}
	if want := ownedMode(st.Mode, isDir, readOnly); want != st.Mode&0o7777 {
		if err := syscall.Chmod(path, want); err != nil {
			k.log.Error("volume ownership: chmod failed", "path", path, "mode", fmt.Sprintf("%#o", want), "err", err)
		}
	}
	return nil
}

// processUmask is the kubelet process's umask, read once from
// /proc/self/status (0o777 if it cannot be: every mode is then set with
// chmod). A volume file whose mode the umask would narrow is chmod-ed
// after it is written, as upstream's atomic writer does every file; the
// usual 0644 under the usual 022 umask needs no chmod.
var processUmask = sync.OnceValue(func() uint32 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0o777
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m)
			}
		}
	}
	return 0o777
})
