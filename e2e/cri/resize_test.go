package cri

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// In-place pod resize (pods/resize) on containerd, as upstream's node e2e
// resize tests (test/e2e/common/node/pod_resize.go): kubectl patch
// --subresource resize, then the pod's status (resources,
// allocatedResources, no resize condition left) and the container's
// cgroup files, read on the host for the cgroup the container's own
// /proc/self/cgroup names.

// resizePod is a Burstable busybox pod of one container "main" with the
// given requests and limits and resize policies.
func resizePod(name string, reqCPU, reqMem, limCPU, limMem string, policies ...v1.ContainerResizePolicy) *v1.Pod {
	p := podSpec(name, "exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU), v1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(limCPU), v1.ResourceMemory: resource.MustParse(limMem)},
	}
	p.Spec.Containers[0].ResizePolicy = policies
	return p
}

// resizePatch is the strategic merge patch setting container main's
// requests and limits.
func resizePatch(reqCPU, reqMem, limCPU, limMem string) string {
	return fmt.Sprintf(`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":%q,"memory":%q},"limits":{"cpu":%q,"memory":%q}}}]}}`,
		reqCPU, reqMem, limCPU, limMem)
}

// cgroupValues are a container's cgroup values as upstream's e2e checks
// them: cpu.shares (v2: cpu.weight converted back), the CFS quota and
// period, the memory limit.
type cgroupValues struct {
	shares, quota, period, memory int64
}

// wantCgroup is what the kubelet sets for the given CPU request and
// limit and memory limit (upstream's MilliCPUToShares and
// MilliCPUToQuota with the default 100 ms period).
func wantCgroup(reqCPU, limCPU, limMem string) cgroupValues {
	req, lim, mem := resource.MustParse(reqCPU), resource.MustParse(limCPU), resource.MustParse(limMem)
	return cgroupValues{shares: req.MilliValue() * 1024 / 1000, quota: lim.MilliValue() * 100000 / 1000, period: 100000, memory: mem.Value()}
}

// containerCgroup reads the cgroup values of the cgroup the container
// main of pod ns/name runs in.
func containerCgroup(t *testing.T, ns, name string) (cgroupValues, string) {
	t.Helper()
	procCgroup := mustKubectl(t, "exec", "-n", ns, name, "-c", "main", "--", "cat", "/proc/self/cgroup")
	var v cgroupValues
	var err error
	if v.memory, v.quota, v.period, err = cgroupLimits(procCgroup); err != nil {
		t.Fatal(err)
	}
	if v.shares, err = cgroupShares(procCgroup); err != nil {
		t.Fatal(err)
	}
	return v, procCgroup
}

// cgroupShares reads cpu.shares (v1), or cpu.weight (v2) converted back
// to shares as runc converts shares to a weight, of a process's cgroup.
func cgroupShares(procCgroup string) (int64, error) {
	paths := cgroupPaths(procCgroup)
	if p, ok := paths["cpu"]; ok { // cgroup v1
		dir := filepath.Join("/sys/fs/cgroup/cpu", p)
		if _, err := os.Stat(dir); err != nil {
			dir = filepath.Join("/sys/fs/cgroup/cpu,cpuacct", p)
		}
		b, err := os.ReadFile(filepath.Join(dir, "cpu.shares"))
		if err != nil {
			return 0, err
		}
		var shares int64
		_, err = fmt.Sscan(strings.TrimSpace(string(b)), &shares)
		return shares, err
	}
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", paths[""], "cpu.weight"))
	if err != nil {
		return 0, err
	}
	var weight int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &weight); err != nil {
		return 0, err
	}
	// runc: weight = 1 + ((shares-2)*9999)/262142; the inverse, rounded
	// as upstream's e2e compares (within the conversion's precision).
	return 2 + ((weight-1)*262142+9998)/9999, nil
}

// sameShares compares cpu.shares allowing cgroup v2's lossy weight.
func sameShares(got, want int64) bool {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return got >= want-27 && got <= want+27
	}
	return got == want
}

// resized reports whether container main of p reports the given
// resources and allocated requests, and no resize condition is left.
func resized(reqCPU, reqMem, limCPU, limMem string) func(p *v1.Pod) bool {
	rc, rm, lc, lm := resource.MustParse(reqCPU), resource.MustParse(reqMem), resource.MustParse(limCPU), resource.MustParse(limMem)
	return func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false
			}
		}
		cs := containerStatus(p, "main")
		if cs == nil || cs.State.Running == nil || cs.Resources == nil {
			return false
		}
		eq := func(l v1.ResourceList, n v1.ResourceName, q resource.Quantity) bool {
			v, ok := l[n]
			return ok && v.Cmp(q) == 0
		}
		return eq(cs.AllocatedResources, v1.ResourceCPU, rc) && eq(cs.AllocatedResources, v1.ResourceMemory, rm) &&
			eq(cs.Resources.Requests, v1.ResourceCPU, rc) && eq(cs.Resources.Requests, v1.ResourceMemory, rm) &&
			eq(cs.Resources.Limits, v1.ResourceCPU, lc) && eq(cs.Resources.Limits, v1.ResourceMemory, lm)
	}
}

// waitCgroup polls the container's cgroup values until they are want.
func waitCgroup(t *testing.T, ns, name string, want cgroupValues) {
	t.Helper()
	var got cgroupValues
	var procCgroup string
	if !waitUntil(30*time.Second, func() bool {
		got, procCgroup = containerCgroup(t, ns, name)
		return sameShares(got.shares, want.shares) && got.quota == want.quota && got.period == want.period && got.memory == want.memory
	}) {
		t.Fatalf("cgroup of %s/%s (%s): %+v; want %+v", ns, name, strings.TrimSpace(procCgroup), got, want)
	}
}

// TestResizeInPlace: a running Burstable container's CPU and memory
// requests and limits raised, then lowered, through kubectl patch
// --subresource resize with the default (NotRequired) resize policy: the
// container keeps running (same container ID, restartCount 0), its
// status reports the new resources and allocatedResources with no resize
// condition left, and its cgroup and its pod's cgroup (written by the
// kubelet: containerd 1.6 has no UpdatePodSandboxResources) have the new
// cpu.shares, CFS quota and memory limit each time.
func TestResizeInPlace(t *testing.T) {
	ns := newNamespace(t)
	p := resizePod("inplace", "100m", "32Mi", "200m", "64Mi")
	created := createPod(t, ns, p)
	started := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	id := containerStatus(started, "main").ContainerID
	waitCgroup(t, ns, p.Name, wantCgroup("100m", "200m", "64Mi"))
	// The pod's cgroup (the kubelet's, its one container's parent) has the
	// same values, every container limiting CPU and memory.
	podCgroupPath := "/kubepods/burstable/pod" + string(created.UID)
	waitPodCgroup(t, ns, p.Name, podCgroupPath, wantCgroup("100m", "200m", "64Mi"))

	for _, step := range [][4]string{
		{"200m", "48Mi", "400m", "128Mi"}, // up
		{"50m", "24Mi", "100m", "40Mi"},   // down, below where it started
	} {
		mustKubectl(t, "patch", "pod", p.Name, "-n", ns, "--subresource", "resize", "--patch", resizePatch(step[0], step[1], step[2], step[3]))
		got := waitPod(t, ns, p.Name, 60*time.Second, "resized to "+strings.Join(step[:], ","), resized(step[0], step[1], step[2], step[3]))
		cs := containerStatus(got, "main")
		if cs.RestartCount != 0 || cs.ContainerID != id {
			t.Fatalf("resize to %v: container %s restarted %d times; want %s not restarted", step, cs.ContainerID, cs.RestartCount, id)
		}
		waitCgroup(t, ns, p.Name, wantCgroup(step[0], step[2], step[3]))
		// containerd 1.6 has no UpdatePodSandboxResources: the kubelet
		// writes the pod cgroup itself (as upstream's).
		waitPodCgroup(t, ns, p.Name, podCgroupPath, wantCgroup(step[0], step[2], step[3]))
	}
	// containerd 1.6 has no UpdatePodSandboxResources (gRPC
	// Unimplemented), which the kubelet skips as upstream's: each resize
	// completed without a ResizeError.
	if !waitUntil(30*time.Second, func() bool { return len(podEvents(t, ns, "ResizeCompleted")) == 2 }) {
		t.Fatalf("ResizeCompleted events: %q; want 2", podEvents(t, ns, "ResizeCompleted"))
	}
	if errs := podEvents(t, ns, "ResizeError"); len(errs) != 0 {
		t.Fatalf("ResizeError events: %q", errs)
	}
}

// podEvents are the messages of the events of ns with reason.
func podEvents(t *testing.T, ns, reason string) []string {
	t.Helper()
	l, err := env.Client.CoreV1().Events(ns).List(ctxFor(t, 10*time.Second), metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		out = append(out, e.Message)
	}
	return out
}

// TestResizeRestartContainer: a memory resize of a container whose
// resizePolicy for memory is RestartContainer restarts it (restartCount
// 1, a new container ID), and it runs with the new memory limit.
func TestResizeRestartContainer(t *testing.T) {
	ns := newNamespace(t)
	p := resizePod("restart", "100m", "32Mi", "200m", "64Mi",
		v1.ContainerResizePolicy{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
		v1.ContainerResizePolicy{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer})
	createPod(t, ns, p)
	started := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	id := containerStatus(started, "main").ContainerID

	mustKubectl(t, "patch", "pod", p.Name, "-n", ns, "--subresource", "resize", "--patch", resizePatch("100m", "48Mi", "200m", "96Mi"))
	got := waitPod(t, ns, p.Name, 60*time.Second, "resized with a restart", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return resized("100m", "48Mi", "200m", "96Mi")(p) && cs.RestartCount == 1
	})
	if cs := containerStatus(got, "main"); cs.ContainerID == id {
		t.Fatalf("container %s restarted (restartCount %d) but kept its ID", id, cs.RestartCount)
	}
	waitCgroup(t, ns, p.Name, wantCgroup("100m", "200m", "96Mi"))
}

// TestResizeInfeasible: a resize asking for more CPU than the node has.
// With the API server's default admission chain, as upstream 1.37's,
// PodResizeValidator refuses it (403, "exceeds the node's allocatable")
// before the kubelet sees it: kubectl fails, the pod's spec, status and
// cgroup are unchanged and no resize condition appears. (The kubelet's
// own PodResizePending Infeasible, for the same check, is tested on
// simulated nodes: impl/kubelet TestResizeInfeasibleAndDeferred.)
func TestResizeInfeasible(t *testing.T) {
	ns := newNamespace(t)
	p := resizePod("infeasible", "100m", "32Mi", "200m", "64Mi")
	createPod(t, ns, p)
	started := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	id := containerStatus(started, "main").ContainerID
	want := wantCgroup("100m", "200m", "64Mi")
	waitCgroup(t, ns, p.Name, want)

	out, err := kubectl(t, "patch", "pod", p.Name, "-n", ns, "--subresource", "resize", "--patch", resizePatch("1000", "32Mi", "1000", "64Mi"))
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("kubectl patch --subresource resize to 1000 cpus: %q, %v; want Forbidden", out, err)
	}
	got, gerr := env.Client.CoreV1().Pods(ns).Get(ctxFor(t, 10*time.Second), p.Name, getOpts)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if cpu := got.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; cpu.Cmp(resource.MustParse("100m")) != 0 || got.Generation != started.Generation {
		t.Fatalf("refused resize changed the pod: cpu request %s, generation %d (was %d)", cpu.String(), got.Generation, started.Generation)
	}
	if !resized("100m", "32Mi", "200m", "64Mi")(got) || containerStatus(got, "main").ContainerID != id {
		t.Fatalf("refused resize changed the pod's status: conditions %s, containers %s", conditions(got), containerStates(got.Status.ContainerStatuses))
	}
	if v, procCgroup := containerCgroup(t, ns, p.Name); v != want {
		t.Fatalf("cgroup of %s after a refused resize (%s): %+v; want %+v", p.Name, strings.TrimSpace(procCgroup), v, want)
	}
}

// TestResizeDeferred: a resize that fits the node's allocatable but not
// beside the other pods is PodResizePending Deferred, the container's
// cgroup unchanged; once the other pod is deleted the kubelet retries
// and applies it in place (upstream's deferred resize test).
func TestResizeDeferred(t *testing.T) {
	ns := newNamespace(t)
	n, err := env.Client.CoreV1().Nodes().Get(ctxFor(t, 10*time.Second), node.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	alloc := n.Status.Allocatable[v1.ResourceCPU]
	p := resizePod("deferred", "100m", "32Mi", "200m", "64Mi")
	createPod(t, ns, p)
	started := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	id := containerStatus(started, "main").ContainerID
	hog := podSpec("hog", "exec sleep 3600")
	hog.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	hogCPU := fmt.Sprintf("%dm", alloc.MilliValue()-500)
	hog.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(hogCPU)}
	createPod(t, ns, hog)
	waitPod(t, ns, hog.Name, 60*time.Second, "Running", isRunning)

	mustKubectl(t, "patch", "pod", p.Name, "-n", ns, "--subresource", "resize", "--patch", resizePatch("600m", "32Mi", "800m", "64Mi"))
	deferred := waitPod(t, ns, p.Name, 30*time.Second, "PodResizePending Deferred", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending && c.Reason == v1.PodReasonDeferred && strings.Contains(c.Message, "Node didn't have enough resource: cpu") {
				return true
			}
		}
		return false
	})
	if cs := containerStatus(deferred, "main"); cs.AllocatedResources.Cpu().Cmp(resource.MustParse("100m")) != 0 {
		t.Fatalf("deferred resize: allocatedResources cpu %s; want 100m", cs.AllocatedResources.Cpu())
	}
	if v, procCgroup := containerCgroup(t, ns, p.Name); v != wantCgroup("100m", "200m", "64Mi") {
		t.Fatalf("cgroup of %s while its resize is deferred (%s): %+v; want %+v", p.Name, strings.TrimSpace(procCgroup), v, wantCgroup("100m", "200m", "64Mi"))
	}

	mustKubectl(t, "delete", "pod", hog.Name, "-n", ns, "--wait=false")
	got := waitPod(t, ns, p.Name, 60*time.Second, "resized once the other pod went", resized("600m", "32Mi", "800m", "64Mi"))
	if cs := containerStatus(got, "main"); cs.RestartCount != 0 || cs.ContainerID != id {
		t.Fatalf("deferred resize: container %s restarted %d times; want %s not restarted", cs.ContainerID, cs.RestartCount, id)
	}
	waitCgroup(t, ns, p.Name, wantCgroup("600m", "800m", "64Mi"))
}
