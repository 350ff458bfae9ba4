package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// resizeHarness is an event harness of a one-CPU node.
func resizeHarness(t *testing.T, mutate func(*Config)) (*harness, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) {
		c.Recorder = rec
		c.CPU = resource.MustParse("1")
		if mutate != nil {
			mutate(c)
		}
	})
	return h, rec
}

// resources are container resources of CPU request and limit and memory
// request and limit ("" for none).
func resources(cpuReq, cpuLim, memReq, memLim string) v1.ResourceRequirements {
	var r v1.ResourceRequirements
	set := func(l *v1.ResourceList, name v1.ResourceName, q string) {
		if q == "" {
			return
		}
		if *l == nil {
			*l = v1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(q)
	}
	set(&r.Requests, v1.ResourceCPU, cpuReq)
	set(&r.Limits, v1.ResourceCPU, cpuLim)
	set(&r.Requests, v1.ResourceMemory, memReq)
	set(&r.Limits, v1.ResourceMemory, memLim)
	return r
}

// resize changes the API pod's container resources as the API server's
// pods/resize does (the generation bumped) and hands it to the kubelet.
func (h *harness) resize(p *v1.Pod, container string, r v1.ResourceRequirements) *v1.Pod {
	h.t.Helper()
	cur := h.get(p)
	for i := range cur.Spec.Containers {
		if cur.Spec.Containers[i].Name == container {
			cur.Spec.Containers[i].Resources = r
		}
	}
	cur.Generation++
	updated, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.k.HandlePod(updated)
	return updated
}

// runtimeResources are the cgroup values the runtime reports of the
// pod's running container name.
func (h *harness) runtimeResources(p *v1.Pod, name string) *runtimeapi.LinuxContainerResources {
	h.t.Helper()
	ps, err := h.rt.PodState(h.ctx, string(p.UID))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, c := range ps.Containers {
		if c.Name == name && c.State == podstate.ContainerRunning {
			return c.Resources
		}
	}
	h.t.Fatalf("no running container %s", name)
	return nil
}

func condOf(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// TestResizeInPlace: a running pod's container resources changed in the
// API are admitted, allocated and applied to the running container
// through UpdateContainerResources, without a restart (resizePolicy
// NotRequired, the default): the sync that allocates reports
// PodResizeInProgress (observedGeneration the resize's) with a
// ResizeStarted event, the next one sees the runtime report the new
// values and removes it with ResizeCompleted; the container's status
// reports its allocatedResources and resources.
func TestResizeInPlace(t *testing.T) {
	h, events := resizeHarness(t, nil)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "128Mi")
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	before := h.runtimeResources(p, "app")
	drain(events)

	h.resize(p, "app", resources("300m", "400m", "64Mi", "256Mi"))
	got := h.sync(p)
	c := condOf(got, v1.PodResizeInProgress)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != "" || c.ObservedGeneration != got.Generation {
		t.Fatalf("after the allocating sync: PodResizeInProgress %+v (generation %d)", c, got.Generation)
	}
	if condOf(got, v1.PodResizePending) != nil {
		t.Errorf("a feasible resize is pending: %+v", condOf(got, v1.PodResizePending))
	}
	if ev := drain(events); !hasEvent(ev, `Normal ResizeStarted Pod resize started: {"containers":[{"name":"app","resources":{"limits":{"cpu":"400m","memory":"256Mi"},"requests":{"cpu":"300m","memory":"64Mi"}}}],"generation":1}`) {
		t.Errorf("events %q, want ResizeStarted", ev)
	}
	want := &runtimeapi.LinuxContainerResources{CpuShares: 307, CpuPeriod: 100000, CpuQuota: 40000, MemoryLimitInBytes: 256 << 20}
	after := h.runtimeResources(p, "app")
	if after.CpuShares != want.CpuShares || after.CpuQuota != want.CpuQuota || after.MemoryLimitInBytes != want.MemoryLimitInBytes {
		t.Fatalf("runtime reports %v after the resize (before %v), want %v", after, before, want)
	}

	got = h.sync(p)
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("resize still in progress once applied: %+v", c)
	}
	if ev := drain(events); !hasEvent(ev, "Normal ResizeCompleted Pod resize completed: ") {
		t.Errorf("events %q, want ResizeCompleted", ev)
	}
	cs := cstatus(got, "app")
	if cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("the container was restarted: %+v", cs)
	}
	if !apiequality.Semantic.DeepEqual(cs.AllocatedResources, resources("300m", "", "64Mi", "").Requests) {
		t.Errorf("allocatedResources %v", cs.AllocatedResources)
	}
	if cs.Resources == nil || !apiequality.Semantic.DeepEqual(*cs.Resources, resources("300m", "400m", "64Mi", "256Mi")) {
		t.Errorf("resources %+v", cs.Resources)
	}
}

// TestResizeInfeasibleAndDeferred: a resize above the node's allocatable
// is Infeasible ("Node didn't have enough capacity: cpu, requested: N,
// capacity: N", a ResizeInfeasible warning), one that does not fit beside
// the other pods now is Deferred (admission's message, a ResizeDeferred
// warning); the container keeps its allocated resources meanwhile, and
// once the other pod is gone the deferred resize is allocated and
// applied. New pods are admitted beside the allocated resources, not the
// pending ones.
func TestResizeInfeasibleAndDeferred(t *testing.T) {
	h, events := resizeHarness(t, nil)
	a := h.create(h.pod("a", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	b := h.create(h.pod("b", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	h.sync(a)
	h.sync(b)
	drain(events)

	h.resize(a, "app", resources("2", "", "", ""))
	got := h.sync(a)
	c := condOf(got, v1.PodResizePending)
	if c == nil || c.Reason != v1.PodReasonInfeasible || c.Message != "Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000" || c.ObservedGeneration != got.Generation {
		t.Fatalf("PodResizePending %+v; conditions %+v; events %q", c, got.Status.Conditions, drain(events))
	}
	if ev := drain(events); !hasEvent(ev, `Warning ResizeInfeasible Pod resize Infeasible: {"containers":[{"name":"app","resources":{"requests":{"cpu":"2"}}}],"generation":1,"error":"Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000"}`) {
		t.Errorf("events %q, want ResizeInfeasible", ev)
	}
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("an infeasible resize was applied: %v", r)
	}

	h.resize(a, "app", resources("700m", "", "", ""))
	got = h.sync(a)
	c = condOf(got, v1.PodResizePending)
	if c == nil || c.Reason != v1.PodReasonDeferred || c.Message != "Node didn't have enough resource: cpu, requested: 700, used: 400, capacity: 1000" {
		t.Fatalf("PodResizePending %+v; conditions %+v; events %q; runtime %v", c, got.Status.Conditions, drain(events), h.runtimeResources(a, "app"))
	}
	if ev := drain(events); !hasEvent(ev, "Warning ResizeDeferred Pod resize Deferred: ") {
		t.Errorf("events %q, want ResizeDeferred", ev)
	}
	if cs := cstatus(got, "app"); !apiequality.Semantic.DeepEqual(cs.AllocatedResources, resources("400m", "", "", "").Requests) {
		t.Errorf("allocatedResources while deferred: %v", cs.AllocatedResources)
	}
	// A new pod fits beside a's allocated 400m, not its pending 700m.
	n := h.create(h.pod("n", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("200m", "", "", "") }))
	if got := h.sync(n); got.Status.Phase != v1.PodRunning {
		t.Fatalf("a pod fitting beside the allocated resources: %s %s", got.Status.Phase, got.Status.Message)
	}
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(n)

	// b goes: a's deferred resize fits now.
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(b)
	got = h.sync(a)
	if c := condOf(got, v1.PodResizePending); c != nil {
		t.Fatalf("still pending once b is gone: %+v", c)
	}
	if r := h.runtimeResources(a, "app"); r.CpuShares != 716 {
		t.Errorf("runtime reports %v, want the 700m resize applied (716 shares)", r)
	}
}

// TestResizeRestartContainer: a container whose resizePolicy says
// RestartContainer for the resource that changes is restarted with the
// new resources instead of updated in place ("Container app resize
// requires restart").
func TestResizeRestartContainer(t *testing.T) {
	h, events := resizeHarness(t, nil)
	p := h.create(h.pod("db", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = resources("100m", "", "64Mi", "128Mi")
		p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	}))
	h.sync(p)
	drain(events)
	h.resize(p, "app", resources("100m", "", "64Mi", "256Mi"))
	got := h.sync(p)
	if cs := cstatus(got, "app"); cs.RestartCount != 1 || cs.State.Running == nil {
		t.Fatalf("container status after a RestartContainer resize: %+v", cs)
	}
	if r := h.runtimeResources(p, "app"); r.MemoryLimitInBytes != 256<<20 {
		t.Errorf("restarted container has %v", r)
	}
	if ev := drain(events); !hasEvent(ev, "Normal Killing Container app resize requires restart") {
		t.Errorf("events %q, want the restart's Killing", ev)
	}
	if c := condOf(h.sync(p), v1.PodResizeInProgress); c != nil {
		t.Errorf("resize in progress after the restart: %+v", c)
	}
}

// failingUpdates is a runtime whose UpdateContainerResources fails.
type failingUpdates struct{ runtime.Runtime }

func (failingUpdates) UpdateContainerResources(context.Context, string, *runtimeapi.LinuxContainerResources) error {
	return errTestUpdate
}

var errTestUpdate = &testError{"injected update failure"}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

// TestResizeError: a resize the runtime fails to apply is reported as
// PodResizeInProgress with reason Error and the failure's message, with a
// ResizeError warning, and the sync fails (retried).
func TestResizeError(t *testing.T) {
	h, events := resizeHarness(t, nil)
	h.krt = failingUpdates{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.Recorder = events; c.CPU = resource.MustParse("1") })
	p := h.create(h.pod("web", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("100m", "", "", "") }))
	h.sync(p)
	drain(events)
	h.resize(p, "app", resources("200m", "", "", ""))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("a sync whose resize failed succeeded")
	}
	got := h.get(p)
	c := condOf(got, v1.PodResizeInProgress)
	if c == nil || c.Reason != v1.PodReasonError || !strings.Contains(c.Message, "injected update failure") {
		t.Fatalf("PodResizeInProgress %+v", c)
	}
	if ev := drain(events); !hasEvent(ev, "Warning ResizeError Pod resize error: ") {
		t.Errorf("events %q, want ResizeError", ev)
	}
}

// TestPlanResizeOrder: the CRI calls of a resize in upstream's order:
// memory, then CPU; for each, the decreases before the increases, the
// sandbox's limit raised before the containers' and lowered after them; a
// memory update keeps the container's CPU values until the CPU's.
func TestPlanResizeOrder(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "up", Resources: resources("500m", "1", "", "512Mi")},
		{Name: "down", Resources: resources("100m", "200m", "", "64Mi")},
	}}}
	was := func(cpuShares, quota, mem int64) *runtimeapi.LinuxContainerResources {
		return &runtimeapi.LinuxContainerResources{CpuShares: cpuShares, CpuPeriod: 100000, CpuQuota: quota, MemoryLimitInBytes: mem}
	}
	rs := &podstate.Pod{
		Sandboxes: []podstate.Sandbox{{ID: "sb", Ready: true}},
		Containers: []podstate.Container{
			{ID: "c-up", Name: "up", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(102, 20000, 128<<20)},
			{ID: "c-down", Name: "down", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(512, 50000, 128<<20)},
		},
	}
	sandboxWas := was(614, 70000, 256<<20)
	plan := planResize(pod, rs, sandboxWas, nil, cgroupParams{nodeMemory: 8 << 30}, func(string) bool { return false })
	type call struct {
		target         string
		shares, q, mem int64
	}
	var got []call
	for _, s := range plan.steps {
		target := s.containerID
		if target == "" {
			target = "sandbox"
		}
		got = append(got, call{target, s.resources.CpuShares, s.resources.CpuQuota, s.resources.MemoryLimitInBytes})
	}
	want := []call{
		{"sandbox", 614, 70000, 576 << 20},  // memory up (128+128 -> 512+64 Mi): the sandbox first
		{"c-down", 512, 50000, 64 << 20},    // the decrease first, its CPU as it is
		{"c-up", 102, 20000, 512 << 20},     // then the increase
		{"sandbox", 614, 120000, 576 << 20}, // CPU limit up (70 -> 120 ms): the sandbox first
		{"c-down", 102, 20000, 64 << 20},    // the decrease first
		{"c-up", 512, 100000, 512 << 20},    // then the increase
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps\n got %v\nwant %v", got, want)
	}
	if plan.sandbox == nil || plan.sandbox.CpuShares != 614 || plan.sandbox.CpuQuota != 120000 || plan.sandbox.MemoryLimitInBytes != 576<<20 {
		t.Errorf("sandbox afterwards %v", plan.sandbox)
	}
	if len(plan.kills) != 0 {
		t.Errorf("restarts %v", plan.kills)
	}

	// Nothing changed: no plan, and resizeNeeded says so without one.
	same := &podstate.Pod{Sandboxes: rs.Sandboxes, Containers: []podstate.Container{
		{ID: "c-up", Name: "up", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(512, 100000, 512<<20)},
		{ID: "c-down", Name: "down", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(102, 20000, 64<<20)},
	}}
	if resizeNeeded(pod, same, nil, cpuCFS{}) || !resizeNeeded(pod, rs, nil, cpuCFS{}) {
		t.Errorf("resizeNeeded: %v for the applied values, %v for the old ones", resizeNeeded(pod, same, nil, cpuCFS{}), resizeNeeded(pod, rs, nil, cpuCFS{}))
	}
	if p := planResize(pod, same, sandboxWas, nil, cgroupParams{nodeMemory: 8 << 30}, func(string) bool { return false }); !p.empty() {
		t.Errorf("plan for applied values: %+v", p)
	}
}

// TestAdmitResize: the node's verdicts on a resize, as upstream's.
func TestAdmitResize(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110")}
	pod := func(r v1.ResourceRequirements) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: r}}}}
	}
	other := pod(resources("1", "", "512Mi", ""))
	for _, tc := range []struct {
		name            string
		desired         v1.ResourceRequirements
		reason, message string
	}{
		{"fits", resources("500m", "", "256Mi", ""), "", ""},
		{"memory above allocatable: named first", resources("3", "", "2Gi", ""), v1.PodReasonInfeasible, "Node didn't have enough capacity: memory, requested: 2147483648, capacity: 1073741824"},
		{"cpu above allocatable", resources("2500m", "", "", ""), v1.PodReasonInfeasible, "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000"},
		{"not beside the others now", resources("1500m", "", "", ""), v1.PodReasonDeferred, "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.desired)
			ok, reason, message := admitResize(alloc, p, pod(resources("100m", "", "", "")), []*v1.Pod{other}, 1<<30, nodeSwap{})
			if ok != (tc.reason == "") || reason != tc.reason || message != tc.message {
				t.Errorf("got %v %q %q, want %q %q", ok, reason, message, tc.reason, tc.message)
			}
		})
	}
}

// TestResizeAllocationSurvivesRestart: a kubelet whose state is on disk
// keeps its resized pods' allocations there (upstream's
// allocated_pods_state): a kubelet restarted while a resize is deferred
// still runs the pod with, and admits it with, what it had allocated, and
// reports the resize pending instead of applying it unadmitted. The
// allocations of pods gone meanwhile are forgotten at the first resync.
func TestResizeAllocationSurvivesRestart(t *testing.T) {
	root := t.TempDir()
	onDisk := func(c *Config) { c.RootDir = root; c.CPU = resource.MustParse("1") }
	h := newHarness(t, onDisk)
	a := h.create(h.pod("a", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	b := h.create(h.pod("b", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("400m", "", "", "") }))
	h.sync(a)
	h.sync(b)
	h.resize(a, "app", resources("700m", "", "", ""))
	if c := condOf(h.sync(a), v1.PodResizePending); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Fatalf("PodResizePending %+v", c)
	}

	if b, err := os.ReadFile(filepath.Join(root, allocatedPodsStateFile)); err != nil || !strings.Contains(string(b), `"400m"`) {
		t.Fatalf("allocations file: %s (%v)", b, err)
	}
	h.k = h.newKubelet(onDisk) // restarted: the pods come from the source again
	for _, p := range []*v1.Pod{b, a} {
		if got := h.sync(p); got.Status.Phase != v1.PodRunning {
			t.Fatalf("%s after the restart: %s %s", p.Name, got.Status.Phase, got.Status.Message)
		}
	}
	got := h.get(a)
	if c := condOf(got, v1.PodResizePending); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Errorf("after the restart: PodResizePending %+v", c)
	}
	if r := h.runtimeResources(a, "app"); r.CpuShares != 409 {
		t.Errorf("after the restart the runtime reports %v: the deferred resize was applied", r)
	}
	if cs := cstatus(got, "app"); !apiequality.Semantic.DeepEqual(cs.AllocatedResources, resources("400m", "", "", "").Requests) {
		t.Errorf("allocatedResources after the restart %v", cs.AllocatedResources)
	}

	// a goes while no kubelet runs: the next one forgets its allocation
	// at its first resync.
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, a.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	k := h.newKubelet(onDisk)
	k.HandlePod(h.get(b))
	k.resyncAll()
	k.mu.Lock()
	_, kept := k.resizes[a.UID]
	k.mu.Unlock()
	if kept {
		t.Errorf("the allocation of a pod the source did not deliver is kept")
	}
}

// TestResizeSidecar: a sidecar (restartable init container) is resized
// in place like an app container; its status reports the new resources.
func TestResizeSidecar(t *testing.T) {
	h, _ := resizeHarness(t, nil)
	always := v1.ContainerRestartPolicyAlways
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "envoy:1", RestartPolicy: &always, Resources: resources("100m", "", "", "")}}
	}))
	h.sync(p)
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	cur := h.get(p)
	cur.Spec.InitContainers[0].Resources = resources("250m", "", "", "")
	cur.Generation++
	updated, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.k.HandlePod(updated)
	h.sync(p)
	got := h.sync(p)
	if r := h.runtimeResources(p, "proxy"); r.CpuShares != 256 {
		t.Errorf("sidecar's cgroup values after the resize: %v", r)
	}
	cs := cstatus(got, "proxy")
	if cs.RestartCount != 0 || cs.Resources == nil || !apiequality.Semantic.DeepEqual(cs.Resources.Requests, resources("250m", "", "", "").Requests) {
		t.Errorf("sidecar status after the resize: %+v", cs)
	}
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("resize in progress: %+v", c)
	}
}

// TestResizeConditionsClearedWhenTerminal: a terminal pod reports no
// resize condition, as upstream's determinePodResizeStatus clears both
// once the pod is terminal: a pod whose resize was Infeasible and that
// then ran to completion is Succeeded without PodResizePending.
func TestResizeConditionsClearedWhenTerminal(t *testing.T) {
	h, _ := resizeHarness(t, nil)
	p := h.create(h.pod("job", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Containers[0].Resources = resources("400m", "", "", "")
		p.Annotations[sim.AnnotationExitCode] = "0"
		p.Annotations[sim.AnnotationExitAfter] = "5s"
	}))
	h.sync(p)
	h.resize(p, "app", resources("2", "", "", ""))
	if got := h.sync(p); condOf(got, v1.PodResizePending) == nil {
		t.Fatalf("an infeasible resize is not pending: %+v", got.Status.Conditions)
	}
	h.step(5 * time.Second)
	got := h.sync(p)
	if got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			t.Errorf("terminal pod reports %+v", c)
		}
	}
}

// noSandboxUpdates is a runtime without UpdatePodSandboxResources: it
// answers gRPC Unimplemented (wrapped, as the CRI client returns it).
type noSandboxUpdates struct{ runtime.Runtime }

func (noSandboxUpdates) UpdatePodSandboxResources(context.Context, string, *runtimeapi.LinuxContainerResources, *runtimeapi.LinuxContainerResources) error {
	return fmt.Errorf("update pod sandbox resources s: %w", grpcstatus.Error(codes.Unimplemented, "unknown method UpdatePodSandboxResources"))
}

// TestResizeSandboxUpdateUnimplemented: a runtime that does not implement
// UpdatePodSandboxResources still has its containers resized, without an
// error, as upstream's kubelet takes that call as best effort.
func TestResizeSandboxUpdateUnimplemented(t *testing.T) {
	h, events := resizeHarness(t, nil)
	h.krt = noSandboxUpdates{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.Recorder = events; c.CPU = resource.MustParse("1") })
	p := h.create(h.pod("web", func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("100m", "", "", "") }))
	h.sync(p)
	h.resize(p, "app", resources("200m", "", "", ""))
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatalf("resize sync: %v", err)
	}
	got := h.sync(p)
	if c := condOf(got, v1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress %+v once the containers are resized", c)
	}
	if r := h.runtimeResources(p, "app"); r.CpuShares != 204 {
		t.Errorf("runtime reports %v, want 200m (204 shares)", r)
	}
}
