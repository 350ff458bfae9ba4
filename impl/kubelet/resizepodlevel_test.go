package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resizePodLevel changes the API pod's pod-level resources as the API
// server's pods/resize does (the generation bumped) and hands it to the
// kubelet.
func (h *harness) resizePodLevel(p *v1.Pod, r v1.ResourceRequirements) *v1.Pod {
	h.t.Helper()
	cur := h.get(p)
	cur.Spec.Resources = &r
	cur.Generation++
	updated, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.k.HandlePod(updated)
	return updated
}

// sandboxResources are the resources the runtime's only sandbox was last
// given (RunPodSandbox or UpdatePodSandboxResources).
func (h *harness) sandboxResources() *runtimeapi.LinuxContainerResources {
	h.t.Helper()
	sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil || len(sbs) != 1 {
		h.t.Fatalf("sandboxes %v %v", sbs, err)
	}
	linux, err := h.rt.SandboxLinux(sbs[0].Id)
	if err != nil {
		h.t.Fatal(err)
	}
	return linux.GetResources()
}

// sandboxResourcesOf are the resources the runtime's latest sandbox of
// p was last given.
func (h *harness) sandboxResourcesOf(p *v1.Pod) *runtimeapi.LinuxContainerResources {
	h.t.Helper()
	ps, err := h.rt.PodState(h.ctx, string(p.UID))
	if err != nil || ps.LatestSandbox() == nil {
		h.t.Fatalf("sandbox of %s: %v", p.Name, err)
	}
	linux, err := h.rt.SandboxLinux(ps.LatestSandbox().ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return linux.GetResources()
}

// TestResizePodLevel: a resize of a running pod's pod-level resources
// (spec.resources, InPlacePodLevelResourcesVerticalScaling, beta and on
// since 1.36) is admitted against the node, allocated and applied as a
// container resize is: the sandbox (its pod cgroup) gets the new
// pod-level values and a container without limits of its own the new
// pod-level limits, in place; PodResizeInProgress with ResizeStarted,
// then ResizeCompleted. A change of the pod-level request alone (no
// container's cgroup changes) is applied to the sandbox too. One above
// the node is Infeasible, one that does not fit beside another pod
// Deferred, and neither is applied.
func TestResizePodLevel(t *testing.T) {
	h, events := resizeHarness(t, nil)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: resList("cpu", "200m", "memory", "64Mi"), Limits: resList("cpu", "400m", "memory", "128Mi")}
		p.Status.QOSClass = v1.PodQOSBurstable // the API server's (the harness's pods are BestEffort)
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	if sb := h.sandboxResources(); !proto.Equal(sb, sandboxRes(204, 40000, 128<<20)) {
		t.Fatalf("sandbox resources %v at start", sb)
	}
	drain(events)

	// Limits up: the sandbox and the container follow.
	h.resizePodLevel(p, v1.ResourceRequirements{Requests: resList("cpu", "200m", "memory", "64Mi"), Limits: resList("cpu", "600m", "memory", "256Mi")})
	got := h.sync(p)
	c := condOf(got, v1.PodResizeInProgress)
	if c == nil || c.Status != v1.ConditionTrue || c.ObservedGeneration != got.Generation {
		t.Fatalf("after the allocating sync: PodResizeInProgress %+v (generation %d); conditions %+v; events %q", c, got.Generation, got.Status.Conditions, drain(events))
	}
	if ev := drain(events); !hasEvent(ev, "Normal ResizeStarted Pod resize started: ") {
		t.Errorf("events %q, want ResizeStarted", ev)
	}
	if sb := h.sandboxResources(); !proto.Equal(sb, sandboxRes(204, 60000, 256<<20)) {
		t.Errorf("sandbox resources %v after the resize, want quota 60000 and 256Mi", sb)
	}
	if r := h.runtimeResources(p, "app"); r.CpuQuota != 60000 || r.MemoryLimitInBytes != 256<<20 {
		t.Errorf("container resources %v, want the pod-level limits (quota 60000, 256Mi)", r)
	}
	got = h.sync(p)
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("resize still in progress once applied: %+v", c)
	}
	if ev := drain(events); !hasEvent(ev, "Normal ResizeCompleted Pod resize completed: ") {
		t.Errorf("events %q, want ResizeCompleted", ev)
	}
	if cs := cstatus(got, "app"); cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("the container was restarted: %+v", cs)
	}
	// The pod-level status: the requests allocated, the resources those
	// of its pod cgroup (a simulated node's: as the allocation gives them;
	// 204 shares are 200m).
	if !apiequality.Semantic.DeepEqual(got.Status.AllocatedResources, resList("cpu", "200m", "memory", "64Mi")) ||
		got.Status.Resources == nil || !apiequality.Semantic.DeepEqual(got.Status.Resources.Limits, resList("cpu", "600m", "memory", "256Mi")) ||
		!apiequality.Semantic.DeepEqual(got.Status.Resources.Requests, resList("cpu", "200m", "memory", "64Mi")) {
		t.Errorf("pod status allocatedResources %v resources %+v", got.Status.AllocatedResources, got.Status.Resources)
	}

	// The pod-level request alone: only the sandbox's shares change.
	h.resizePodLevel(p, v1.ResourceRequirements{Requests: resList("cpu", "300m", "memory", "64Mi"), Limits: resList("cpu", "600m", "memory", "256Mi")})
	h.sync(p)
	if sb := h.sandboxResources(); !proto.Equal(sb, sandboxRes(307, 60000, 256<<20)) {
		t.Errorf("sandbox resources %v after a request resize, want 307 shares", sb)
	}
	got = h.sync(p)
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("request resize still in progress once applied: %+v", c)
	}

	// Above the node: Infeasible, not applied.
	h.resizePodLevel(p, v1.ResourceRequirements{Requests: resList("cpu", "2", "memory", "64Mi"), Limits: resList("cpu", "2", "memory", "256Mi")})
	got = h.sync(p)
	c = condOf(got, v1.PodResizePending)
	if c == nil || c.Reason != v1.PodReasonInfeasible || c.Message != "Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000" {
		t.Fatalf("PodResizePending %+v; conditions %+v", c, got.Status.Conditions)
	}
	if sb := h.sandboxResources(); !proto.Equal(sb, sandboxRes(307, 60000, 256<<20)) {
		t.Errorf("an infeasible resize was applied: sandbox %v", sb)
	}

	// Beside another pod's 400m: Deferred.
	o := h.create(h.pod("other", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	if got := h.sync(o); got.Status.Phase != v1.PodRunning {
		t.Fatalf("other pod: %s %s", got.Status.Phase, got.Status.Message)
	}
	h.resizePodLevel(p, v1.ResourceRequirements{Requests: resList("cpu", "700m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "256Mi")})
	got = h.sync(p)
	c = condOf(got, v1.PodResizePending)
	if c == nil || c.Reason != v1.PodReasonDeferred || c.Message != "Node didn't have enough resource: cpu, requested: 700, used: 400, capacity: 1000" {
		t.Fatalf("PodResizePending %+v; conditions %+v", c, got.Status.Conditions)
	}
}

// TestResizePodLevelAfterRestart: a pod-level resize that changes no
// container's values (a pod-level CPU request), allocated by a kubelet
// restarted from its saved allocations (allocated_pods_state), reaches
// the sandbox and the pod cgroup: the restarted kubelet does not know
// what the sandbox was given, so it gives both the allocation's values,
// as upstream compares the pod cgroup's with the allocation. Here the
// resize was deferred beside another pod, the kubelet restarted, and the
// other pod went meanwhile.
func TestResizePodLevelAfterRestart(t *testing.T) {
	root, cgroups := t.TempDir(), t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		if err := os.Mkdir(filepath.Join(cgroups, hier), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	onDisk := func(c *Config) { c.RootDir = root; c.CPU = resource.MustParse("1"); c.CgroupDir = cgroups }
	h := newHarness(t, onDisk)
	const podCgroup = "/kubepods/burstable/poduid-web"
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Resources = &v1.ResourceRequirements{Requests: resList("cpu", "200m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "128Mi")}
	}))
	o := h.create(h.pod("other", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	h.sync(p)
	h.sync(o)
	h.resizePodLevel(p, v1.ResourceRequirements{Requests: resList("cpu", "700m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "128Mi")})
	if c := condOf(h.sync(p), v1.PodResizePending); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Fatalf("PodResizePending %+v", c)
	}
	if sb, pc := h.sandboxResourcesOf(p), readCgroupFile(t, cgroups, "cpu", podCgroup, "cpu.shares"); sb.CpuShares != 204 || pc != "204" {
		t.Fatalf("a deferred resize was applied: sandbox %v, pod cgroup cpu.shares %q", sb, pc)
	}

	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, o.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.k = h.newKubelet(onDisk) // restarted: p comes from the source again
	h.sync(p)
	if sb := h.sandboxResourcesOf(p); sb.CpuShares != 716 {
		t.Errorf("after the restart the sandbox has %v, want the allocated 700m (716 shares)", sb)
	}
	if pc := readCgroupFile(t, cgroups, "cpu", podCgroup, "cpu.shares"); pc != "716" {
		t.Errorf("after the restart the pod cgroup has cpu.shares %q, want the allocated 700m (716)", pc)
	}
	got := h.sync(p)
	for _, c := range got.Status.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			t.Errorf("resize condition once applied: %+v", c)
		}
	}
}

// TestResizePodLevelSandboxRecreatedAfterRestart: a restarted kubelet
// that makes a pod-level resized pod's sandbox anew (the old one died)
// makes it with the allocation's values and knows it: no resize is
// reported in progress, no resize event, no update follows.
func TestResizePodLevelSandboxRecreatedAfterRestart(t *testing.T) {
	root := t.TempDir()
	events := record.NewFakeRecorder(1000)
	onDisk := func(c *Config) { c.RootDir = root; c.CPU = resource.MustParse("1"); c.Recorder = events }
	h := newHarness(t, onDisk)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: resList("cpu", "200m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "128Mi")}
	}))
	h.sync(p)
	h.resizePodLevel(p, v1.ResourceRequirements{Requests: resList("cpu", "300m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "128Mi")})
	h.sync(p)
	h.sync(p)
	if sb := h.sandboxResourcesOf(p); sb.CpuShares != 307 {
		t.Fatalf("sandbox %v after the resize, want 307 shares", sb)
	}
	ps, err := h.rt.PodState(h.ctx, string(p.UID))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rt.StopPodSandbox(h.ctx, ps.LatestSandbox().ID); err != nil {
		t.Fatal(err)
	}
	drain(events)

	h.k = h.newKubelet(onDisk)
	got := h.sync(p)
	if sb := h.sandboxResourcesOf(p); sb.CpuShares != 307 {
		t.Fatalf("new sandbox %v, want the allocated 307 shares", sb)
	}
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("a new sandbox made as allocated reports a resize in progress: %+v", c)
	}
	got = h.sync(p)
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress %+v", c)
	}
	for _, e := range drain(events) {
		if strings.Contains(e, "Resize") {
			t.Errorf("resize event %q", e)
		}
	}
}

// TestResizePodLevelWhileNoKubeletRan: the pod-level resources of a pod
// never resized are resized while no kubelet runs (no allocation saved:
// the restarted kubelet takes the spec as allocated). Its sandbox, made
// by the earlier kubelet, is given the spec's values (and its pod cgroup
// would be), as upstream compares the pod cgroup with the allocation;
// the sandbox of a pod made by the kubelet itself is not updated again.
func TestResizePodLevelWhileNoKubeletRan(t *testing.T) {
	root := t.TempDir()
	onDisk := func(c *Config) { c.RootDir = root; c.CPU = resource.MustParse("1") }
	h := newHarness(t, onDisk)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: resList("cpu", "200m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "128Mi")}
	}))
	h.sync(p)
	h.sync(p)
	cur := h.get(p)
	cur.Spec.Resources = &v1.ResourceRequirements{Requests: resList("cpu", "300m", "memory", "64Mi"), Limits: resList("cpu", "800m", "memory", "128Mi")}
	cur.Generation++
	if _, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	h.k = h.newKubelet(onDisk)
	got := h.sync(p)
	if sb := h.sandboxResourcesOf(p); sb.CpuShares != 307 {
		t.Errorf("after the restart the sandbox has %v, want the spec's 300m (307 shares)", sb)
	}
	if c := condOf(h.sync(p), v1.PodResizeInProgress); c != nil || got.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s, PodResizeInProgress %+v", got.Status.Phase, c)
	}

	// A pod this kubelet started is not taken for one of unknown values.
	q := h.create(h.pod("new", func(p *v1.Pod) {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: resList("cpu", "100m", "memory", "64Mi"), Limits: resList("cpu", "100m", "memory", "64Mi")}
	}))
	h.sync(q)
	h.sync(q)
	h.k.mu.Lock()
	_, kept := h.k.resizes[q.UID]
	h.k.mu.Unlock()
	if kept {
		t.Errorf("a pod the kubelet started is kept as resized")
	}
}
