package audit

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRotatingFileRotatesAtMaxSize: a write that would take the file
// past MaxSize megabytes first moves it to <name>-<UTC time>.<ext>; the
// new file has the old one's mode.
func TestRotatingFileRotatesAtMaxSize(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 678000000, time.FixedZone("CET", 3600))
	r := &RotatingFile{Filename: filepath.Join(dir, "audit.log"), MaxSize: 1, Now: func() time.Time { return now }}
	defer r.Close()
	half := strings.Repeat("a", megabyte/2)
	for _, s := range []string{half, half} {
		if _, err := r.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"audit.log"}) {
		t.Fatalf("files %v before the limit", got)
	}
	if _, err := r.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	backup := "audit-2026-01-02T02-04-05.678.log"
	if got := dirNames(t, dir); !slices.Equal(got, []string{backup, "audit.log"}) {
		t.Fatalf("files %v, want the backup named in UTC", got)
	}
	if got := readFile(t, filepath.Join(dir, "audit.log")); got != "b" {
		t.Errorf("new file holds %q", got)
	}
	if len(readFile(t, filepath.Join(dir, backup))) != megabyte {
		t.Error("backup is not the whole old file")
	}
	if info, _ := os.Stat(filepath.Join(dir, "audit.log")); info.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", info.Mode().Perm())
	}
	if _, err := r.Write(make([]byte, megabyte+1)); err == nil || !strings.Contains(err.Error(), "exceeds maximum file size") {
		t.Errorf("oversized write: %v", err)
	}
}

// TestRotatingFileReopensAndDefaultSize: an existing file is appended to;
// one the next write would fill (size+write ≥ max) is rotated at open;
// MaxSize 0 is 100 MB.
func TestRotatingFileReopensAndDefaultSize(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(name, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	r := &RotatingFile{Filename: name}
	if _, err := r.Write([]byte("new\n")); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := readFile(t, name); got != "old\nnew\n" {
		t.Errorf("reopened file %q", got)
	}
	if r.max() != 100*megabyte {
		t.Errorf("default max %d", r.max())
	}
	if err := os.WriteFile(name, []byte(strings.Repeat("x", megabyte-4)), 0o640); err != nil {
		t.Fatal(err)
	}
	r = &RotatingFile{Filename: name, MaxSize: 1, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	defer r.Close()
	if _, err := r.Write([]byte("1234")); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"audit-2026-01-01T00-00-00.000.log", "audit.log"}) {
		t.Errorf("files %v", got)
	}
	if info, _ := os.Stat(name); info.Mode().Perm() != 0o640 {
		t.Errorf("rotated file mode %v, want the old file's 0640", info.Mode().Perm())
	}
}

// TestRotatingFilePrunesAndCompresses: after a rotation, backups beyond
// MaxBackups (oldest first) and older than MaxAge days (by their name's
// time) are removed, the rest gzipped with Compress; files not named as
// backups are left alone.
func TestRotatingFilePrunesAndCompresses(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "audit.log")
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for _, f := range []string{
		"audit-2025-12-01T00-00-00.000.log",    // the 5th backup: beyond 4
		"audit-2026-01-08T00-00-00.000.log.gz", // kept, already compressed
		"audit-2026-01-07T00-00-00.000.log",    // older than 2 days
		"audit-2026-01-09T00-00-00.000.log",    // kept, compressed now
		"audit-notatime.log", "other.log",      // not backups
	} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(name, []byte("current"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &RotatingFile{Filename: name, MaxSize: 1, MaxBackups: 4, MaxAge: 2, Compress: true, Now: func() time.Time { return now }}
	defer r.Close()
	r.size = 0
	if err := r.openExistingOrNew(0); err != nil {
		t.Fatal(err)
	}
	if err := r.rotate(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"audit-2026-01-08T00-00-00.000.log.gz",
		"audit-2026-01-09T00-00-00.000.log.gz",
		"audit-2026-01-10T00-00-00.000.log.gz",
		"audit-notatime.log", "audit.log", "other.log",
	}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files\n%v\nwant\n%v", got, want)
	}
	f, err := os.Open(filepath.Join(dir, "audit-2026-01-10T00-00-00.000.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, zr); err != nil || buf.String() != "current" {
		t.Errorf("compressed backup holds %q (%v)", buf.String(), err)
	}
}

// TestLogBackendStdoutAndFile: "-" is standard output; a path is created
// 0600 (its directory 0700) before the first event.
func TestLogBackendStdoutAndFile(t *testing.T) {
	b, err := NewLogBackend(LogOptions{Path: "-"}, nil)
	if err != nil || b.w != os.Stdout {
		t.Fatalf("\"-\": %+v %v", b, err)
	}
	p := filepath.Join(t.TempDir(), "sub", "audit.log")
	b, err = NewLogBackend(LogOptions{Path: p, MaxSize: 1, Format: FormatJSON}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	info, err := os.Stat(p)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("log file %v %v", info, err)
	}
	if d, _ := os.Stat(filepath.Dir(p)); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", d.Mode().Perm())
	}
	if !b.ProcessEvent(&Event{AuditID: "x"}) || !strings.Contains(readFile(t, p), `"auditID":"x"`) {
		t.Errorf("log holds %q", readFile(t, p))
	}
}

// TestRotatingFileCleanupFailureKeepsWrite: as lumberjack, which mills
// backups in the background and ignores its errors, a backup that cannot
// be compressed does not fail the write that rotated the file.
func TestRotatingFileCleanupFailureKeepsWrite(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := "audit-2026-01-01T00-00-00.000.log"
	if err := os.WriteFile(filepath.Join(dir, old), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The compressed name is taken by a directory: gzip cannot create it.
	if err := os.Mkdir(filepath.Join(dir, old+compressSuffix), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), []byte(strings.Repeat("a", megabyte-1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &RotatingFile{Filename: filepath.Join(dir, "audit.log"), MaxSize: 1, Compress: true, Now: func() time.Time { return now }}
	defer r.Close()
	if n, err := r.Write([]byte("b\n")); err != nil || n != 2 {
		t.Fatalf("Write = %d, %v; want 2, nil", n, err)
	}
	if got := readFile(t, filepath.Join(dir, "audit.log")); got != "b\n" {
		t.Errorf("audit.log %q after rotation, want %q", got, "b\n")
	}
}

// TestRotatingFileMillsOnFirstOpen: as lumberjack, opening the file for
// the first write also removes the backups MaxBackups does not keep,
// without a rotation.
func TestRotatingFileMillsOnFirstOpen(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"audit-2026-01-01T00-00-00.000.log", "audit-2026-01-01T00-00-01.000.log", "audit.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := &RotatingFile{Filename: filepath.Join(dir, "audit.log"), MaxBackups: 1}
	defer r.Close()
	if _, err := r.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"audit-2026-01-01T00-00-01.000.log", "audit.log"}) {
		t.Errorf("files %v, want the older backup removed", got)
	}
	if got := readFile(t, filepath.Join(dir, "audit.log")); got != "x\ny\n" {
		t.Errorf("audit.log %q, want appended", got)
	}
}

// TestLogBackendUnusablePath: a log path that cannot be made fails as
// kube-apiserver's ensureLogFile ("ensureLogFile: mkdir ...").
func TestLogBackendUnusablePath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewLogBackend(LogOptions{Path: filepath.Join(file, "audit.log")}, nil)
	if want := "ensureLogFile: mkdir " + file + ": not a directory"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
