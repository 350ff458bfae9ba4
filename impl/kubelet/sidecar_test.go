package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func sidecar(name string) v1.Container {
	return v1.Container{Name: name, Image: "proxy:1", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
}

// A sidecar starts before the init containers after it and the app
// containers, keeps running, is restarted when it exits (even under
// restartPolicy Never), and counts toward readiness.
func TestSidecarLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("side", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.InitContainers = []v1.Container{sidecar("proxy"), {Name: "setup", Image: "busybox:1"}}
		p.Annotations[sim.AnnotationExitAfter+".setup"] = "2s"
		p.Annotations[sim.AnnotationCrashAfter+".proxy"] = "10s"
	}))
	got := h.sync(p)
	if got.Status.Phase != v1.PodPending || cstatus(got, "proxy").State.Running == nil || cstatus(got, "setup").State.Waiting == nil {
		t.Fatalf("step 1 (sidecar first): %+v", got.Status)
	}
	if c := cond(got, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [setup]" {
		t.Fatalf("Initialized = %+v", c)
	}
	got = h.sync(p)
	if cstatus(got, "setup").State.Running == nil || cstatus(got, "app").State.Running != nil {
		t.Fatalf("step 2 (regular init after the started sidecar): %+v", got.Status)
	}
	h.step(2 * time.Second)
	got = h.sync(p)
	if got.Status.Phase != v1.PodRunning || cstatus(got, "app").State.Running == nil || cstatus(got, "proxy").State.Running == nil {
		t.Fatalf("step 3 (app runs next to the sidecar): %+v", got.Status)
	}
	if cond(got, v1.PodInitialized).Status != v1.ConditionTrue || cond(got, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatalf("conditions: %+v", got.Status.Conditions)
	}
	if cs := cstatus(got, "proxy"); !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Fatalf("running sidecar status: %+v", cs)
	}

	// The sidecar crashes: the pod is not ready, the sidecar restarts
	// although the pod's restartPolicy is Never, and the app keeps running.
	h.step(8 * time.Second)
	got = h.sync(p)
	cs := cstatus(got, "proxy")
	if cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("sidecar after its crash: %+v", cs)
	}
	if got.Status.Phase != v1.PodRunning || cstatus(got, "app").RestartCount != 0 || cstatus(got, "app").State.Running == nil {
		t.Fatalf("app after the sidecar crash: %s %+v", got.Status.Phase, cstatus(got, "app"))
	}
}

// A sidecar with a readiness probe that fails keeps the pod unready; one
// with a startup probe that has not succeeded holds the next init container.
func TestSidecarProbes(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("sideprobe", func(p *v1.Pod) {
		sc := sidecar("proxy")
		sc.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
		sc.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
		p.Spec.InitContainers = []v1.Container{sc}
		p.Annotations[sim.AnnotationStartup+".proxy"] = "fail"
		p.Annotations[sim.AnnotationReadiness+".proxy"] = "fail"
	}))
	got := h.sync(p)
	got = h.sync(p)
	if cs := cstatus(got, "proxy"); cs.State.Running == nil || (cs.Started != nil && *cs.Started) {
		t.Fatalf("sidecar with a failing startup probe: %+v", cs)
	}
	if cstatus(got, "app").State.Running != nil || got.Status.Phase != v1.PodPending {
		t.Fatalf("app started before the sidecar did: %s %+v", got.Status.Phase, cstatus(got, "app"))
	}

	// Startup succeeds, readiness still fails: the app runs, the pod is
	// not ready because of the sidecar.
	h2 := newHarness(t, nil)
	p = h2.create(h2.pod("sideready", func(p *v1.Pod) {
		sc := sidecar("proxy")
		sc.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
		p.Spec.InitContainers = []v1.Container{sc}
		p.Annotations[sim.AnnotationReadiness+".proxy"] = "fail"
	}))
	h2.sync(p)
	got = h2.sync(p)
	h2.step(time.Second)
	got = h2.sync(p)
	if got.Status.Phase != v1.PodRunning || cstatus(got, "app").State.Running == nil {
		t.Fatalf("app should run once the sidecar started: %+v", got.Status)
	}
	c := cond(got, v1.ContainersReady)
	if c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [proxy]" {
		t.Fatalf("ContainersReady = %+v", c)
	}
}

// When the app containers of a restartPolicy Never pod finish, the pod
// finishes: its sidecars are stopped and do not decide the phase.
func TestSidecarDoesNotKeepFinishedPodAlive(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("job", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.InitContainers = []v1.Container{sidecar("proxy")}
		p.Annotations[sim.AnnotationExitAfter+".app"] = "2s"
	}))
	h.sync(p)
	got := h.sync(p)
	if cstatus(got, "app").State.Running == nil {
		t.Fatalf("app not running: %+v", got.Status)
	}
	h.step(2 * time.Second)
	got = h.sync(p)
	if got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded; %+v", got.Status.Phase, got.Status)
	}
	if cs := cstatus(got, "proxy"); cs.State.Terminated == nil || cs.Ready {
		t.Fatalf("sidecar should be stopped and unready: %+v", cs)
	}
}

// On deletion, app containers stop first, then sidecars in reverse order.
func TestSidecarsStopAfterAppContainersInReverseOrder(t *testing.T) {
	h := newHarness(t, nil)
	hook := func(name string) *v1.Lifecycle {
		return &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true", "prestop-" + name}}}}
	}
	p := h.create(h.pod("order", func(p *v1.Pod) {
		a, b := sidecar("a"), sidecar("b")
		a.Lifecycle, b.Lifecycle = hook("a"), hook("b")
		p.Spec.InitContainers = []v1.Container{a, b}
		p.Spec.Containers[0].Lifecycle = hook("app")
	}))
	for i := 0; i < 3; i++ {
		h.sync(p)
	}
	if got := h.get(p); cstatus(got, "app").State.Running == nil {
		t.Fatalf("app not running: %+v", got.Status)
	}
	deletePod(t, h, p, 30)
	if got := h.sync(p); got != nil {
		t.Fatalf("pod not finally deleted: %+v", got.Status)
	}
	var order []string
	for _, e := range h.rt.Execs() {
		if len(e.Cmd) == 2 && strings.HasPrefix(e.Cmd[1], "prestop-") {
			order = append(order, strings.TrimPrefix(e.Cmd[1], "prestop-"))
		}
	}
	if strings.Join(order, ",") != "app,b,a" {
		t.Fatalf("preStop order %v, want app,b,a", order)
	}
}

// Sidecars add to the app containers' requests and to every regular init
// container after them, as upstream's effective pod requests.
func TestPodRequestsWithSidecars(t *testing.T) {
	cpu := func(name, q string, side bool) v1.Container {
		c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resourceMust(q)}}}
		if side {
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		init []v1.Container
		app  []v1.Container
		want int64
	}{
		{"sidecar adds to apps", []v1.Container{cpu("s", "300m", true)}, []v1.Container{cpu("a", "1", false)}, 1300},
		{"init after sidecar runs beside it", []v1.Container{cpu("s", "300m", true), cpu("i", "2", false)}, []v1.Container{cpu("a", "1", false)}, 2300},
		{"init before sidecar runs alone", []v1.Container{cpu("i", "2", false), cpu("s", "300m", true)}, []v1.Container{cpu("a", "1", false)}, 2000},
		{"two sidecars", []v1.Container{cpu("s1", "100m", true), cpu("s2", "200m", true)}, []v1.Container{cpu("a", "1", false)}, 1300},
	} {
		p := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.app}}
		if got := podRequests(p, v1.ResourceCPU); got != tc.want {
			t.Errorf("%s: cpu = %dm, want %dm", tc.name, got, tc.want)
		}
	}
}
