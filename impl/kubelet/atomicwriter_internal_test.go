package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCountEntries: the entry count the unchanged-payload check compares
// covers nested directories.
func TestCountEntries(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a", "b/c", "b/d/e", "f/g"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Many entries: more than one getdents buffer.
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(dir, "b", strings.Repeat("x", 40)+string(rune('A'+i%26))+strings.Repeat("y", i/26)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := countEntries(append([]byte(dir), 0))
	if err != nil {
		t.Fatal(err)
	}
	// a, b, b/c, b/d, b/d/e, f, f/g and the 300.
	if n != 307 {
		t.Fatalf("countEntries = %d, want 307", n)
	}
	if _, err := countEntries(append([]byte(filepath.Join(dir, "missing")), 0)); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("a missing directory: %v", err)
	}
	files := map[string]volumeFile{"a": {}, "b/c": {}, "b/d/e": {}, "f/g": {}}
	if got := payloadPaths(files); got != 7 {
		t.Fatalf("payloadPaths = %d, want 7", got)
	}
	if got := payloadPaths(map[string]volumeFile{"a": {}, "b": {}}); got != 2 {
		t.Fatalf("payloadPaths of a flat payload = %d", got)
	}
}
