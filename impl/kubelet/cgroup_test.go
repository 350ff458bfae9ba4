package kubelet

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cgroupV2Dir is a directory laid out as a cgroup v2 mount's root (it
// holds cgroup.controllers); cgroupV1Dir as a cgroup v1 or hybrid one.
func cgroupV2Dir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids rdma misc\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	return dir
}

func cgroupV1Dir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"memory", "cpu", "unified"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A hybrid mount's v2 hierarchy is under unified/, not at the root.
	if err := os.WriteFile(filepath.Join(dir, "unified", "cgroup.controllers"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCgroupUnified: a cgroup mount is cgroup v2 when its root holds
// cgroup.controllers; a v1 or hybrid mount, or none at all, is v1; a path
// that cannot be looked into is an error naming it.
func TestCgroupUnified(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		want      bool
		wantErr   bool
	}{
		{name: "v2", dir: cgroupV2Dir(t), want: true},
		{name: "v1 (hybrid)", dir: cgroupV1Dir(t)},
		{name: "no mount", dir: filepath.Join(t.TempDir(), "missing")},
		{name: "a file, not a directory", dir: file, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CgroupUnified(tc.dir)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.dir) {
					t.Fatalf("CgroupUnified(%s) = %v, %v; want an error naming it", tc.dir, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CgroupUnified(%s) = %v, %v; want %v", tc.dir, got, err, tc.want)
			}
		})
	}
}

// TestOOMGroupKill: as upstream's kubelet, a cgroup v2 node kills whole
// containers on OOM unless singleProcessOOMKill is true; a v1 node never
// does, and refuses singleProcessOOMKill=false with upstream's
// validation message.
func TestOOMGroupKill(t *testing.T) {
	yes, no := true, false
	const v1Err = "invalid configuration: singleProcessOOMKill must not be explicitly set to false when using cgroup v1"
	for _, tc := range []struct {
		unified bool
		single  *bool
		want    bool
		wantErr string
	}{
		{unified: true, single: nil, want: true},
		{unified: true, single: &no, want: true},
		{unified: true, single: &yes, want: false},
		{unified: false, single: nil, want: false},
		{unified: false, single: &yes, want: false},
		{unified: false, single: &no, wantErr: v1Err},
	} {
		got, err := oomGroupKill(tc.unified, tc.single)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("oomGroupKill(unified %v, singleProcessOOMKill %v) = %v, %q; want %v, %q", tc.unified, fmtBoolPtr(tc.single), got, gotErr, tc.want, tc.wantErr)
		}
	}
}

func fmtBoolPtr(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

// TestConfigSingleProcessOOMKill: Config detects the node's cgroup mode
// from CgroupDir (none: v1, a simulated node's default) and decides with
// SingleProcessOOMKill; false on a v1 node is refused by New.
func TestConfigSingleProcessOOMKill(t *testing.T) {
	yes, no := true, false
	v2, v1dir := cgroupV2Dir(t), cgroupV1Dir(t)
	for _, tc := range []struct {
		name      string
		cgroupDir string
		single    *bool
		want      bool
		wantErr   bool
	}{
		{name: "no cgroup dir (simulated node)", want: false},
		{name: "v2, default", cgroupDir: v2, want: true},
		{name: "v2, singleProcessOOMKill true", cgroupDir: v2, single: &yes, want: false},
		{name: "v2, singleProcessOOMKill false", cgroupDir: v2, single: &no, want: true},
		{name: "v1, default", cgroupDir: v1dir, want: false},
		{name: "v1, singleProcessOOMKill false", cgroupDir: v1dir, single: &no, wantErr: true},
		{name: "no cgroup dir, singleProcessOOMKill false", single: &no, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{NodeName: "n", CgroupDir: tc.cgroupDir, SingleProcessOOMKill: tc.single}
			err := cfg.setDefaults()
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "singleProcessOOMKill must not be explicitly set to false when using cgroup v1") {
					t.Fatalf("setDefaults: %v; want upstream's cgroup v1 error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.oomGroupKill != tc.want {
				t.Errorf("oomGroupKill = %v, want %v", cfg.oomGroupKill, tc.want)
			}
		})
	}
}

// TestOOMGroupUnified: on a node that kills whole containers on OOM, every
// container's CRI resources and the sandbox's resources (and its overhead,
// for a pod with one) carry Unified memory.oom.group=1, as upstream's
// calculateLinuxResources; otherwise no Unified at all. Each config has a
// map of its own.
func TestOOMGroupUnified(t *testing.T) {
	want := map[string]string{"memory.oom.group": "1"}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{withResources(resList("cpu", "100m"), resList("memory", "64Mi"))}}}
	pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-p"
	withOverhead := pod.DeepCopy()
	withOverhead.Spec.Overhead = resList("cpu", "250m", "memory", "120Mi")
	for _, oomGroup := range []bool{true, false} {
		check := func(what string, got *runtimeapi.LinuxContainerResources, on bool) {
			t.Helper()
			if on {
				if !maps.Equal(got.GetUnified(), want) {
					t.Errorf("oomGroup %v: %s Unified = %v, want %v", oomGroup, what, got.GetUnified(), want)
				}
			} else if got.GetUnified() != nil {
				t.Errorf("oomGroup %v: %s Unified = %v, want none", oomGroup, what, got.GetUnified())
			}
		}
		c1 := containerConfig(pod, &pod.Spec.Containers[0], false, 0, nil, nil, cgroupParams{nodeMemory: 32 << 30, oomGroup: oomGroup}).GetLinux().GetResources()
		check("container", c1, oomGroup)
		c2 := containerConfig(pod, &pod.Spec.Containers[0], true, 1, nil, nil, cgroupParams{nodeMemory: 32 << 30, oomGroup: oomGroup}).GetLinux().GetResources()
		check("init container", c2, oomGroup)
		sb := sandboxConfig(pod, 0, t.TempDir(), cgroupParams{oomGroup: oomGroup}, rootQOS).GetLinux()
		check("sandbox resources", sb.GetResources(), oomGroup)
		check("sandbox overhead (none)", sb.GetOverhead(), false)
		sbo := sandboxConfig(withOverhead, 0, t.TempDir(), cgroupParams{oomGroup: oomGroup}, rootQOS).GetLinux()
		check("sandbox resources (with overhead)", sbo.GetResources(), oomGroup)
		check("sandbox overhead", sbo.GetOverhead(), oomGroup)
		if oomGroup {
			c1.Unified["x"] = "y"
			if c2.Unified["x"] != "" || sb.GetResources().Unified["x"] != "" {
				t.Error("configs share one Unified map")
			}
		}
	}
}

// TestOOMGroupReachesRuntime: a kubelet of a cgroup v2 node (CgroupDir)
// creates sandboxes and containers with memory.oom.group on unless
// SingleProcessOOMKill is true; a kubelet without CgroupDir (a simulated
// node) sends no Unified, as before.
func TestOOMGroupReachesRuntime(t *testing.T) {
	yes := true
	v2 := cgroupV2Dir(t)
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want map[string]string
	}{
		{name: "cgroup v2", cfg: func(c *Config) { c.CgroupDir = v2 }, want: map[string]string{"memory.oom.group": "1"}},
		{name: "cgroup v2, singleProcessOOMKill", cfg: func(c *Config) { c.CgroupDir = v2; c.SingleProcessOOMKill = &yes }},
		{name: "simulated node", cfg: func(*Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			rec := &createRecorder{Runtime: h.rt, res: map[string]*runtimeapi.LinuxContainerResources{}}
			h.krt = rec
			h.k = h.newKubelet(tc.cfg)
			p := h.create(h.pod("oom", nil))
			if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
				t.Fatalf("container not running: %+v", cs.State)
			}
			rec.mu.Lock()
			got := rec.res["app"].GetUnified()
			rec.mu.Unlock()
			if !maps.Equal(got, tc.want) {
				t.Errorf("container Unified = %v, want %v", got, tc.want)
			}
			sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
			if err != nil || len(sbs) != 1 {
				t.Fatalf("sandboxes %v %v", sbs, err)
			}
			linux, err := h.rt.SandboxLinux(sbs[0].Id)
			if err != nil {
				t.Fatal(err)
			}
			if got := linux.GetResources().GetUnified(); !maps.Equal(got, tc.want) {
				t.Errorf("sandbox Unified = %v, want %v", got, tc.want)
			}
		})
	}
}
