package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// addEphemeral adds an ephemeral container to the stored pod, as the API
// server's pods/ephemeralcontainers subresource does (the fake clientset
// stores the whole pod on update).
func (h *harness) addEphemeral(p *v1.Pod, ec v1.EphemeralContainer) {
	h.t.Helper()
	cur := h.get(p)
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, ec)
	if _, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func ecstatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.EphemeralContainerStatuses {
		if s := &p.Status.EphemeralContainerStatuses[i]; s.Name == name {
			return s
		}
	}
	return nil
}

func debugContainer(name, image, target string) v1.EphemeralContainer {
	return v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: image, Stdin: true, TTY: true},
		TargetContainerName:      target,
	}
}

// kubectl debug's container: it starts in the running pod's sandbox,
// joins its target's PID namespace, reports its status beside the pod's
// others (never ready, the pod stays Ready), exits and is not restarted
// although the pod's restartPolicy is Always; its logs are found by name,
// and a kubelet restarted over the runtime finds it again.
func TestEphemeralContainerLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("dbg", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationExitAfter+".debugger"] = "5s"
		p.Annotations[sim.AnnotationLogs+".debugger"] = "hi"
	}))
	got := h.sync(p)
	if got.Status.Phase != v1.PodRunning || len(got.Status.EphemeralContainerStatuses) != 0 {
		t.Fatalf("before kubectl debug: %s %+v", got.Status.Phase, got.Status.EphemeralContainerStatuses)
	}
	app := cstatus(got, "app").ContainerID

	h.addEphemeral(p, debugContainer("debugger", "busybox:1.36", "app"))
	got = h.sync(p)
	es := ecstatus(got, "debugger")
	if es == nil || es.State.Running == nil || es.Ready || es.RestartCount != 0 || !strings.HasPrefix(es.ContainerID, "sim://") {
		t.Fatalf("debugger after its start: %+v", es)
	}
	if cond(got, v1.PodReady).Status != v1.ConditionTrue || len(got.Status.ContainerStatuses) != 1 {
		t.Fatalf("the pod's own status changed: %+v", got.Status)
	}
	id := strings.TrimPrefix(es.ContainerID, "sim://")
	sec, err := h.rt.ContainerSecurity(id)
	if err != nil {
		t.Fatal(err)
	}
	if ns := sec.GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != strings.TrimPrefix(app, "sim://") {
		t.Fatalf("namespace options %+v, want PID TARGET %s", ns, app)
	}
	rs, err := h.k.podRuntimeState(h.ctx, p.UID)
	if err != nil {
		t.Fatal(err)
	}
	if c := rs.Named("debugger"); c == nil || c.Init || !c.Ephemeral {
		t.Fatalf("runtime state: %+v", rs.Containers)
	}
	c, err := h.k.latestContainer(h.ctx, p.Namespace, p.Name, "debugger")
	if err != nil || c.ID != id {
		t.Fatalf("attach/exec lookup: %+v %v", c, err)
	}
	if _, err := h.k.ContainerLogs(h.ctx, p.Namespace, p.Name, "debugger", false, runtime.LogOptions{}); err != nil {
		t.Fatalf("logs: %v", err)
	}

	h.step(6 * time.Second)
	got = h.sync(p)
	h.step(time.Minute)
	got = h.sync(p)
	es = ecstatus(got, "debugger")
	if es == nil || es.State.Terminated == nil || es.RestartCount != 0 || es.Ready {
		t.Fatalf("debugger after its exit: %+v", es)
	}
	if got.Status.Phase != v1.PodRunning || cstatus(got, "app").State.Running == nil {
		t.Fatalf("pod after the debugger exited: %+v", got.Status)
	}
	if exited, other := h.instances(string(p.UID)); exited != 1 || other != 1 {
		t.Fatalf("runtime holds %d exited and %d other containers, want the debugger once and the app", exited, other)
	}

	// A new kubelet over the same runtime (a restart) finds the debugger
	// and starts nothing.
	k2 := h.newKubelet(nil)
	got = h.syncWith(k2, p)
	if es2 := ecstatus(got, "debugger"); es2 == nil || es2.ContainerID != es.ContainerID || es2.State.Terminated == nil {
		t.Fatalf("after a kubelet restart: %+v", es2)
	}
	if exited, other := h.instances(string(p.UID)); exited != 1 || other != 1 {
		t.Fatalf("after a kubelet restart: %d exited, %d other containers", exited, other)
	}
}

// An ephemeral container whose image cannot be pulled waits with
// ErrImagePull, as upstream's; the pod is not otherwise touched.
func TestEphemeralContainerImagePullFails(t *testing.T) {
	h := newHarness(t, nil)
	h.rt.RequireCredentials("private.example", "u", "p")
	p := h.create(h.pod("dbgpull", nil))
	h.sync(p)
	h.addEphemeral(p, debugContainer("debugger", "private.example/tools:1", ""))
	got := h.sync(p)
	es := ecstatus(got, "debugger")
	if es == nil || es.State.Waiting == nil || es.State.Waiting.Reason != reasonErrImagePull {
		t.Fatalf("debugger: %+v", es)
	}
	if got.Status.Phase != v1.PodRunning || cond(got, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatalf("pod: %+v", got.Status)
	}
	// Until the pull's back-off ends it waits with ImagePullBackOff.
	es = ecstatus(h.sync(p), "debugger")
	if es == nil || es.State.Waiting == nil || es.State.Waiting.Reason != "ImagePullBackOff" ||
		!strings.HasPrefix(es.State.Waiting.Message, `Back-off pulling image "private.example/tools:1": ErrImagePull: `) {
		t.Fatalf("debugger in the back-off: %+v", es)
	}
}

// Over CRI (the fake CRI server in front of the simulated runtime) an
// ephemeral container is created with its target's PID namespace
// (NamespaceMode TARGET and the target's id), and its runtime instance is read back as ephemeral.
func TestEphemeralContainerOverCRI(t *testing.T) {
	h, _ := newRecordingCRIHarness(t)
	p := h.create(h.pod("dbgcri", nil))
	got := h.sync(p)
	app := simID(t, cstatus(got, "app").ContainerID)
	h.addEphemeral(p, debugContainer("debugger", "busybox:1.36", "app"))
	got = h.sync(p)
	es := ecstatus(got, "debugger")
	if es == nil || es.State.Running == nil {
		t.Fatalf("debugger: %+v", es)
	}
	sec, err := h.rt.ContainerSecurity(simID(t, es.ContainerID))
	if err != nil {
		t.Fatal(err)
	}
	if ns := sec.GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != app || ns.GetNetwork() != runtimeapi.NamespaceMode_POD {
		t.Fatalf("namespace options %+v, want PID TARGET %s in the pod's network", ns, app)
	}
	list, err := h.krt.ListContainers(h.ctx, &runtimeapi.ContainerFilter{Id: simID(t, es.ContainerID)})
	if err != nil || len(list) != 1 || list[0].Labels[runtime.LabelContainerType] != runtime.ContainerTypeEphemeral {
		t.Fatalf("listed over CRI: %+v %v", list, err)
	}
}

// The target rules of upstream's kubelet: a pod that shares one process
// namespace (shareProcessNamespace) keeps it for its ephemeral containers
// (only a container's own PID namespace is switched to the target's), and
// a targetContainerName no container of the pod has fails the start with
// CreateContainerConfigError.
func TestEphemeralContainerTargetRules(t *testing.T) {
	h, _ := newRecordingCRIHarness(t)
	share := true
	p := h.create(h.pod("dbgshare", func(p *v1.Pod) { p.Spec.ShareProcessNamespace = &share }))
	h.sync(p)
	h.addEphemeral(p, debugContainer("debugger", "busybox:1.36", "app"))
	got := h.sync(p)
	es := ecstatus(got, "debugger")
	if es == nil || es.State.Running == nil {
		t.Fatalf("debugger: %+v", es)
	}
	sec, err := h.rt.ContainerSecurity(simID(t, es.ContainerID))
	if err != nil {
		t.Fatal(err)
	}
	if ns := sec.GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_POD || ns.GetTargetId() != "" {
		t.Fatalf("namespace options %+v, want the pod's shared PID namespace", ns)
	}

	h.addEphemeral(p, debugContainer("lost", "busybox:1.36", "nope"))
	got = h.sync(p)
	ls := ecstatus(got, "lost")
	if ls == nil || ls.State.Waiting == nil || ls.State.Waiting.Reason != "CreateContainerConfigError" ||
		!strings.Contains(ls.State.Waiting.Message, "unable to find target container nope") {
		t.Fatalf("lost: %+v", ls)
	}
}
