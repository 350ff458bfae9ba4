package kubelet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The atomic writer of configMap, secret, downwardAPI and projected
// volumes, as upstream's AtomicWriter (pkg/volume/util/atomic_writer.go):
//
//   - the files are written into a hidden directory named after the time
//     (..2006_01_02_15_04_05.<random>, mode 0755), the data directory;
//   - ..data is a symlink to it, and every top-level path of the payload
//     is a symlink into ..data (key -> ..data/key, and html -> ..data/html
//     for html/index.html), so a reader that opens a file resolves ..data
//     once and reads either the old or the new payload, never a mix;
//   - a changed payload is written into a new data directory, ownership
//     set (setPerms: the pod's fsGroup, volumeownership.go) before it is
//     published, then published at once by a symlink ..data_tmp renamed
//     over ..data; then the top-level links of paths no longer in the
//     payload are removed, and the old data directory;
//   - a payload the current data directory already holds (same paths,
//     same contents) writes nothing; only the top-level links are made
//     again when missing (upstream's fix of kubernetes#121472);
//   - payload paths are validated as upstream's validatePath: not empty,
//     not absolute, at most 4096 bytes, no element "..", no element over
//     255 bytes, and the first element must not start with ".." (the
//     writer's own names); a path is used cleaned (a//b is a/b).
//
// Differences, none visible to a container: a failed write removes the
// new data directory it made (upstream leaves it), a ..data_tmp left by
// a crash is removed before the next write (upstream fails on it), and a
// top-level regular file, or at a volume's first write a directory (a
// volume written in place by a kubeproof before session 30), is replaced
// by the link; upstream, as here any other time, leaves a path that is
// not a symlink alone (userVisibleLink).
//
// The periodic refresh of every running pod's volumes goes through here
// (refreshVolumes), so an unchanged payload is checked with few
// allocations: paths are built NUL-terminated in a pooled buffer for
// plain system calls (openZ, readlinkZ; syscall's string paths each
// allocate a copy), a file's content is compared into a pooled buffer
// (fdHolds), and the data directory's entries are counted, not listed
// (countEntries). A new pod's first write uses the same paths for its
// files.

const (
	atomicDataDir    = "..data"
	atomicNewDataDir = "..data_tmp"

	maxPayloadFileNameLength = 255
	maxPayloadPathLength     = 4096
)

// validatePayloadPath is upstream's validatePath: the error of a payload
// path the atomic writer refuses, nil for a valid one.
func validatePayloadPath(p string) error {
	if p == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	}
	if path.IsAbs(p) {
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	}
	if len(p) > maxPayloadPathLength {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPayloadPathLength)
	}
	for item := range strings.SplitSeq(p, "/") {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxPayloadFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxPayloadFileNameLength)
		}
	}
	if first, _, _ := strings.Cut(p, "/"); strings.HasPrefix(first, "..") && len(first) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// cleanPayload validates every path of files and replaces a path that is
// not clean by its cleaned form (upstream's validatePayload; a path
// already clean, as the API server's validation leaves nearly all, costs
// no allocation).
func cleanPayload(files map[string]volumeFile) error {
	var dirty []string
	for p := range files {
		if err := validatePayloadPath(p); err != nil {
			return err
		}
		if filepath.Clean(p) != p {
			dirty = append(dirty, p)
		}
	}
	for _, p := range dirty {
		f := files[p]
		delete(files, p)
		files[filepath.Clean(p)] = f
	}
	return nil
}

// topLevel is the first element of a clean payload path: the name of its
// user-visible link.
func topLevel(p string) string {
	first, _, _ := strings.Cut(p, "/")
	return first
}

// atomicWrite writes the payload files into the volume directory dir as
// upstream's AtomicWriter.Write and reports whether it wrote a new data
// directory. setPerms, when not nil, is called once the new data
// directory is written and before it is published (upstream's setPerms:
// the fsGroup ownership of the whole volume). A file marked keep is
// copied from the current payload (its user-visible path) with f's mode
// and owner: a projected token not yet due, which the kubelet does not
// keep in memory.
func atomicWrite(dir string, files map[string]volumeFile, setPerms func() error) (bool, error) {
	if err := cleanPayload(files); err != nil {
		return false, err
	}
	zp := pathBufs.Get().(*[]byte)
	defer pathBufs.Put(zp)
	var tsBuf [256]byte
	n, err := readlinkZ(zjoin(zp, dir, atomicDataDir), tsBuf[:])
	switch {
	case errors.Is(err, syscall.ENOENT):
		n = 0 // the first write
	case err != nil:
		return false, fmt.Errorf("reading the data directory link of %s: %w", dir, err)
	case n == len(tsBuf):
		return false, fmt.Errorf("reading the data directory link of %s: not one the writer made", dir)
	}
	write := true
	if n > 0 {
		ts := unsafe.String(&tsBuf[0], n)
		write = !payloadHeld(zp, dir, ts, files)
		if !write {
			// Every path of the payload is there with its content:
			// anything more is a path to remove, a write.
			count, err := countEntries(zjoin(zp, dir, ts))
			if err != nil {
				return false, fmt.Errorf("reading the data directory %s: %w", filepath.Join(dir, ts), err)
			}
			write = count != payloadPaths(files)
		}
	}
	oldPath := ""
	if write {
		if n > 0 {
			oldPath = filepath.Join(dir, string(tsBuf[:n]))
		}
		if err := publishPayload(zp, dir, files, setPerms); err != nil {
			return false, err
		}
	}
	// The user-visible links, made when missing, written or not; then
	// the stale links and the old data directory, in the order of
	// upstream's Write (read in its 1.30 copy, the newest at hand):
	// ..data swapped (its steps 8-9), links made (10), stale paths
	// removed (11), the old directory removed (12); a failure at one
	// step skips the later ones, as here.
	for p := range files {
		if err := userVisibleLink(zp, dir, topLevel(p), n == 0); err != nil {
			return write, fmt.Errorf("creating the user-visible link of %s in %s: %w", p, dir, err)
		}
	}
	if oldPath == "" {
		return write, nil
	}
	if err := removeStaleLinks(dir, oldPath, files); err != nil {
		return write, err
	}
	if err := os.RemoveAll(oldPath); err != nil {
		return write, fmt.Errorf("removing the old data directory %s: %w", oldPath, err)
	}
	return write, nil
}

// publishPayload writes files into a new data directory of dir, calls
// setPerms, and makes ..data point to it. On failure the new directory is
// removed and ..data is left as it was.
func publishPayload(zp *[]byte, dir string, files map[string]volumeFile, setPerms func() error) error {
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("creating a data directory in %s: %w", dir, err)
	}
	published := false
	defer func() {
		if !published {
			_ = os.RemoveAll(tsDir)
		}
	}()
	// 0755, whatever the umask: group and others must reach the files.
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return fmt.Errorf("setting the mode of the data directory %s: %w", tsDir, err)
	}
	for p, f := range files {
		if err := writePayloadFile(zp, dir, tsDir, p, f); err != nil {
			return err
		}
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			return err
		}
	}
	tmpPath := filepath.Join(dir, atomicNewDataDir)
	var b [1]byte
	if _, err := readlinkZ(zjoin(zp, tmpPath), b[:]); !errors.Is(err, syscall.ENOENT) {
		if err := os.Remove(tmpPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing a stale %s: %w", tmpPath, err)
		}
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpPath); err != nil {
		return fmt.Errorf("creating the data directory link %s: %w", tmpPath, err)
	}
	if err := os.Rename(tmpPath, filepath.Join(dir, atomicDataDir)); err != nil {
		_ = os.Remove(tmpPath)
		return fmt.Errorf("publishing the data directory %s: %w", tsDir, err)
	}
	published = true
	return nil
}

// writePayloadFile writes the payload file p into the data directory
// tsDir of the volume dir: its directories 0755, the file with f's mode
// whatever the umask (chmod only when the umask narrows it) and, when
// f.owner is set, that owner (upstream's writer lchowns the new file; a
// fchown of it is the same). A keep file's
// content is the current one, read through its user-visible path.
func writePayloadFile(zp *[]byte, dir, tsDir, p string, f volumeFile) error {
	if strings.Contains(p, "/") {
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("creating the directory of %s: %w", full, err)
		}
	}
	data := f.data
	if f.keep {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return fmt.Errorf("reading the current %s: %w", p, err)
		}
		data = b
	}
	// With plain system calls on a pooled path (no os.File): every new
	// pod's volumes are written once.
	fd, err := openZ(zjoin(zp, tsDir, p), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, f.mode)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(tsDir, p), err)
	}
	err = writeAll(fd, data)
	if err == nil && f.mode&^processUmask() != f.mode {
		if err = syscall.Fchmod(fd, f.mode); err != nil {
			err = fmt.Errorf("setting its mode: %w", err)
		}
	}
	if err == nil && f.owner != 0 {
		if err = syscall.Fchown(fd, int(f.owner), -1); err != nil {
			err = fmt.Errorf("setting its owner: %w", err)
		}
	}
	if cerr := syscall.Close(fd); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(tsDir, p), err)
	}
	return nil
}

// writeAll writes data to fd.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// payloadHeld reports whether the data directory ts of dir holds every
// file of the payload with its content (a keep file: that it is there).
func payloadHeld(zp *[]byte, dir, ts string, files map[string]volumeFile) bool {
	for p, f := range files {
		fd, err := openZ(zjoin(zp, dir, ts, p), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		held := f.keep || fdHolds(fd, f.data)
		syscall.Close(fd)
		if !held {
			return false
		}
	}
	return true
}

// payloadPaths is how many paths the payload's data directory holds: its
// files and the directories they are in (upstream's new paths).
func payloadPaths(files map[string]volumeFile) int {
	nested := false
	for p := range files {
		if strings.Contains(p, "/") {
			nested = true
			break
		}
	}
	if !nested {
		return len(files)
	}
	paths := make(map[string]struct{}, 2*len(files))
	for p := range files {
		for ; p != "." && p != ""; p = path.Dir(p) {
			paths[p] = struct{}{}
		}
	}
	return len(paths)
}

// removeStaleLinks removes the user-visible links of the top-level paths
// of the old data directory old that the payload no longer has (upstream
// removes only top-level paths: deeper ones go with the old directory).
// Every one is tried; the error names the first that failed. An old
// directory that is gone (..data left dangling) has nothing to remove, as
// upstream's walk of it finds nothing.
func removeStaleLinks(dir, old string, files map[string]volumeFile) error {
	f, err := os.Open(old)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the old data directory %s: %w", old, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the old data directory %s: %w", old, err)
	}
	var first error
	for _, name := range names {
		if payloadHasTopLevel(files, name) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = fmt.Errorf("removing the old user-visible path %s: %w", name, err)
		}
	}
	return first
}

func payloadHasTopLevel(files map[string]volumeFile, name string) bool {
	if _, ok := files[name]; ok {
		return true
	}
	for p := range files {
		if topLevel(p) == name {
			return true
		}
	}
	return false
}

// userVisibleLink makes the link name -> ..data/name in dir unless it is
// there (readlink, as upstream's writer asks). A name that is there but
// not a symlink is left as upstream leaves it (a directory the kubelet
// made for a missing subPath, which a container may have mounted), except
// a regular file, and at the volume's first write (first: there was no
// ..data) a directory: a volume written in place by an older kubeproof,
// replaced by the link. Subpath directories are made only after a
// volume's first write (setUpVolumes runs before any container starts).
func userVisibleLink(zp *[]byte, dir, name string, first bool) error {
	var b [1]byte
	_, err := readlinkZ(zjoin(zp, dir, name), b[:])
	if err == nil {
		return nil
	}
	visible := filepath.Join(dir, name)
	switch {
	case errors.Is(err, syscall.EINVAL): // not a symlink
		if !first {
			var st syscall.Stat_t
			if err := syscall.Lstat(visible, &st); err != nil {
				return err
			}
			if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				return nil
			}
		}
		if err := os.RemoveAll(visible); err != nil {
			return err
		}
	case !errors.Is(err, syscall.ENOENT):
		return &os.PathError{Op: "readlink", Path: visible, Err: err}
	}
	return os.Symlink(atomicDataDir+"/"+name, visible)
}

// countEntries is how many files and directories are under the
// directory z (a NUL-terminated path; the directory not counted), read
// with getdents(2) into a pooled buffer: no names are made, only the paths
// of subdirectories.
func countEntries(z []byte) (int, error) {
	fd, err := openZ(z, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	bp := compareBufs.Get().(*[]byte)
	defer compareBufs.Put(bp)
	if cap(*bp) < 4096 {
		*bp = make([]byte, 4096)
	}
	buf := (*bp)[:cap(*bp)]
	count := 0
	var subdirs [][]byte
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n <= 0 {
			break
		}
		for rec := buf[:n]; len(rec) >= 19; {
			// struct linux_dirent64: ino, off, reclen, type, name.
			reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
			if reclen < 19 || reclen > len(rec) {
				break
			}
			typ, name := rec[18], rec[19:reclen]
			if i := indexNUL(name); i >= 0 {
				name = name[:i]
			}
			rec = rec[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			count++
			if typ != syscall.DT_DIR && typ != syscall.DT_UNKNOWN {
				continue
			}
			sub := make([]byte, 0, len(z)+len(name)+1)
			sub = append(append(append(sub, z[:len(z)-1]...), '/'), name...)
			sub = append(sub, 0)
			if typ == syscall.DT_UNKNOWN {
				var st syscall.Stat_t
				if syscall.Lstat(string(sub[:len(sub)-1]), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
					continue
				}
			}
			subdirs = append(subdirs, sub)
		}
	}
	for _, sub := range subdirs {
		n, err := countEntries(sub)
		if err != nil {
			return 0, err
		}
		count += n
	}
	return count, nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// pathBufs hold the NUL-terminated paths of the unchanged-payload check:
// syscall's functions taking a string path each allocate its copy.
var pathBufs = sync.Pool{New: func() any { return new([]byte) }}

// zjoin makes parts joined by "/" and NUL-terminated in *zp, valid until
// the next zjoin on zp.
func zjoin(zp *[]byte, parts ...string) []byte {
	b := (*zp)[:0]
	for i, p := range parts {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, p...)
	}
	b = append(b, 0)
	*zp = b
	return b
}

// atFDCWD is AT_FDCWD: paths relative to the working directory.
const atFDCWD = -0x64

// openZ is open(2) of the NUL-terminated path z (mode for a file it
// creates). A path with a NUL before its end is EINVAL, as syscall's
// string paths: the kernel would read it cut at the first NUL.
func openZ(z []byte, flags int, mode uint32) (int, error) {
	if indexNUL(z) != len(z)-1 {
		return -1, syscall.EINVAL
	}
	cwd := atFDCWD
	for {
		fd, _, e := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(&z[0])), uintptr(flags), uintptr(mode), 0, 0)
		switch e {
		case 0:
			return int(fd), nil
		case syscall.EINTR:
			continue
		}
		return -1, e
	}
}

// readlinkZ is readlink(2) of the NUL-terminated path z into buf (EINVAL
// for a path with a NUL before its end, as openZ).
func readlinkZ(z, buf []byte) (int, error) {
	if indexNUL(z) != len(z)-1 {
		return 0, syscall.EINVAL
	}
	cwd := atFDCWD
	for {
		n, _, e := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(cwd), uintptr(unsafe.Pointer(&z[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}
