package eviction

import (
	"os"
	"path/filepath"
	"testing"
)

// v1Stat is a cgroup v1 memory.stat: the cgroup's own inactive_file
// beside the hierarchy's total_inactive_file, which is the one cadvisor
// subtracts.
const v1Stat = "cache 500\nrss 200\ninactive_file 10\nactive_file 90\ntotal_cache 800\ntotal_rss 400\ntotal_inactive_file 300\ntotal_active_file 200\n"

// v2Stat is a cgroup v2 memory.stat.
const v2Stat = "anon 400\nfile 600\nkernel 50\nactive_file 350\ninactive_file 250\n"

func TestNodeMemoryObservation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		total   int64
		files   cgroupMemoryFiles
		unified bool
		want    Observation
		wantErr bool
	}{
		{name: "v1: usage less total_inactive_file", total: 10000, files: cgroupMemoryFiles{Usage: "1200\n", Stat: v1Stat},
			want: Observation{Available: 10000 - 900, Capacity: 10000}},
		{name: "v1: no total_inactive_file, the usage", total: 10000, files: cgroupMemoryFiles{Usage: "1200", Stat: "total_rss 400\n"},
			want: Observation{Available: 10000 - 1200, Capacity: 10000}},
		{name: "v1: inactive above usage, working set 0", total: 10000, files: cgroupMemoryFiles{Usage: "100", Stat: v1Stat},
			want: Observation{Available: 10000, Capacity: 10000}},
		{name: "v2: anon + file less inactive_file", total: 10000, files: cgroupMemoryFiles{Stat: v2Stat}, unified: true,
			want: Observation{Available: 10000 - (1000 - 250), Capacity: 10000}},
		{name: "v2: usage file ignored at the root", total: 10000, files: cgroupMemoryFiles{Usage: "999999", Stat: v2Stat}, unified: true,
			want: Observation{Available: 10000 - 750, Capacity: 10000}},
		{name: "v2: no anon", total: 10000, files: cgroupMemoryFiles{Stat: "file 600\n"}, unified: true, wantErr: true},
		{name: "v1: bad usage", total: 10000, files: cgroupMemoryFiles{Usage: "lots", Stat: v1Stat}, wantErr: true},
		{name: "bad stat", total: 10000, files: cgroupMemoryFiles{Usage: "1", Stat: "anon\n"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nodeMemoryObservation(tc.total, tc.files, tc.unified)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPodsMemoryObservation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   cgroupMemoryFiles
		unified bool
		want    Observation
		wantOK  bool
		wantErr bool
	}{
		{name: "v1: limit less working set", files: cgroupMemoryFiles{Limit: "5000\n", Usage: "1200\n", Stat: v1Stat},
			want: Observation{Available: 5000 - 900, Capacity: 5000}, wantOK: true},
		{name: "v1: no limit (page-rounded max)", files: cgroupMemoryFiles{Limit: "9223372036854771712\n", Usage: "1200", Stat: v1Stat}},
		{name: "v2: limit less working set", files: cgroupMemoryFiles{Limit: "5000\n", Usage: "1000\n", Stat: v2Stat}, unified: true,
			want: Observation{Available: 5000 - 750, Capacity: 5000}, wantOK: true},
		{name: "v2: max", files: cgroupMemoryFiles{Limit: "max\n", Usage: "1000", Stat: v2Stat}, unified: true},
		{name: "working set above the limit", files: cgroupMemoryFiles{Limit: "500", Usage: "1200", Stat: v1Stat},
			want: Observation{Available: 500 - 900, Capacity: 500}, wantOK: true},
		{name: "bad limit", files: cgroupMemoryFiles{Limit: "max", Usage: "1", Stat: v1Stat}, wantErr: true},
		{name: "bad usage", files: cgroupMemoryFiles{Limit: "5000", Usage: "", Stat: v1Stat}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := podsMemoryObservation(tc.files, tc.unified)
			if (err != nil) != tc.wantErr || ok != tc.wantOK {
				t.Fatalf("ok %v err %v, want ok %v error %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// fakeCgroupfs writes files (path relative to a new directory: content)
// and returns the directory.
func fakeCgroupfs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeProc is a /proc whose meminfo's MemAvailable is far from what the
// cgroups give, so that a test sees which one is read.
func fakeProc(t *testing.T) string {
	return fakeCgroupfs(t, map[string]string{"meminfo": "MemTotal:       10 kB\nMemFree:         1 kB\nMemAvailable:    2 kB\n"})
}

func TestHostProviderMemoryFromRootCgroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Observation
	}{
		{name: "cgroup v1", files: map[string]string{"memory/memory.usage_in_bytes": "4096\n", "memory/memory.stat": "total_inactive_file 1024\ninactive_file 1\n"},
			want: Observation{Available: 10240 - 3072, Capacity: 10240}},
		{name: "cgroup v2", files: map[string]string{"cgroup.controllers": "cpu memory\n", "memory.stat": "anon 2048\nfile 2048\ninactive_file 512\n"},
			want: Observation{Available: 10240 - 3584, Capacity: 10240}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := HostProvider{RootDir: t.TempDir(), ProcDir: fakeProc(t), CgroupDir: fakeCgroupfs(t, tc.files)}
			obs, _, err := h.Observe(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := obs[SignalMemoryAvailable]; got != tc.want {
				t.Errorf("memory.available %+v, want %+v", got, tc.want)
			}
		})
	}
	h := HostProvider{RootDir: t.TempDir(), ProcDir: fakeProc(t), CgroupDir: t.TempDir()}
	if _, _, err := h.Observe(t.Context(), nil); err == nil {
		t.Error("observed memory without a root memory cgroup")
	}
}
