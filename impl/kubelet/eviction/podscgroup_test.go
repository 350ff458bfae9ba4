package eviction

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHostProviderPodsCgroupUnreadable: a pods cgroup whose memory files
// cannot be read or parsed leaves allocatableMemory.available out and
// the node's other signals observed, as upstream's summary provider
// skips a system container whose stats fail and its eviction manager
// then constructs no such signal.
func TestHostProviderPodsCgroupUnreadable(t *testing.T) {
	root := map[string]string{"cgroup.controllers": "cpu memory\n", "memory.stat": "anon 2048\nfile 2048\ninactive_file 512\n"}
	for _, tc := range []struct {
		name  string
		files map[string]string
		dirs  []string
	}{
		{name: "malformed limit", files: map[string]string{"kubepods/memory.max": "lots\n", "kubepods/memory.current": "3000\n", "kubepods/memory.stat": "inactive_file 500\n"}},
		{name: "malformed stat", files: map[string]string{"kubepods/memory.max": "8192\n", "kubepods/memory.current": "3000\n", "kubepods/memory.stat": "inactive_file\n"}},
		{name: "unreadable limit", files: map[string]string{"kubepods/memory.current": "3000\n", "kubepods/memory.stat": "inactive_file 500\n"}, dirs: []string{"kubepods/memory.max"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range root {
				files[k] = v
			}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := fakeCgroupfs(t, files)
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			h := HostProvider{RootDir: t.TempDir(), ProcDir: fakeProc(t), CgroupDir: dir, PodsCgroup: "/kubepods"}
			obs, _, err := h.Observe(t.Context(), nil)
			if err != nil {
				t.Fatalf("Observe: %v", err)
			}
			if _, ok := obs[SignalMemoryAvailable]; !ok {
				t.Error("no memory.available")
			}
			if o, ok := obs[SignalAllocatableMemoryAvailable]; ok {
				t.Errorf("allocatableMemory.available %+v observed", o)
			}
		})
	}
}
