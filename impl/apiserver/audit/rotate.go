package audit

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Rotation defaults and names, as the rotating writer kube-apiserver
// gives --audit-log-path (lumberjack): a file is rotated before a write
// would take it past MaxSize megabytes (0: 100); the old file is renamed
// <name>-<UTC time>.<ext>, the time as 2006-01-02T15-04-05.000.
const (
	defaultRotateMaxSizeMB = 100
	backupTimeFormat       = "2006-01-02T15-04-05.000"
	compressSuffix         = ".gz"
	megabyte               = 1024 * 1024
)

// RotatingFile is an io.WriteCloser appending to Filename and rotating
// it (--audit-log-maxsize, --audit-log-maxbackup, --audit-log-maxage,
// --audit-log-compress). After a rotation the backups beyond MaxBackups
// (newest kept; 0 keeps all) and those older than MaxAge days (by the
// time in their name; 0 keeps all) are removed, and with Compress the
// others are gzipped to <backup>.gz.
type RotatingFile struct {
	Filename   string
	MaxSize    int // megabytes; 0 is 100
	MaxBackups int
	MaxAge     int // days
	Compress   bool
	// Now is the clock (backup names, MaxAge); nil is time.Now.
	Now func() time.Time

	mu   sync.Mutex
	file *os.File
	size int64
}

func (r *RotatingFile) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *RotatingFile) max() int64 {
	if r.MaxSize == 0 {
		return defaultRotateMaxSizeMB * megabyte
	}
	return int64(r.MaxSize) * megabyte
}

// Write appends p, rotating first when p would take the file past the
// maximum size. A p larger than the maximum is refused.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int64(len(p))
	if n > r.max() {
		return 0, fmt.Errorf("write length %d exceeds maximum file size %d", n, r.max())
	}
	if r.file == nil {
		if err := r.openExistingOrNew(n); err != nil {
			return 0, err
		}
	}
	if r.size+n > r.max() {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	w, err := r.file.Write(p)
	r.size += int64(w)
	return w, err
}

// Close closes the current file.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeFile()
}

func (r *RotatingFile) closeFile() error {
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// openExistingOrNew cleans up the backups, then opens the file to
// append, or rotates it first when the coming write would fill it.
func (r *RotatingFile) openExistingOrNew(writeLen int64) error {
	r.cleanUp()
	info, err := os.Stat(r.Filename)
	if errors.Is(err, fs.ErrNotExist) {
		return r.openNew()
	}
	if err != nil {
		return fmt.Errorf("getting info of audit log file: %w", err)
	}
	if info.Size()+writeLen >= r.max() {
		return r.rotate()
	}
	f, err := os.OpenFile(r.Filename, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return r.openNew()
	}
	r.file, r.size = f, info.Size()
	return nil
}

// rotate moves the current file aside and starts a new one, then prunes
// and compresses the backups.
func (r *RotatingFile) rotate() error {
	if err := r.closeFile(); err != nil {
		return err
	}
	if err := r.openNew(); err != nil {
		return err
	}
	r.cleanUp()
	return nil
}

// cleanUp mills the backups. As lumberjack's (which mills in the
// background and drops the error), a failure never fails the write: it
// is only logged.
func (r *RotatingFile) cleanUp() {
	if err := r.mill(); err != nil {
		slog.Warn("Cleaning up audit log backups failed", "file", r.Filename, "err", err)
	}
}

// openNew renames an existing file to its backup name and creates the
// file anew with the old one's mode (0600 for a first file).
func (r *RotatingFile) openNew() error {
	if err := os.MkdirAll(filepath.Dir(r.Filename), 0o755); err != nil {
		return fmt.Errorf("making audit log directories: %w", err)
	}
	mode := os.FileMode(0o600)
	if info, err := os.Stat(r.Filename); err == nil {
		mode = info.Mode()
		if err := os.Rename(r.Filename, backupName(r.Filename, r.now())); err != nil {
			return fmt.Errorf("rotating audit log: %w", err)
		}
	}
	f, err := os.OpenFile(r.Filename, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("opening new audit log: %w", err)
	}
	r.file, r.size = f, 0
	return nil
}

// backupName is name with the UTC time t before its extension:
// /var/log/audit.log → /var/log/audit-2026-01-02T03-04-05.000.log.
func backupName(name string, t time.Time) string {
	dir, base := filepath.Split(name)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)]
	return filepath.Join(dir, prefix+"-"+t.UTC().Format(backupTimeFormat)+ext)
}

// backup is a rotated file and the time in its name.
type backup struct {
	name string
	time time.Time
}

// backups lists the rotated files of r, newest first; other files in
// the directory are ignored.
func (r *RotatingFile) backups() ([]backup, error) {
	dir, base := filepath.Split(r.Filename)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading audit log directory: %w", err)
	}
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)] + "-"
	var out []backup
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		n := e.Name()
		if t, ok := backupTime(n, prefix, ext); ok {
			out = append(out, backup{filepath.Join(dir, n), t})
		} else if t, ok := backupTime(n, prefix, ext+compressSuffix); ok {
			out = append(out, backup{filepath.Join(dir, n), t})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].time.After(out[j].time) })
	return out, nil
}

func backupTime(name, prefix, ext string) (time.Time, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ext) || len(name) < len(prefix)+len(ext) {
		return time.Time{}, false
	}
	t, err := time.Parse(backupTimeFormat, name[len(prefix):len(name)-len(ext)])
	return t, err == nil
}

// mill removes the backups MaxBackups and MaxAge do not keep and, with
// Compress, gzips the others.
func (r *RotatingFile) mill() error {
	if r.MaxBackups == 0 && r.MaxAge == 0 && !r.Compress {
		return nil
	}
	files, err := r.backups()
	if err != nil {
		return err
	}
	remove, keep := pruneBackups(files, r.MaxBackups, r.MaxAge, r.now())
	var errs []error
	for _, f := range remove {
		if err := os.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if r.Compress {
		for _, f := range keep {
			if !strings.HasSuffix(f.name, compressSuffix) {
				errs = append(errs, compressFile(f.name, f.name+compressSuffix))
			}
		}
	}
	return errors.Join(errs...)
}

// pruneBackups splits files (newest first) into those to remove and
// those to keep: beyond maxBackups distinct backups (a file and its .gz
// count once; 0 keeps all), and older than maxAge days before now (0
// keeps all).
func pruneBackups(files []backup, maxBackups, maxAge int, now time.Time) (remove, keep []backup) {
	keep = files
	if maxBackups > 0 && maxBackups < len(files) {
		seen := map[string]bool{}
		var kept []backup
		for _, f := range files {
			seen[strings.TrimSuffix(f.name, compressSuffix)] = true
			if len(seen) > maxBackups {
				remove = append(remove, f)
			} else {
				kept = append(kept, f)
			}
		}
		keep = kept
	}
	if maxAge > 0 {
		cutoff := now.Add(-time.Duration(maxAge) * 24 * time.Hour)
		var kept []backup
		for _, f := range keep {
			if f.time.Before(cutoff) {
				remove = append(remove, f)
			} else {
				kept = append(kept, f)
			}
		}
		keep = kept
	}
	return remove, keep
}

// compressFile gzips src to dst (with src's mode) and removes src.
func compressFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening audit log backup: %w", err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("compressing audit log backup: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, info.Mode())
	if err != nil {
		return fmt.Errorf("compressing audit log backup: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	gz := gzip.NewWriter(out)
	if _, err := io.Copy(gz, in); err != nil {
		out.Close()
		return fmt.Errorf("compressing audit log backup: %w", err)
	}
	if err := gz.Close(); err != nil {
		out.Close()
		return fmt.Errorf("compressing audit log backup: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("compressing audit log backup: %w", err)
	}
	if err := in.Close(); err != nil {
		return fmt.Errorf("compressing audit log backup: %w", err)
	}
	return os.Remove(src)
}
