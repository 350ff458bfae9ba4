package cri

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod cgroups on containerd, as upstream's kubelet makes them with its
// defaults (cgroupfs driver, cgroups per QoS class, root /): each pod in
// pod<uid> under its QoS class's cgroup, which the kubelet creates with
// upstream's ResourceConfigForPod values before the sandbox and removes
// once the pod is gone.

// podCgroupListing is procCgroup (a container's /proc/self/cgroup) with
// each path its parent's: the pod's cgroup, for cgroupLimits and
// cgroupShares.
func podCgroupListing(procCgroup string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			parts[2] = filepath.Dir(parts[2])
		}
		out = append(out, strings.Join(parts, ":"))
	}
	return strings.Join(out, "\n")
}

// podCgroup is the cgroup of pod ns/name (its container main's parent,
// the cpu hierarchy's path on cgroup v1) and its values.
func podCgroup(t *testing.T, ns, name string) (string, cgroupValues) {
	t.Helper()
	procCgroup := mustKubectl(t, "exec", "-n", ns, name, "-c", "main", "--", "cat", "/proc/self/cgroup")
	listing := podCgroupListing(procCgroup)
	paths := cgroupPaths(listing)
	path, ok := paths["cpu"]
	if !ok {
		path = paths[""]
	}
	var v cgroupValues
	var err error
	if v.memory, v.quota, v.period, err = cgroupLimits(listing); err != nil {
		t.Fatal(err)
	}
	if v.shares, err = cgroupShares(listing); err != nil {
		t.Fatal(err)
	}
	return path, v
}

// waitPodCgroup polls pod ns/name's cgroup until it is want (on cgroup
// v1 no memory limit reads back as the kernel's maximum, wantUnlimited).
func waitPodCgroup(t *testing.T, ns, name, wantPath string, want cgroupValues) {
	t.Helper()
	var path string
	var got cgroupValues
	if !waitUntil(30*time.Second, func() bool {
		path, got = podCgroup(t, ns, name)
		mem := got.memory == want.memory || (want.memory == wantUnlimited && got.memory >= 1<<62)
		return path == wantPath && sameShares(got.shares, want.shares) && got.quota == want.quota && mem
	}) {
		t.Fatalf("pod cgroup of %s/%s: %s %+v; want %s %+v", ns, name, path, got, wantPath, want)
	}
}

// wantUnlimited stands for no memory limit in a wanted cgroupValues.
const wantUnlimited = -1

// TestPodCgroupsByQOSClass: a Guaranteed pod runs in /kubepods/pod<uid>,
// a Burstable one in /kubepods/burstable/pod<uid>, a BestEffort one in
// /kubepods/besteffort/pod<uid>, each cgroup with upstream's values (the
// pod's CPU request as shares, its CPU limit as a CFS quota and its
// memory limit where every container sets them, 2 shares and no limits
// for BestEffort), the QoS classes' cgroups have upstream's shares,
// /kubepods the node's allocatable, and each pod cgroup is gone from
// every hierarchy once its pod is deleted.
func TestPodCgroupsByQOSClass(t *testing.T) {
	ns := newNamespace(t)
	limited := func(name, reqCPU, limCPU string) *v1.Pod {
		p := podSpec(name, "exec sleep 3600")
		p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU), v1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(limCPU), v1.ResourceMemory: resource.MustParse("64Mi")},
		}
		return p
	}
	besteffort := podSpec("besteffort", "exec sleep 3600")
	besteffort.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	cases := []struct {
		pod    *v1.Pod
		parent string
		want   cgroupValues
	}{
		{limited("guaranteed", "100m", "100m"), "/kubepods", cgroupValues{shares: 102, quota: 10000, period: 100000, memory: 64 << 20}},
		{limited("burstable", "100m", "200m"), "/kubepods/burstable", cgroupValues{shares: 102, quota: 20000, period: 100000, memory: 64 << 20}},
		{besteffort, "/kubepods/besteffort", cgroupValues{shares: 2, quota: -1, period: 100000, memory: wantUnlimited}},
	}
	var dirs []string
	for _, c := range cases {
		created := createPod(t, ns, c.pod)
		waitPod(t, ns, c.pod.Name, 60*time.Second, "Running", isRunning)
		path := c.parent + "/pod" + string(created.UID)
		waitPodCgroup(t, ns, c.pod.Name, path, c.want)
		dirs = append(dirs, path)
	}
	// The QoS classes' cgroups: BestEffort 2 shares, Burstable the shares
	// of its pods' CPU requests, at least this one's 100m (other tests'
	// Burstable pods may still run on the node).
	if got := qosShares(t, "/kubepods/besteffort"); !sameShares(got, 2) {
		t.Errorf("/kubepods/besteffort cpu.shares %d; want 2", got)
	}
	if got := qosShares(t, "/kubepods/burstable"); got < 102 && !sameShares(got, 102) {
		t.Errorf("/kubepods/burstable cpu.shares %d; want at least 102 (a 100m Burstable pod runs)", got)
	}
	// /kubepods has the node's allocatable, as upstream's kubelet enforces
	// it (--enforce-node-allocatable=pods): its CPU capacity as shares,
	// its memory capacity as the limit (no reservations, no huge pages).
	n, err := env.Client.CoreV1().Nodes().Get(ctxFor(t, 10*time.Second), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := n.Status.Capacity[v1.ResourceCPU], n.Status.Capacity[v1.ResourceMemory]
	if got, want := qosShares(t, "/kubepods"), cpu.MilliValue()*1024/1000; !sameShares(got, want) {
		t.Errorf("/kubepods cpu.shares %d; want %d (%s CPUs)", got, want, cpu.String())
	}
	listing := "1:cpu:/kubepods\n2:memory:/kubepods"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		listing = "0::/kubepods"
	}
	if got, _, _, err := cgroupLimits(listing); err != nil || got != mem.Value() {
		t.Errorf("/kubepods memory limit %d (%v); want %d", got, err, mem.Value())
	}
	for _, c := range cases {
		if err := env.Client.CoreV1().Pods(ns).Delete(ctxFor(t, 10*time.Second), c.pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitNoPods(t, ns, 60*time.Second)
	var left []string
	if !waitUntil(30*time.Second, func() bool {
		left = left[:0]
		for _, d := range dirs {
			for _, h := range []string{"cpu", "memory", "pids", "cpuset", ""} {
				if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", h, d)); err == nil {
					left = append(left, filepath.Join(h, d))
				}
			}
		}
		return len(left) == 0
	}) {
		t.Fatalf("pod cgroups left after their pods were deleted: %q", left)
	}
}

// qosShares reads the CPU shares of a QoS class's cgroup.
func qosShares(t *testing.T, path string) int64 {
	t.Helper()
	listing := "1:cpu:" + path
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		listing = "0::" + path
	}
	shares, err := cgroupShares(listing)
	if err != nil {
		t.Fatal(err)
	}
	return shares
}

// cgroupHierarchies are the host's cgroup hierarchies a pod cgroup may be
// in: the cgroup v1 ones (/sys/fs/cgroup/<controller>), or v2's one.
func cgroupHierarchies(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return out
}

// waitCgroupGone waits until cgroup name is in no hierarchy.
func waitCgroupGone(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	var left []string
	if !waitUntil(timeout, func() bool {
		left = left[:0]
		for _, h := range cgroupHierarchies(t) {
			if _, err := os.Stat(filepath.Join(h, name)); err == nil {
				left = append(left, filepath.Join(h, name))
			}
		}
		return len(left) == 0
	}) {
		t.Fatalf("cgroup %s left: %q", name, left)
	}
}

// TestOrphanedPodCgroupsRemoved: the kubelet's housekeeping removes the
// pod cgroups of pods that are not possibly running, as upstream's
// HandlePodCleanups: a finished pod's while the pod is still in the API,
// and one of a pod the kubelet never had, whose processes it kills first.
func TestOrphanedPodCgroupsRemoved(t *testing.T) {
	ns := newNamespace(t)
	job := podSpec("job", "exit 0")
	job.Spec.RestartPolicy = v1.RestartPolicyNever
	created := createPod(t, ns, job)
	waitPod(t, ns, job.Name, 60*time.Second, "Succeeded", phaseIs(v1.PodSucceeded))
	waitCgroupGone(t, "/kubepods/besteffort/pod"+string(created.UID), 30*time.Second)
	if _, err := env.Client.CoreV1().Pods(ns).Get(ctxFor(t, 10*time.Second), job.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the finished pod left the API: %v", err)
	}

	// A pod cgroup of no pod the kubelet has, a process in it.
	const never = "/kubepods/besteffort/pod0c4a11e2-never-had"
	hs := cgroupHierarchies(t)
	var made []string
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, "kubepods", "besteffort")); err == nil {
			if err := os.Mkdir(filepath.Join(h, never), 0o755); err != nil {
				t.Fatal(err)
			}
			made = append(made, h)
		}
	}
	if len(made) == 0 {
		t.Fatal("no hierarchy has /kubepods/besteffort")
	}
	t.Cleanup(func() {
		for _, h := range made {
			os.Remove(filepath.Join(h, never))
		}
	})
	// Never outliving the test: killed (and reaped by the Wait below) at
	// its end, and sent SIGTERM by the kernel should the test binary die
	// without its clean-ups (Pdeathsig; not SIGKILL, which is looked for),
	// so that it holds nothing it inherited (a flock lock) past the test.
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	if err := os.WriteFile(filepath.Join(made[0], never, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the process in the orphaned pod cgroup ended with %v; want killed", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the process in the orphaned pod cgroup was not killed")
	}
	waitCgroupGone(t, never, 30*time.Second)
}
