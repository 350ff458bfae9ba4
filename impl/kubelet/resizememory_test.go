package kubelet

import (
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestResizeMemoryLimitBelowUsage: a resize that lowers a running
// container's memory limit (resizePolicy NotRequired) is applied only
// when the container's current memory usage is below the new limit, as
// upstream's kubelet since 1.34 (validateMemoryResizeAction, before any
// CRI call of the resize): otherwise nothing of the resize is applied
// (its CPU change neither), the pod reports PodResizeInProgress Error
// with "attempting to set container "app" memory limit (N) below current
// usage (M)" and a ResizeError warning, and the sync fails (retried on the
// pod workers' back-off). A later resize to a limit above the usage is
// applied and completes. The usage is the runtime's: the simulated
// runtime's (its memory-usage annotation) directly, and over CRI from
// ListContainerStats (the fake CRI server backed by the simulation).
func TestResizeMemoryLimitBelowUsage(t *testing.T) {
	for _, overCRI := range []bool{false, true} {
		name := "sim"
		if overCRI {
			name = "cri"
		}
		t.Run(name, func(t *testing.T) {
			h, events := resizeHarness(t, nil)
			if overCRI {
				client, dir := dialFakeCRI(t, h.rt)
				h.krt = client
				h.k = h.newKubelet(func(c *Config) {
					c.Recorder = events
					c.CPU = resource.MustParse("1")
					c.PodLogsDir = filepath.Join(dir, "pods")
				})
			}
			p := h.create(h.pod("web", func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = resources("100m", "200m", "32Mi", "256Mi")
				p.Annotations[sim.AnnotationMemoryUsage] = "100Mi"
			}))
			if got := h.sync(p); got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", got.Status.Phase)
			}
			drain(events)

			// Below the usage: nothing applied.
			h.resize(p, "app", resources("150m", "300m", "32Mi", "96Mi"))
			if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
				t.Fatal("the sync of a resize refused for the memory usage succeeded")
			}
			got := h.get(p)
			wantMsg := `attempting to set container "app" memory limit (100663296) below current usage (104857600)`
			c := condOf(got, v1.PodResizeInProgress)
			if c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonError || c.Message != wantMsg {
				t.Fatalf("PodResizeInProgress %+v, want Error %q", c, wantMsg)
			}
			if r := h.runtimeResources(p, "app"); r.MemoryLimitInBytes != 256<<20 || r.CpuQuota != 20000 || r.CpuShares != 102 {
				t.Fatalf("runtime reports %v after the refused resize, want the old memory limit and CPU", r)
			}
			if ev := drain(events); !hasEvent(ev, "Warning ResizeError Pod resize error: ") || !strings.Contains(strings.Join(ev, "\n"), strings.ReplaceAll(wantMsg, `"`, `\"`)) {
				t.Errorf("events %q, want ResizeError with the message", ev)
			}
			// Retried: refused again, the same condition.
			if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
				t.Fatal("the retried sync succeeded")
			}
			if c := condOf(h.get(p), v1.PodResizeInProgress); c == nil || c.Message != wantMsg {
				t.Fatalf("after the retry: PodResizeInProgress %+v", c)
			}

			// Above the usage: applied.
			h.resize(p, "app", resources("150m", "300m", "32Mi", "128Mi"))
			if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
				t.Fatalf("resize above the usage: %v", err)
			}
			if r := h.runtimeResources(p, "app"); r.MemoryLimitInBytes != 128<<20 || r.CpuQuota != 30000 || r.CpuShares != 153 {
				t.Fatalf("runtime reports %v, want 128Mi, 300m limit, 150m request", r)
			}
			got = h.sync(p)
			if c := condOf(got, v1.PodResizeInProgress); c != nil {
				t.Errorf("PodResizeInProgress %+v once applied", c)
			}
			if ev := drain(events); !hasEvent(ev, "Normal ResizeCompleted Pod resize completed: ") {
				t.Errorf("events %q, want ResizeCompleted", ev)
			}
			if cs := cstatus(got, "app"); cs.RestartCount != 0 || cs.State.Running == nil {
				t.Errorf("the container was restarted: %+v", cs)
			}
		})
	}
}

// TestResizeMemoryIncreaseIgnoresUsage: raising a memory limit is applied
// whatever the usage; lowering it to the usage is refused (upstream's >=),
// the pod's limit as its container's, to just above it applied.
func TestResizeMemoryIncreaseIgnoresUsage(t *testing.T) {
	h, _ := resizeHarness(t, nil)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = resources("100m", "", "32Mi", "128Mi")
		p.Annotations[sim.AnnotationMemoryUsage] = "200Mi" // over its limit: the simulation does not kill it
	}))
	h.sync(p)
	h.resize(p, "app", resources("100m", "", "32Mi", "256Mi"))
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatalf("memory increase: %v", err)
	}
	if r := h.runtimeResources(p, "app"); r.MemoryLimitInBytes != 256<<20 {
		t.Fatalf("runtime reports %v, want 256Mi", r)
	}
	h.resize(p, "app", resources("100m", "", "32Mi", "200Mi"))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("a decrease to the usage itself was applied")
	}
	// The pod's limit (its sandbox's, known since the first resize) goes
	// down too: both are refused, the pod's first.
	want := `[attempting to set pod memory limit (209715200) below current usage (209715200), attempting to set container "app" memory limit (209715200) below current usage (209715200)]`
	if c := condOf(h.get(p), v1.PodResizeInProgress); c == nil || c.Reason != v1.PodReasonError || c.Message != want {
		t.Fatalf("PodResizeInProgress %+v, want Error %q", c, want)
	}
	h.resize(p, "app", resources("100m", "", "32Mi", "201Mi"))
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatalf("a decrease to just above the usage: %v", err)
	}
	if r := h.runtimeResources(p, "app"); r.MemoryLimitInBytes != 201<<20 {
		t.Fatalf("runtime reports %v, want 201Mi", r)
	}
}

// TestCheckMemoryDecreases: the pure check of a resize's memory limit
// decreases against usage: the pod's (its sandbox's limit lowered) then
// each container's, in the plan's order; a usage the runtime did not
// report refuses the decrease; several refusals are aggregated.
func TestCheckMemoryDecreases(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name      string
		ds        []memoryDecrease
		usage     map[string]uint64
		podUsage  *uint64
		wantError string
	}{
		{name: "none", wantError: ""},
		{name: "below", ds: []memoryDecrease{{containerID: "c1", name: "a", limit: 100}}, usage: map[string]uint64{"c1": 99}},
		{name: "equal", ds: []memoryDecrease{{containerID: "c1", name: "a", limit: 100}}, usage: map[string]uint64{"c1": 100},
			wantError: `attempting to set container "a" memory limit (100) below current usage (100)`},
		{name: "missing", ds: []memoryDecrease{{containerID: "c1", name: "a", limit: 100}},
			wantError: `missing container "a" memory usage`},
		{name: "pod", ds: []memoryDecrease{{limit: 300}, {containerID: "c1", name: "a", limit: 100}}, usage: map[string]uint64{"c1": 50}, podUsage: u(300),
			wantError: `attempting to set pod memory limit (300) below current usage (300)`},
		{name: "pod usage missing", ds: []memoryDecrease{{limit: 300}},
			wantError: `missing pod memory usage`},
		{name: "two", ds: []memoryDecrease{{containerID: "c1", name: "a", limit: 100}, {containerID: "c2", name: "b", limit: 10}}, usage: map[string]uint64{"c1": 200, "c2": 20},
			wantError: `[attempting to set container "a" memory limit (100) below current usage (200), attempting to set container "b" memory limit (10) below current usage (20)]`},
	} {
		err := checkMemoryDecreases(tc.ds, tc.usage, tc.podUsage)
		switch {
		case tc.wantError == "" && err != nil:
			t.Errorf("%s: %v, want none", tc.name, err)
		case tc.wantError != "" && (err == nil || err.Error() != tc.wantError):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantError)
		}
	}
}

// TestPlanResizeMemoryDecreases: the plan lists the memory limits it
// lowers in place (containers whose limit goes down, and the sandbox's
// when its last known limit goes down), not those it raises, nor a
// container restarted for its resizePolicy.
func TestPlanResizeMemoryDecreases(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "up", Resources: resources("", "", "", "512Mi")},
		{Name: "down", Resources: resources("", "", "", "64Mi")},
		{Name: "restarted", Resources: resources("", "", "", "32Mi"),
			ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}},
	}}}
	was := func(mem int64) *runtimeapi.LinuxContainerResources {
		return &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: mem}
	}
	rs := &podstate.Pod{
		Sandboxes: []podstate.Sandbox{{ID: "sb", Ready: true}},
		Containers: []podstate.Container{
			{ID: "c-up", Name: "up", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(128 << 20)},
			{ID: "c-down", Name: "down", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(128 << 20)},
			{ID: "c-r", Name: "restarted", SandboxID: "sb", State: podstate.ContainerRunning, Resources: was(128 << 20)},
		},
	}
	never := func(string) bool { return false }
	plan := planResize(pod, rs, was(1024<<20), nil, cgroupParams{nodeMemory: 8 << 30}, never)
	want := []memoryDecrease{{limit: 608 << 20}, {containerID: "c-down", name: "down", limit: 64 << 20}} // the pod's first
	if len(plan.memoryDecreases) != len(want) {
		t.Fatalf("decreases %+v, want %+v", plan.memoryDecreases, want)
	}
	for i := range want {
		if plan.memoryDecreases[i] != want[i] {
			t.Errorf("decrease %d: %+v, want %+v", i, plan.memoryDecreases[i], want[i])
		}
	}
	// The sandbox's limit going up: only the container's decrease.
	plan = planResize(pod, rs, was(256<<20), nil, cgroupParams{nodeMemory: 8 << 30}, never)
	if len(plan.memoryDecreases) != 1 || plan.memoryDecreases[0].name != "down" {
		t.Errorf("decreases %+v with the sandbox's limit raised, want down's only", plan.memoryDecreases)
	}
}
