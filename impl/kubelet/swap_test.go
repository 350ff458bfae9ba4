package kubelet

import (
	"fmt"
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
			if cfg.swap.control != tc.want {
				t.Errorf("swap control = %v, want %v", cfg.swap.control, tc.want)
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
			r := containerConfig(tc.pod, tc.c, tc.init, 0, nil, nil, cgroupParams{nodeMemory: 32 << 30, oomGroup: tc.oomGroup, swap: nodeSwap{control: tc.swap}}).GetLinux().GetResources()
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

// TestCheckSwapBehavior: memorySwap.swapBehavior is "", NoSwap or
// LimitedSwap, LimitedSwap only on cgroup v2, with upstream's messages.
func TestCheckSwapBehavior(t *testing.T) {
	for _, tc := range []struct {
		b       SwapBehavior
		unified bool
		wantErr string
	}{
		{b: ""}, {b: "", unified: true},
		{b: NoSwap}, {b: NoSwap, unified: true},
		{b: LimitedSwap, unified: true},
		{b: LimitedSwap, wantErr: "swap feature is enabled and LimitedSwap but it is only supported with cgroupv2"},
		{b: "UnlimitedSwap", unified: true, wantErr: `invalid configuration: memorySwap.swapBehavior "UnlimitedSwap" must be one of: "", "LimitedSwap" or "NoSwap"`},
		{b: "noswap", wantErr: `memorySwap.swapBehavior "noswap" must be one of`},
	} {
		err := checkSwapBehavior(tc.b, tc.unified)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("checkSwapBehavior(%q, unified %v) = %v, want %q", tc.b, tc.unified, err, tc.wantErr)
		}
	}
}

// swapPod is a pod of the given containers' resources, its QoS class
// computed (status.qosClass left empty, as upstream's GetPodQOS allows).
func swapPod(mutate func(*v1.Pod), rs ...v1.ResourceRequirements) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", "uid-p"
	for i, r := range rs {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Resources: r})
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// TestContainerSwapBehavior: as upstream's GetContainerSwapBehavior,
// LimitedSwap only for a node so configured with cgroup v2 swap control,
// and there only for the containers of Burstable, non-critical pods that
// ask for memory with a request unlike their limit.
func TestContainerSwapBehavior(t *testing.T) {
	limitedV2 := nodeSwap{control: swapMax, limited: true, capacity: 5 << 30}
	req := v1.ResourceRequirements{Requests: resList("memory", "1Gi")}
	reqLim := v1.ResourceRequirements{Requests: resList("memory", "1Gi"), Limits: resList("memory", "2Gi")}
	equal := v1.ResourceRequirements{Requests: resList("memory", "2Gi"), Limits: resList("memory", "2Gi")}
	cpuOnly := v1.ResourceRequirements{Requests: resList("cpu", "100m")}
	guaranteed := v1.ResourceRequirements{Requests: resList("cpu", "1", "memory", "1Gi"), Limits: resList("cpu", "1", "memory", "1Gi")}
	prio := func(v int32) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Priority = &v } }
	annotate := func(k, v string) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Annotations = map[string]string{k: v} }
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		c    int // index of the container
		ns   nodeSwap
		want SwapBehavior
	}{
		{name: "Burstable, request only", pod: swapPod(nil, req), ns: limitedV2, want: LimitedSwap},
		{name: "Burstable, request below limit", pod: swapPod(nil, reqLim), ns: limitedV2, want: LimitedSwap},
		{name: "Burstable, a container requesting its limit", pod: swapPod(nil, req, equal), c: 1, ns: limitedV2, want: NoSwap},
		{name: "Burstable, its other container", pod: swapPod(nil, req, equal), ns: limitedV2, want: LimitedSwap},
		{name: "Burstable, a container without memory", pod: swapPod(nil, req, cpuOnly), c: 1, ns: limitedV2, want: NoSwap},
		{name: "Burstable, a container of nothing", pod: swapPod(nil, req, v1.ResourceRequirements{}), c: 1, ns: limitedV2, want: NoSwap},
		{name: "Burstable by status.qosClass", pod: swapPod(func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBurstable }, reqLim), ns: limitedV2, want: LimitedSwap},
		{name: "status.qosClass says Guaranteed", pod: swapPod(func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSGuaranteed }, reqLim), ns: limitedV2, want: NoSwap},
		{name: "Guaranteed", pod: swapPod(nil, guaranteed), ns: limitedV2, want: NoSwap},
		{name: "BestEffort", pod: swapPod(nil, v1.ResourceRequirements{}), ns: limitedV2, want: NoSwap},
		{name: "system-cluster-critical priority", pod: swapPod(prio(2000000000), req), ns: limitedV2, want: NoSwap},
		{name: "system-node-critical priority", pod: swapPod(prio(2000001000), req), ns: limitedV2, want: NoSwap},
		{name: "high but not critical priority", pod: swapPod(prio(1000000000), req), ns: limitedV2, want: LimitedSwap},
		{name: "mirror pod", pod: swapPod(annotate(v1.MirrorPodAnnotationKey, "x"), req), ns: limitedV2, want: NoSwap},
		{name: "static pod", pod: swapPod(annotate("kubernetes.io/config.source", "file"), req), ns: limitedV2, want: NoSwap},
		{name: "NoSwap node", pod: swapPod(nil, req), ns: nodeSwap{control: swapMax, capacity: 5 << 30}, want: NoSwap},
		{name: "cgroup v1 memsw", pod: swapPod(nil, req), ns: nodeSwap{control: swapMemsw, limited: true, capacity: 5 << 30}, want: NoSwap},
		{name: "no swap control", pod: swapPod(nil, req), ns: nodeSwap{limited: true, capacity: 5 << 30}, want: NoSwap},
		{name: "no swap space", pod: swapPod(nil, req), ns: nodeSwap{control: swapMax, limited: true}, want: LimitedSwap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerSwapBehavior(tc.pod, &tc.pod.Spec.Containers[tc.c], tc.ns); got != tc.want {
				t.Errorf("containerSwapBehavior = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLimitedSwapBytes: upstream's calcSwapForBurstablePods, its float
// rounding included, and its two refusals.
func TestLimitedSwapBytes(t *testing.T) {
	const gi = int64(1) << 30
	for _, tc := range []struct {
		req, mem, swap, want int64
		wantErr              string
	}{
		{req: gi, mem: 80 * gi, swap: 4 * gi, want: 53687091}, // upstream's own example
		{req: gi, mem: 40 * gi, swap: 5 * gi, want: 134217728},
		{req: 2 * gi, mem: 40 * gi, swap: 5 * gi, want: 268435456},
		{req: 29, mem: 100, swap: 100, want: 28}, // 0.29*100 in float64 is 28.999…, truncated (exact arithmetic gives 29)
		{req: gi, mem: 8 * gi, swap: 0, want: 0},
		{req: 0, mem: 8 * gi, swap: 4 * gi, want: 0},
		{req: 8 * gi, mem: 8 * gi, swap: 4 * gi, want: 4 * gi},
		{req: 8*gi + 1, mem: 8 * gi, swap: 4 * gi, wantErr: "container request 8589934593 is larger than total node memory 8589934592"},
		{req: gi, mem: 0, swap: 4 * gi, wantErr: "total node memory is 0"},
	} {
		got, err := limitedSwapBytes(tc.req, tc.mem, tc.swap)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("limitedSwapBytes(%d, %d, %d) error %v, want %q", tc.req, tc.mem, tc.swap, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("limitedSwapBytes(%d, %d, %d) = %d, %v; want %d", tc.req, tc.mem, tc.swap, got, err, tc.want)
		}
	}
}

// TestLimitedSwapContainerResources: under LimitedSwap on cgroup v2, a
// swapping container's memory.swap.max is its share, every other
// container's 0 (NoSwap), as is one whose share cannot be computed; on a
// node without swap control nothing is set.
func TestLimitedSwapContainerResources(t *testing.T) {
	const nodeMem, swap = int64(40) << 30, int64(5) << 30
	limited := nodeSwap{control: swapMax, limited: true, capacity: swap}
	pod := swapPod(nil,
		v1.ResourceRequirements{Requests: resList("memory", "1Gi")},
		v1.ResourceRequirements{Requests: resList("memory", "2Gi"), Limits: resList("memory", "2Gi")},
		v1.ResourceRequirements{},
		v1.ResourceRequirements{Requests: resList("memory", "41Gi")},
	)
	critical := pod.DeepCopy()
	critical.Spec.Priority = new(int32(2000000000))
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		c        int
		init     bool
		oomGroup bool
		ns       nodeSwap
		want     map[string]string
	}{
		{name: "swapping container", pod: pod, ns: limited, want: map[string]string{"memory.swap.max": "134217728"}},
		{name: "as an init container", pod: pod, init: true, ns: limited, want: map[string]string{"memory.swap.max": "134217728"}},
		{name: "beside memory.oom.group", pod: pod, oomGroup: true, ns: limited, want: map[string]string{"memory.oom.group": "1", "memory.swap.max": "134217728"}},
		{name: "request equal to limit", pod: pod, c: 1, ns: limited, want: map[string]string{"memory.swap.max": "0"}},
		{name: "no memory", pod: pod, c: 2, ns: limited, want: map[string]string{"memory.swap.max": "0"}},
		{name: "request beyond the node's memory", pod: pod, c: 3, ns: limited, want: map[string]string{"memory.swap.max": "0"}},
		{name: "critical pod", pod: critical, ns: limited, want: map[string]string{"memory.swap.max": "0"}},
		{name: "NoSwap", pod: pod, ns: nodeSwap{control: swapMax, capacity: swap}, want: map[string]string{"memory.swap.max": "0"}},
		{name: "no swap space", pod: pod, ns: nodeSwap{control: swapMax, limited: true}, want: map[string]string{"memory.swap.max": "0"}},
		{name: "no swap control", pod: pod, ns: nodeSwap{limited: true, capacity: swap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := containerConfig(tc.pod, &tc.pod.Spec.Containers[tc.c], tc.init, 0, nil, nil, cgroupParams{nodeMemory: nodeMem, oomGroup: tc.oomGroup, swap: tc.ns}).GetLinux().GetResources()
			if !maps.Equal(r.GetUnified(), tc.want) || (tc.want == nil) != (r.GetUnified() == nil) {
				t.Errorf("Unified = %v, want %v", r.GetUnified(), tc.want)
			}
			if r.GetMemorySwapLimitInBytes() != 0 {
				t.Errorf("MemorySwapLimitInBytes = %d on cgroup v2", r.GetMemorySwapLimitInBytes())
			}
		})
	}
}

// TestConfigMemorySwap: New takes memorySwap.swapBehavior and failSwapOn
// as upstream's kubelet does: LimitedSwap only on cgroup v2 (a simulated
// node is cgroup v1), nothing but "", NoSwap and LimitedSwap; a node with
// swap only with failSwapOn false (it defaults to true); no negative swap
// capacity.
func TestConfigMemorySwap(t *testing.T) {
	v2 := cgroupV2SwapDir(t)
	off, on := new(false), new(true)
	const swapOn = "kubelet config: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"
	for _, tc := range []struct {
		name       string
		dir        string
		behavior   SwapBehavior
		capacity   string
		failSwapOn *bool
		want       nodeSwap
		wantErr    string
	}{
		{name: "default", dir: v2, want: nodeSwap{control: swapMax}},
		{name: "LimitedSwap on cgroup v2", dir: v2, behavior: LimitedSwap, capacity: "4Gi", failSwapOn: off, want: nodeSwap{control: swapMax, limited: true, capacity: 4 << 30}},
		{name: "LimitedSwap without swap", dir: v2, behavior: LimitedSwap, want: nodeSwap{control: swapMax, limited: true}},
		{name: "NoSwap with swap space", dir: v2, behavior: NoSwap, capacity: "4Gi", failSwapOn: off, want: nodeSwap{control: swapMax, capacity: 4 << 30}},
		{name: "swap with failSwapOn's default", dir: v2, behavior: LimitedSwap, capacity: "4Gi", wantErr: swapOn},
		{name: "swap with failSwapOn", capacity: "1Ki", failSwapOn: on, wantErr: swapOn},
		{name: "no swap with failSwapOn", failSwapOn: on},
		{name: "LimitedSwap on cgroup v1", dir: cgroupV1SwapDir(t), behavior: LimitedSwap, wantErr: "kubelet config: swap feature is enabled and LimitedSwap but it is only supported with cgroupv2"},
		{name: "LimitedSwap on a simulated node", behavior: LimitedSwap, capacity: "4Gi", failSwapOn: off, wantErr: "only supported with cgroupv2"},
		{name: "unknown behavior", dir: v2, behavior: "UnlimitedSwap", wantErr: `memorySwap.swapBehavior "UnlimitedSwap" must be one of`},
		{name: "negative capacity", capacity: "-1Gi", wantErr: "kubelet config: swap capacity -1Gi must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{NodeName: "n", CgroupDir: tc.dir, MemorySwapBehavior: tc.behavior, FailSwapOn: tc.failSwapOn}
			if tc.capacity != "" {
				cfg.SwapCapacity = resourceMust(tc.capacity)
			}
			err := cfg.setDefaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("setDefaults error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.swap != tc.want {
				t.Errorf("swap = %+v, want %+v", cfg.swap, tc.want)
			}
		})
	}
}

// TestLimitedSwapReachesRuntime: a LimitedSwap kubelet (failSwapOn
// false) of a cgroup v2 node with swap control creates a Burstable pod's containers with their
// share of the node's swap (request 1Gi of 32Gi of memory, of 8Gi of
// swap: 256Mi), and a container requesting its limit with none.
func TestLimitedSwapReachesRuntime(t *testing.T) {
	h := newHarness(t, nil)
	rec := &createRecorder{Runtime: h.rt, res: map[string]*runtimeapi.LinuxContainerResources{}}
	h.krt = rec
	dir := cgroupV2SwapDir(t)
	h.k = h.newKubelet(func(c *Config) {
		c.CgroupDir, c.MemorySwapBehavior, c.SwapCapacity, c.FailSwapOn = dir, LimitedSwap, resourceMust("8Gi"), new(false)
	})
	p := h.create(h.pod("limited", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: resList("memory", "1Gi"), Limits: resList("memory", "2Gi")}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "fixed", Image: "nginx:1.27",
			Resources: v1.ResourceRequirements{Requests: resList("memory", "64Mi"), Limits: resList("memory", "64Mi")}})
	}))
	got := h.sync(p)
	for _, name := range []string{"app", "fixed"} {
		if cs := cstatus(got, name); cs.State.Running == nil {
			t.Fatalf("container %s not running: %+v", name, cs.State)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for name, want := range map[string]string{"app": "268435456", "fixed": "0"} {
		if v := rec.res[name].GetUnified()["memory.swap.max"]; v != want {
			t.Errorf("container %s memory.swap.max = %q, want %q", name, v, want)
		}
	}
}

// TestNodeStatusSwap: as upstream's kubelet, the node's swap capacity is
// published in status.nodeInfo.swap.capacity, and nothing for a node
// without swap.
func TestNodeStatusSwap(t *testing.T) {
	for _, tc := range []struct {
		capacity string
		want     *int64
	}{
		{capacity: "", want: nil},
		{capacity: "0", want: nil},
		{capacity: "2Gi", want: new(int64(2 << 30))},
	} {
		cfg := Config{NodeName: "n", FailSwapOn: new(false)}
		if tc.capacity != "" {
			cfg.SwapCapacity = resourceMust(tc.capacity)
		}
		if err := cfg.setDefaults(); err != nil {
			t.Fatal(err)
		}
		got := NodeStatus(&cfg, nil, Pressure{}, "sim://1", nil, t0).NodeInfo.Swap
		switch {
		case tc.want == nil && got != nil:
			t.Errorf("swap capacity %q: nodeInfo.swap = %+v, want none", tc.capacity, got)
		case tc.want != nil && (got == nil || got.Capacity == nil || *got.Capacity != *tc.want):
			t.Errorf("swap capacity %q: nodeInfo.swap = %+v, want capacity %d", tc.capacity, got, *tc.want)
		}
	}
}
