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
	"sync/atomic"
	"syscall"
	"time"

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
//     writer, atomicwriter.go, over the whole volume: its links, the
//     current data directory and the new one, before ..data is switched to
//     it), so files a changed ConfigMap or a renewed token added are of
//     the group before a container can see them; the lstat-based walk
//     does not follow the links, it reaches the files in the data
//     directories;
//   - a failed chown or chmod of one file is logged and the walk goes on
//     (upstream's changeFilePermission); only a directory that cannot be
//     read stops it. An emptyDir's walk error is only logged (upstream
//     discards it), an atomic-writer volume's fails its set-up;
//   - fsGroupChangePolicy is not consulted: these plugins pass upstream's
//     SetVolumeOwnership no policy (nil: the walk always runs), whatever
//     the pod says; OnRootMismatch only spares volumes whose plugins pass
//     the pod's policy (CSI and block-backed volumes, which kubeproof does
//     not have);
//   - hostPath volumes are never changed;
//   - a walk still going after 30 s logs upstream's warning and records a
//     VolumePermissionChangeInProgress Warning event on the pod, then
//     another with the count of files done every 60 s until it ends.
//
// A pod without fsGroup costs nothing here: setUpVolume asks podFSGroup,
// a nil check, before anything else.

// The bits upstream's SetVolumeOwnership adds to a volume's files.
const (
	ownershipRWMask   = 0o660 // group read/write: emptyDir
	ownershipROMask   = 0o440 // group read: configMap, secret, downwardAPI, projected
	ownershipExecMask = 0o110 // directories: search
)

// Upstream's reports of a slow ownership change: the first after
// ownershipFirstReport, then one every ownershipProgressPeriod.
const (
	EventVolumePermissionChangeInProgress = "VolumePermissionChangeInProgress"

	ownershipFirstReport    = 30 * time.Second
	ownershipProgressPeriod = 60 * time.Second
)

// ownershipFileHook, when set (by tests), is called before each file of an
// ownership walk is changed.
var ownershipFileHook func()

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

// setVolumeOwnership gives every file under dir (dir included), a volume
// of pod, the group fsGroup and its owned mode (ownedMode). As upstream's
// walkDeep, a directory's entries are visited before it, unsorted. A chown
// or chmod that fails is logged and skipped; an error reading a directory
// stops the walk and is returned. Files already as wanted are not touched.
// A slow walk is reported (monitor).
func (k *Kubelet) setVolumeOwnership(pod *v1.Pod, dir string, fsGroup int64, readOnly bool) error {
	w := &ownershipWalk{k: k, gid: uint32(fsGroup), readOnly: readOnly}
	done := make(chan struct{})
	timer := k.clock.NewTimer(ownershipFirstReport)
	defer close(done)
	defer timer.Stop()
	go func() {
		select {
		case <-done:
		case <-timer.C():
			w.monitor(pod, dir, done)
		}
	}()
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fmt.Errorf("setting the ownership of %s to fsGroup %d: %w", dir, fsGroup, &os.PathError{Op: "lstat", Path: dir, Err: err})
	}
	if err := w.own(dir, &st); err != nil {
		return fmt.Errorf("setting the ownership of %s to fsGroup %d: %w", dir, fsGroup, err)
	}
	return nil
}

// ownershipWalk is one volume's ownership change.
type ownershipWalk struct {
	k        *Kubelet
	gid      uint32
	readOnly bool
	files    atomic.Int64 // changed so far, for the progress reports
}

// monitor reports a walk still going after ownershipFirstReport as
// upstream's VolumeOwnership does: a warning in the log, a Warning event
// on the pod naming the volume's directory from the pod's UID on, then an
// event with the count of files done every ownershipProgressPeriod until
// done is closed.
func (w *ownershipWalk) monitor(pod *v1.Pod, dir string, done <-chan struct{}) {
	k := w.k
	k.log.Warn(fmt.Sprintf("Setting volume ownership for %s and fsGroup set. If the volume has a lot of files then setting volume ownership could be slow, see https://github.com/kubernetes/kubernetes/issues/69699", dir))
	name := dir
	if i := strings.Index(dir, string(pod.UID)); i >= 0 {
		name = dir[i:]
	}
	k.podEvent(pod, v1.EventTypeWarning, EventVolumePermissionChangeInProgress,
		"Setting volume ownership for %s is taking longer than expected, consider using OnRootMismatch - https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#configure-volume-permission-and-ownership-change-policy-for-pods", name)
	t := k.clock.NewTicker(ownershipProgressPeriod)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C():
			msg := fmt.Sprintf("Setting volume ownership for %s, processed %d files.", name, w.files.Load())
			k.log.Warn(msg)
			k.podEvent(pod, v1.EventTypeWarning, EventVolumePermissionChangeInProgress, "%s", msg)
		}
	}
}

// own owns path (whose lstat is st) and, for a directory, what is in it,
// entries first.
func (w *ownershipWalk) own(path string, st *syscall.Stat_t) error {
	k, gid, readOnly := w.k, w.gid, w.readOnly
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
			if err := w.own(child, &cst); err != nil {
				return err
			}
		}
	}
	if ownershipFileHook != nil {
		ownershipFileHook()
	}
	w.files.Add(1)
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
