package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func TestPodStartsRunningAndReady(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("web", nil))
	got := h.sync(p)
	if got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase = %s, want Running", got.Status.Phase)
	}
	for _, ct := range []v1.PodConditionType{PodReadyToStartContainersCondition, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		if c := cond(got, ct); c.Status != v1.ConditionTrue {
			t.Errorf("condition %s = %+v, want True", ct, c)
		}
	}
	cs := cstatus(got, "app")
	if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 {
		t.Errorf("container status = %+v", cs)
	}
	// The image and its id as the runtime reports them (the simulation,
	// as containerd: the repo tag and repo digest).
	if !strings.HasPrefix(cs.ContainerID, "sim://") || !strings.HasPrefix(cs.ImageID, "docker.io/library/nginx@sha256:") || cs.Image != "docker.io/library/nginx:1.27" {
		t.Errorf("container ids: %q %q %q", cs.ContainerID, cs.ImageID, cs.Image)
	}
	if !strings.HasPrefix(got.Status.PodIP, "10.244.7.") || len(got.Status.PodIPs) != 1 {
		t.Errorf("podIP = %q %v", got.Status.PodIP, got.Status.PodIPs)
	}
	if got.Status.HostIP != "192.168.0.7" || got.Status.StartTime == nil || got.Status.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("hostIP %q startTime %v qos %q", got.Status.HostIP, got.Status.StartTime, got.Status.QOSClass)
	}
	// Written only when changed: another sync writes nothing.
	writes := h.k.StatusWrites()
	h.step(3 * time.Second)
	h.sync(p)
	if h.k.StatusWrites() != writes {
		t.Errorf("an unchanged status was written again")
	}
	if sb, _ := h.rt.Counts(); sb != 1 {
		t.Errorf("sandboxes = %d, want 1", sb)
	}
}

const PodReadyToStartContainersCondition = v1.PodConditionType("PodReadyToStartContainers")

func TestPodRunsToCompletion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     string
		policy   v1.RestartPolicy
		phase    v1.PodPhase
		reason   string
		restarts int32
	}{
		{"succeeds", "0", v1.RestartPolicyNever, v1.PodSucceeded, "Completed", 0},
		{"fails", "3", v1.RestartPolicyNever, v1.PodFailed, "Error", 0},
		{"onfailure-succeeds", "0", v1.RestartPolicyOnFailure, v1.PodSucceeded, "Completed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			p := h.create(h.pod("job", func(p *v1.Pod) {
				p.Spec.RestartPolicy = tc.policy
				p.Annotations[sim.AnnotationExitCode] = tc.code
				p.Annotations[sim.AnnotationExitAfter] = "5s"
			}))
			if got := h.sync(p); got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase = %s, want Running", got.Status.Phase)
			}
			h.step(5 * time.Second)
			got := h.sync(p)
			if got.Status.Phase != tc.phase {
				t.Fatalf("phase = %s, want %s", got.Status.Phase, tc.phase)
			}
			cs := cstatus(got, "app")
			if cs.State.Terminated == nil || cs.State.Terminated.Reason != tc.reason || cs.RestartCount != tc.restarts {
				t.Fatalf("container status = %+v", cs)
			}
			if c := cond(got, v1.PodReady); c.Status != v1.ConditionFalse {
				t.Errorf("Ready = %+v", c)
			}
			if c := cond(got, PodReadyToStartContainersCondition); c.Status != v1.ConditionFalse {
				t.Errorf("PodReadyToStartContainers = %+v (sandbox should be stopped)", c)
			}
			// KUBELET: the phase stays terminal on further syncs.
			h.step(time.Minute)
			if again := h.sync(p); again.Status.Phase != tc.phase {
				t.Errorf("phase moved to %s", again.Status.Phase)
			}
		})
	}
}

func TestCrashLoopBackOffSequence(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("crash", func(p *v1.Pod) { p.Annotations[sim.AnnotationCrashAfter] = "1s" }))
	h.sync(p)
	// First crash: restarted at once.
	h.step(time.Second)
	got := h.sync(p)
	cs := cstatus(got, "app")
	if cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("after first crash: %+v", cs)
	}
	// Each later crash waits 10s, 20s, 40s ...
	restarts := int32(1)
	for _, backoff := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		h.step(time.Second) // crashes
		got = h.sync(p)
		cs = cstatus(got, "app")
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" ||
			!strings.Contains(cs.State.Waiting.Message, "back-off "+backoff.String()+" restarting failed container=app pod=crash_default(uid-crash)") {
			t.Fatalf("backoff %s: state %+v", backoff, cs.State)
		}
		if got.Status.Phase != v1.PodRunning || cond(got, v1.PodReady).Status != v1.ConditionFalse {
			t.Fatalf("phase %s ready %v", got.Status.Phase, cond(got, v1.PodReady))
		}
		h.step(backoff - time.Millisecond)
		if cs = cstatus(h.sync(p), "app"); cs.State.Waiting == nil {
			t.Fatalf("restarted before the back-off of %s ran out", backoff)
		}
		h.step(time.Millisecond)
		restarts++
		if cs = cstatus(h.sync(p), "app"); cs.State.Running == nil || cs.RestartCount != restarts {
			t.Fatalf("not restarted after %s: %+v", backoff, cs)
		}
	}
}

func TestReadinessProbeTogglesReady(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("ready", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationFiles] = "/tmp/ready"
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
			PeriodSeconds: 5, FailureThreshold: 1,
		}
	}))
	got := h.sync(p) // starts the container; not ready before the first probe
	if cond(got, v1.PodReady).Status != v1.ConditionFalse || cstatus(got, "app").Ready {
		t.Fatalf("ready before any probe ran")
	}
	got = h.sync(p)
	if cond(got, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatalf("not ready after a successful probe: %+v", cond(got, v1.PodReady))
	}
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	if _, _, _, err := h.rt.ExecSync(h.ctx, id, []string{"rm", "/tmp/ready"}, time.Second); err != nil {
		t.Fatal(err)
	}
	h.step(5 * time.Second)
	got = h.sync(p)
	if c := cond(got, v1.PodReady); c.Status != v1.ConditionFalse || c.Reason != "ContainersNotReady" || c.Message != "containers with unready status: [app]" {
		t.Fatalf("Ready after failing probe = %+v", c)
	}
	if got.Status.Phase != v1.PodRunning || cstatus(got, "app").RestartCount != 0 {
		t.Fatalf("a readiness failure must not restart")
	}
	h.rt.ExecSync(h.ctx, id, []string{"touch", "/tmp/ready"}, time.Second)
	h.step(5 * time.Second)
	if got = h.sync(p); cond(got, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatalf("not ready again")
	}
}

func TestFailingLivenessRestartsContainer(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("live", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationLiveness] = "fail-after=25s"
		p.Spec.Containers[0].LivenessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstrInt(8080)}},
			PeriodSeconds: 10, FailureThreshold: 2, InitialDelaySeconds: 5,
		}
	}))
	h.sync(p)
	for i := 0; i < 3; i++ { // probes at 10s, 20s pass; at 30s fails once
		h.step(10 * time.Second)
		if cs := cstatus(h.sync(p), "app"); cs.RestartCount != 0 {
			t.Fatalf("restarted after %d probes", i+1)
		}
	}
	h.step(10 * time.Second) // second consecutive failure at 40s
	got := h.sync(p)
	cs := cstatus(got, "app")
	if cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
		t.Fatalf("liveness failure did not restart: %+v", cs)
	}
}

func TestPostStartAndPreStopHooks(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("hooks", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
			PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo started > /tmp/msg"}}},
			PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/tmp/stopping"}}},
		}
	}))
	got := h.sync(p)
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"cat", "/tmp/msg"}, time.Second)
	if err != nil || code != 0 || string(out) != "started\n" {
		t.Fatalf("postStart hook did not run: %q %d %v", out, code, err)
	}
	deletePod(t, h, got, 30)
	h.sync(p)
	found := false
	for _, e := range h.rt.Execs() {
		if e.ContainerID == id && strings.Join(e.Cmd, " ") == "touch /tmp/stopping" {
			found = true
		}
	}
	if !found {
		t.Fatalf("preStop hook did not run: %+v", h.rt.Execs())
	}
}

func TestFailedPostStartHookKillsContainer(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("badhook", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
	}))
	got := h.sync(p)
	cs := cstatus(got, "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "PostStartHookError" || cs.LastTerminationState.Terminated == nil {
		t.Fatalf("status after failed postStart: %+v", cs)
	}
}

func intstrInt(n int) intstr.IntOrString { return intstr.FromInt32(int32(n)) }

func TestInitContainersRunInOrder(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("init", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "first", Image: "busybox:1"}, {Name: "second", Image: "busybox:1"}}
		p.Annotations[sim.AnnotationExitAfter+".first"] = "2s"
		p.Annotations[sim.AnnotationExitAfter+".second"] = "2s"
	}))
	got := h.sync(p)
	if got.Status.Phase != v1.PodPending || cstatus(got, "first").State.Running == nil || cstatus(got, "second").State.Waiting == nil ||
		cstatus(got, "app").State.Waiting.Reason != "PodInitializing" {
		t.Fatalf("step 1: %+v", got.Status)
	}
	if c := cond(got, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [first second]" {
		t.Fatalf("Initialized = %+v", c)
	}
	h.step(2 * time.Second)
	got = h.sync(p)
	if cstatus(got, "first").State.Terminated == nil || cstatus(got, "second").State.Running == nil || cstatus(got, "app").State.Running != nil {
		t.Fatalf("step 2: %+v", got.Status)
	}
	h.step(2 * time.Second)
	got = h.sync(p)
	if got.Status.Phase != v1.PodRunning || cstatus(got, "app").State.Running == nil || cond(got, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Fatalf("step 3: %+v", got.Status)
	}
	if !cstatus(got, "first").Ready || !cstatus(got, "second").Ready {
		t.Errorf("completed init containers should be ready")
	}
}

func TestInitContainerFailure(t *testing.T) {
	t.Run("never", func(t *testing.T) {
		h := newHarness(t, nil)
		p := h.create(h.pod("initfail", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "first", Image: "busybox:1"}}
			p.Annotations[sim.AnnotationExitCode+".first"] = "2"
		}))
		h.sync(p)
		got := h.sync(p)
		if got.Status.Phase != v1.PodFailed || cstatus(got, "app").State.Running != nil {
			t.Fatalf("status: %+v", got.Status)
		}
	})
	t.Run("always", func(t *testing.T) {
		h := newHarness(t, nil)
		p := h.create(h.pod("initloop", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "first", Image: "busybox:1"}}
			p.Annotations[sim.AnnotationExitCode+".first"] = "2"
		}))
		h.sync(p)
		h.sync(p) // restarted at once
		got := h.sync(p)
		cs := cstatus(got, "first")
		if got.Status.Phase != v1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 1 {
			t.Fatalf("status: %s %+v", got.Status.Phase, cs)
		}
	})
}

// deletePod marks the pod deleted the way the API server does for a
// graceful delete.
func deletePod(t *testing.T, h *harness, p *v1.Pod, grace int64) {
	t.Helper()
	cur := h.get(p)
	now := metav1.NewTime(h.clock.Now())
	cur.DeletionTimestamp = &now
	cur.DeletionGracePeriodSeconds = ptr.To(grace)
	if _, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestGracefulDeletionAndFinalDelete(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("del", nil))
	h.sync(p)
	deletePod(t, h, p, 30)
	h.client.ClearActions()
	if got := h.sync(p); got != nil {
		t.Fatalf("pod still in the API after its containers stopped: %+v", got.Status)
	}
	var sawStatus, sawDelete bool
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			st := a.(clienttesting.UpdateAction).GetObject().(*v1.Pod).Status
			if st.Phase != v1.PodSucceeded || cstatus(&v1.Pod{Status: st}, "app").State.Terminated == nil {
				t.Errorf("final status: %+v", st)
			}
			sawStatus = true
		}
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			if sawStatus {
				sawDelete = true
			}
			o := d.DeleteOptions
			if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || *o.Preconditions.UID != p.UID {
				t.Errorf("final delete options = %+v", o)
			}
		}
	}
	if !sawDelete {
		t.Fatalf("no final delete after the terminal status: %v", h.client.Actions())
	}
	// The pod is gone from the API: the kubelet removes its sandbox.
	h.sync(p)
	if sb, c := h.rt.Counts(); sb != 0 || c != 0 {
		t.Fatalf("runtime still has %d sandboxes, %d containers", sb, c)
	}
}

func TestSlowStopHonoursGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		grace int64
		code  int32
		phase v1.PodPhase
	}{{grace: 30, code: 0, phase: v1.PodSucceeded}, {grace: 3, code: 137, phase: v1.PodFailed}} {
		h := newHarness(t, nil)
		p := h.create(h.pod("slow", func(p *v1.Pod) { p.Annotations[sim.AnnotationSlowStop] = "10s" }))
		h.sync(p)
		deletePod(t, h, p, tc.grace)
		h.k.HandlePod(h.get(p))
		done := make(chan error)
		go func() { _, err := h.k.syncPod(h.ctx, p.UID); done <- err }()
		for !h.clock.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		h.step(10 * time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var final *v1.Pod
		for _, a := range h.client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				final = a.(clienttesting.UpdateAction).GetObject().(*v1.Pod)
			}
		}
		if final.Status.Phase != tc.phase || cstatus(final, "app").State.Terminated.ExitCode != tc.code {
			t.Errorf("grace %d: phase %s, %+v", tc.grace, final.Status.Phase, cstatus(final, "app").State)
		}
	}
}

func TestActiveDeadlineFailsPod(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("deadline", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }))
	h.sync(p)
	h.step(29 * time.Second)
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("failed early")
	}
	h.step(time.Second)
	got := h.sync(p)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "DeadlineExceeded" ||
		got.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("status: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if cstatus(got, "app").State.Terminated == nil {
		t.Fatalf("container not stopped")
	}
}

func withRequests(cpu, mem string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
}

func TestAdmissionRejectsWhatDoesNotFit(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.CPU = resource.MustParse("1")
		c.Memory = resource.MustParse("1Gi")
		c.MaxPods = 3
	})
	a := h.create(h.pod("a", withRequests("600m", "100Mi")))
	if got := h.sync(a); got.Status.Phase != v1.PodRunning {
		t.Fatalf("a: %s", got.Status.Phase)
	}
	b := h.create(h.pod("b", withRequests("600m", "100Mi")))
	got := h.sync(b)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "OutOfcpu" ||
		got.Status.Message != "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000" {
		t.Fatalf("b: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	c := h.create(h.pod("c", withRequests("100m", "1000Mi")))
	if got := h.sync(c); got.Status.Reason != "OutOfmemory" {
		t.Fatalf("c: %q %q", got.Status.Reason, got.Status.Message)
	}
	h.sync(h.create(h.pod("d", nil)))
	e := h.create(h.pod("e", nil))
	if got := h.sync(e); got.Status.Phase != v1.PodRunning { // a, d, e: 3 pods fit
		t.Fatalf("e: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	f := h.create(h.pod("f", nil))
	if got := h.sync(f); got.Status.Reason != "OutOfpods" ||
		got.Status.Message != "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" {
		t.Fatalf("f: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if sb, _ := h.rt.Counts(); sb != 3 {
		t.Fatalf("sandboxes = %d, want 3 (rejected pods get none)", sb)
	}
}

func TestRestartedKubeletAdoptsRuntimeState(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("keep", func(p *v1.Pod) { p.Annotations[sim.AnnotationCrashAfter] = "1s" }))
	h.sync(p)
	h.step(time.Second)
	before := h.sync(p) // restarted once
	if cstatus(before, "app").RestartCount != 1 {
		t.Fatalf("setup: %+v", cstatus(before, "app"))
	}
	// A new kubelet on the same runtime.
	k2 := h.newKubelet(nil)
	if err := k2.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	after := h.syncWith(k2, p)
	if sb, _ := h.rt.Counts(); sb != 1 {
		t.Fatalf("sandboxes = %d after restart, want 1", sb)
	}
	if k2.StatusWrites() != 0 {
		t.Errorf("restarted kubelet rewrote an unchanged status:\nbefore %+v\nafter  %+v", before.Status, after.Status)
	}
	if cstatus(after, "app").RestartCount != 1 || !after.Status.StartTime.Equal(before.Status.StartTime) || after.Status.PodIP != before.Status.PodIP {
		t.Errorf("status lost across restart: %+v", after.Status)
	}
}

func TestOrphanedRuntimePodIsCleanedUp(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("orphan", nil))
	h.sync(p)
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, "orphan", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	k2 := h.newKubelet(nil)
	if err := k2.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.syncWith(k2, p)
	if sb, c := h.rt.Counts(); sb != 0 || c != 0 {
		t.Fatalf("orphan left %d sandboxes, %d containers", sb, c)
	}
}

func TestPodIPsAreUnique(t *testing.T) {
	h := newHarness(t, nil)
	seen := map[string]bool{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		got := h.sync(h.create(h.pod(n, nil)))
		if got.Status.PodIP == "" || seen[got.Status.PodIP] {
			t.Fatalf("pod %s ip %q reused or empty", n, got.Status.PodIP)
		}
		seen[got.Status.PodIP] = true
	}
}

func TestContainerLogs(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("logs", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationLogs] = "hello\nworld"
		p.Annotations[sim.AnnotationCrashAfter] = "1s"
	}))
	if _, err := h.k.ContainerLogs(h.ctx, "default", "logs", "", false, runtime.LogOptions{}); err == nil ||
		err.Error() != `container "app" in pod "logs" is waiting to start: ContainerCreating` {
		t.Fatalf("before start: %v", err)
	}
	h.sync(p)
	lines, err := h.k.ContainerLogs(h.ctx, "default", "logs", "app", false, runtime.LogOptions{})
	if err != nil || len(lines) != 2 || lines[0].Text != "hello" {
		t.Fatalf("logs: %+v %v", lines, err)
	}
	if _, err := h.k.ContainerLogs(h.ctx, "default", "logs", "app", true, runtime.LogOptions{}); err == nil {
		t.Fatal("previous logs of a first instance")
	}
	h.step(time.Second)
	h.sync(p) // restarted
	if lines, err = h.k.ContainerLogs(h.ctx, "default", "logs", "app", true, runtime.LogOptions{TailLines: 1}); err != nil || len(lines) != 1 || lines[0].Text != "world" {
		t.Fatalf("previous: %+v %v", lines, err)
	}
	if _, err := h.k.ContainerLogs(h.ctx, "default", "logs", "nope", false, runtime.LogOptions{}); err == nil {
		t.Fatal("unknown container accepted")
	}
}

func TestRejectionStatusIsRetried(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CPU = resource.MustParse("1") })
	h.failNextStatusWrite()
	p := h.create(h.pod("big", withRequests("2", "1Mi")))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	if got := h.sync(p); got.Status.Phase != v1.PodFailed || got.Status.Reason != "OutOfcpu" {
		t.Fatalf("after retry: %s %q", got.Status.Phase, got.Status.Reason)
	}
}

func TestTerminalPodIsNeverRestarted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CPU = resource.MustParse("1") })
	p := h.create(h.pod("big", withRequests("2", "1Mi")))
	if got := h.sync(p); got.Status.Phase != v1.PodFailed {
		t.Fatalf("not rejected: %s", got.Status.Phase)
	}
	// KUBELET-5: a new kubelet (which admits nothing it has not seen
	// rejected) must still not run the Failed pod.
	h.k = h.newKubelet(func(c *Config) { c.CPU = resource.MustParse("8") })
	if err := h.k.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.sync(p); got.Status.Phase != v1.PodFailed || got.Status.Reason != "OutOfcpu" {
		t.Fatalf("phase %s reason %q after kubelet restart", got.Status.Phase, got.Status.Reason)
	}
	if sb, _ := h.rt.Counts(); sb != 0 {
		t.Fatalf("a Failed pod got a sandbox")
	}
}
