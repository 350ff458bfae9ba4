package bench

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestCPUProfileWindows: the profile is cut into numbered files, each a
// complete profile of its own, the last one ended by stop, and no file
// beyond the windows that started.
func TestCPUProfileWindows(t *testing.T) {
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := startCPUProfileWindows(context.Background(), path, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Wait (without a time limit of our own) until the third window began.
	for !fileExists(windowProfilePath(path, 2)) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("a second stop: %v", err)
	}
	n := 0
	for ; fileExists(windowProfilePath(path, n)); n++ {
		f, err := os.Open(windowProfilePath(path, n))
		if err != nil {
			t.Fatal(err)
		}
		// A profile ended properly is one complete gzip stream.
		z, err := gzip.NewReader(f)
		if err == nil {
			var body int64
			body, err = io.Copy(io.Discard, z)
			if err == nil && body == 0 {
				t.Errorf("window %d: an empty profile", n)
			}
		}
		f.Close()
		if err != nil {
			t.Errorf("window %d: %v", n, err)
		}
	}
	if n < 3 {
		t.Errorf("%d windows, want at least 3", n)
	}
	if fileExists(path) {
		t.Errorf("%s written: the windows replace it", path)
	}
	// The profiler is free again: a profile of the whole can start.
	whole, err := startCPUProfile(path)
	if err != nil {
		t.Fatalf("after the windows: %v", err)
	}
	if err := whole(); err != nil {
		t.Fatal(err)
	}
	checkNoGoroutineLeak(t, before)
}

func TestWindowProfilePath(t *testing.T) {
	for _, c := range []struct {
		i    int
		want string
	}{{0, "p.000"}, {7, "p.007"}, {123, "p.123"}, {1000, "p.1000"}} {
		if got := windowProfilePath("p", c.i); got != c.want {
			t.Errorf("window %d: %q, want %q", c.i, got, c.want)
		}
	}
	if _, err := startCPUProfileWindows(context.Background(), filepath.Join(t.TempDir(), "p"), 0); err == nil {
		t.Error("a zero window started")
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
