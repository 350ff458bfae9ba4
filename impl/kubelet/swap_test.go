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

// cgroupV1SwapDir is a cgroup v1 (hybrid) mount whose memory controller
// limits memory plus swap (memory.memsw.limit_in_bytes), as this
// machine's.
func cgroupV1SwapDir(t *testing.T) string {
	t.Helper()
	dir := cgroupV1Dir(t)
	if err := os.WriteFile(filepath.Join(dir, "memory", "memory.memsw.limit_in_bytes"), []byte("9223372036854771712\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cgroupV2SwapDir is a cgroup v2 mount where the cgroup this process is
// in (its /proc/self/cgroup's, as a kubelet finds its own) has
// memory.swap.max.
func cgroupV2SwapDir(t *testing.T) string {
	t.Helper()
	dir := cgroupV2Dir(t)
	b, err := os.ReadFile(procSelfCgroup)
	if err != nil {
		t.Fatal(err)
	}
	self, err := unifiedCgroupPath(string(b))
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, self)
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "memory.swap.max"), []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUnifiedCgroupPath: the cgroup v2 path of a /proc/<pid>/cgroup
// listing is its line without controllers; none is ""; a line without two
// colons is an error.
func TestUnifiedCgroupPath(t *testing.T) {
	for _, tc := range []struct {
		name, listing, want string
		wantErr             bool
	}{
		{name: "v2", listing: "0::/system.slice/kubelet.service\n", want: "/system.slice/kubelet.service"},
		{name: "hybrid", listing: "4:memory:/mem\n1:name=systemd:/sd\n0::/user.slice\n", want: "/user.slice"},
		{name: "v1 only", listing: "4:memory:/mem\n3:cpu,cpuacct:/c\n"},
		{name: "a path with colons", listing: "0::/a:b\n", want: "/a:b"},
		{name: "no trailing newline", listing: "0::/x", want: "/x"},
		{name: "empty"},
		{name: "malformed", listing: "0::/x\nnonsense\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := unifiedCgroupPath(tc.listing)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("unifiedCgroupPath(%q) = %q, %v; want %q, error %v", tc.listing, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestDetectSwapControl: as upstream's swapControllerAvailable, cgroup v1
// has swap control when the root memory controller has
// memory.memsw.limit_in_bytes, cgroup v2 when the kubelet's own cgroup
// (from /proc/self/cgroup) has memory.swap.max; anything that cannot be
// told is no control, with an error only when a file is not simply
// missing.
func TestDetectSwapControl(t *testing.T) {
	writeFile := func(path, content string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tmp := t.TempDir()
	self := writeFile(filepath.Join(tmp, "self"), "4:memory:/ignored\n0::/kubelet.slice/kubelet.service\n")
	selfRoot := writeFile(filepath.Join(tmp, "self-root"), "0::/\n")
	malformed := writeFile(filepath.Join(tmp, "malformed"), "garbage\n")
	noSelf := filepath.Join(tmp, "missing")

	v2Own := cgroupV2Dir(t) // memory.swap.max in the kubelet's cgroup
	writeFile(filepath.Join(v2Own, "kubelet.slice", "kubelet.service", "memory.swap.max"), "max\n")
	v2Child := cgroupV2Dir(t) // only in some other cgroup
	writeFile(filepath.Join(v2Child, "other.slice", "memory.swap.max"), "max\n")
	v2WithV1File := cgroupV2Dir(t) // a v1 file means nothing on v2
	writeFile(filepath.Join(v2WithV1File, "memory", "memory.memsw.limit_in_bytes"), "0\n")
	notADir := writeFile(filepath.Join(tmp, "not-a-dir"), "")

	for _, tc := range []struct {
		name       string
		dir        string
		unified    bool
		selfCgroup string
		want       swapControl
		wantErr    string
	}{
		{name: "v1 with memsw", dir: cgroupV1SwapDir(t), selfCgroup: noSelf, want: swapMemsw},
		{name: "v1 without memsw", dir: cgroupV1Dir(t), selfCgroup: noSelf},
		{name: "no mount", dir: filepath.Join(tmp, "none"), selfCgroup: noSelf},
		{name: "v1, cannot look", dir: notADir, selfCgroup: noSelf, wantErr: "not a directory"},
		{name: "v2, the kubelet's cgroup has memory.swap.max", dir: v2Own, unified: true, selfCgroup: self, want: swapMax},
		{name: "v2, another cgroup has it", dir: v2Child, unified: true, selfCgroup: self},
		{name: "v2, the kubelet in the root cgroup, which has none", dir: v2Child, unified: true, selfCgroup: selfRoot},
		{name: "v2 ignores memsw", dir: v2WithV1File, unified: true, selfCgroup: selfRoot},
		{name: "v2, no /proc/self/cgroup", dir: v2Own, unified: true, selfCgroup: noSelf, wantErr: "finding the kubelet's cgroup"},
		{name: "v2, invalid /proc/self/cgroup", dir: v2Own, unified: true, selfCgroup: malformed, wantErr: "invalid cgroup entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := detectSwapControl(tc.dir, tc.unified, tc.selfCgroup)
			if got != tc.want {
				t.Errorf("detectSwapControl = %v, want %v", got, tc.want)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("detectSwapControl error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestConfigSwapControl: a kubelet detects its node's swap control from
// CgroupDir at start; without CgroupDir (a simulated node) there is none.
func TestConfigSwapControl(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
		want swapControl
	}{
		{name: "simulated node"},
		{name: "v1 with memsw", dir: cgroupV1SwapDir(t), want: swapMemsw},
		{name: "v1 without memsw", dir: cgroupV1Dir(t)},
		{name: "v2 with swap", dir: cgroupV2SwapDir(t), want: swapMax},
		{name: "v2 without swap", dir: cgroupV2Dir(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{NodeName: "n", CgroupDir: tc.dir}
			if err := cfg.setDefaults(); err != nil {
				t.Fatal(err)
			}
			if cfg.swapControl != tc.want {
				t.Errorf("swapControl = %v, want %v", cfg.swapControl, tc.want)
			}
		})
	}
}

// TestNoSwapContainerResources: as upstream's ConfigureNoSwap, every
// container (init and app alike) of a node with swap control is kept from
// swapping: on cgroup v1 memory plus swap is limited to the memory limit
// (the pod's standing in for the container's, none for none), on cgroup
// v2 memory.swap.max is 0 whatever the limit, beside memory.oom.group;
// without swap control nothing is set.
func TestNoSwapContainerResources(t *testing.T) {
	limited := withResources(resList("memory", "32Mi"), resList("memory", "64Mi"))
	limited.Name = "limited"
	unlimited := v1.Container{Name: "unlimited"}
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{limited}, Containers: []v1.Container{limited, unlimited}}}
	pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-p"
	podLevel := pod.DeepCopy()
	podLevel.Spec.Resources = &v1.ResourceRequirements{Limits: resList("memory", "1Gi")}
	type want struct {
		memsw   int64
		unified map[string]string
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		c        *v1.Container
		init     bool
		oomGroup bool
		swap     swapControl
		want     want
	}{
		{name: "no control", pod: pod, c: &limited, swap: swapUncontrolled},
		{name: "no control, oom group", pod: pod, c: &limited, oomGroup: true, swap: swapUncontrolled, want: want{unified: map[string]string{"memory.oom.group": "1"}}},
		{name: "v1 memsw, limited", pod: pod, c: &limited, swap: swapMemsw, want: want{memsw: 64 << 20}},
		{name: "v1 memsw, init container", pod: pod, c: &limited, init: true, swap: swapMemsw, want: want{memsw: 64 << 20}},
		{name: "v1 memsw, unlimited", pod: pod, c: &unlimited, swap: swapMemsw},
		{name: "v1 memsw, the pod's limit", pod: podLevel, c: &podLevel.Spec.Containers[1], swap: swapMemsw, want: want{memsw: 1 << 30}},
		{name: "v2, limited", pod: pod, c: &limited, swap: swapMax, want: want{unified: map[string]string{"memory.swap.max": "0"}}},
		{name: "v2, unlimited", pod: pod, c: &unlimited, swap: swapMax, want: want{unified: map[string]string{"memory.swap.max": "0"}}},
		{name: "v2, init container", pod: pod, c: &limited, init: true, swap: swapMax, want: want{unified: map[string]string{"memory.swap.max": "0"}}},
		{name: "v2, oom group", pod: pod, c: &limited, oomGroup: true, swap: swapMax, want: want{unified: map[string]string{"memory.oom.group": "1", "memory.swap.max": "0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := containerConfig(tc.pod, tc.c, tc.init, 0, nil, nil, 32<<30, nil, tc.oomGroup, tc.swap).GetLinux().GetResources()
			if r.GetMemorySwapLimitInBytes() != tc.want.memsw {
				t.Errorf("MemorySwapLimitInBytes = %d, want %d", r.GetMemorySwapLimitInBytes(), tc.want.memsw)
			}
			if !maps.Equal(r.GetUnified(), tc.want.unified) || (tc.want.unified == nil) != (r.GetUnified() == nil) {
				t.Errorf("Unified = %v, want %v", r.GetUnified(), tc.want.unified)
			}
		})
	}
}

// TestNoSwapReachesRuntime: a kubelet of a node with swap control
// (CgroupDir) creates containers that may not swap; a sandbox's
// resources say nothing of swap, as upstream's; a simulated node's
// containers are as before.
func TestNoSwapReachesRuntime(t *testing.T) {
	v1dir, v2dir := cgroupV1SwapDir(t), cgroupV2SwapDir(t)
	for _, tc := range []struct {
		name      string
		dir       string
		wantMemsw int64
		want      map[string]string
	}{
		{name: "cgroup v1 with memsw", dir: v1dir, wantMemsw: 64 << 20},
		{name: "cgroup v2 with swap", dir: v2dir, want: map[string]string{"memory.oom.group": "1", "memory.swap.max": "0"}},
		{name: "simulated node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			rec := &createRecorder{Runtime: h.rt, res: map[string]*runtimeapi.LinuxContainerResources{}}
			h.krt = rec
			h.k = h.newKubelet(func(c *Config) { c.CgroupDir = tc.dir })
			p := h.create(h.pod("swap", func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: resList("memory", "64Mi")}
			}))
			if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
				t.Fatalf("container not running: %+v", cs.State)
			}
			rec.mu.Lock()
			got := rec.res["app"]
			rec.mu.Unlock()
			if got.GetMemorySwapLimitInBytes() != tc.wantMemsw || !maps.Equal(got.GetUnified(), tc.want) {
				t.Errorf("container MemorySwapLimitInBytes %d, Unified %v; want %d, %v", got.GetMemorySwapLimitInBytes(), got.GetUnified(), tc.wantMemsw, tc.want)
			}
			sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
			if err != nil || len(sbs) != 1 {
				t.Fatalf("sandboxes %v %v", sbs, err)
			}
			linux, err := h.rt.SandboxLinux(sbs[0].Id)
			if err != nil {
				t.Fatal(err)
			}
			if r := linux.GetResources(); r.GetMemorySwapLimitInBytes() != 0 || r.GetUnified()["memory.swap.max"] != "" {
				t.Errorf("sandbox resources %v, want no swap limit", r)
			}
		})
	}
}
