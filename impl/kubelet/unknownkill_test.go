package kubelet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestContainerConfigKeepsKillSpecs: a container's CRI config carries in
// its annotations what killing it without its pod takes, under upstream's
// keys and encodings (newContainerAnnotations): its preStop handler and
// ports as JSON, its termination message path and policy, and the pod's
// grace periods; restoreKillSpecs reads them back, with the pod's name,
// namespace and UID and the container's name from the labels, as
// upstream's restoreSpecsFromContainerLabels. A container without a
// preStop hook or ports has neither annotation.
func TestContainerConfigKeepsKillSpecs(t *testing.T) {
	preStop := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("web")}}
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web-0", "shop", "uid-web-0"
	pod.DeletionGracePeriodSeconds = ptr.To[int64](12)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](40)
	c := v1.Container{
		Name: "app", Image: "nginx:1.27",
		Ports:                    []v1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
		Lifecycle:                &v1.Lifecycle{PreStop: preStop},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
	}
	pod.Spec.Containers = []v1.Container{c}
	cfg := containerConfig(pod, &pod.Spec.Containers[0], false, 0, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, cgroupParams{})
	a := cfg.Annotations
	for key, want := range map[string]string{
		"io.kubernetes.container.preStopHandler":           `{"httpGet":{"path":"/quit","port":"web"}}`,
		"io.kubernetes.container.ports":                    `[{"name":"web","containerPort":8080,"protocol":"TCP"}]`,
		"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
		"io.kubernetes.container.terminationMessagePolicy": "FallbackToLogsOnError",
		"io.kubernetes.pod.deletionGracePeriod":            "12",
		"io.kubernetes.pod.terminationGracePeriod":         "40",
	} {
		if a[key] != want {
			t.Errorf("annotation %s = %q, want %q", key, a[key], want)
		}
	}
	rp, rc := restoreKillSpecs(cfg.Labels, cfg.Annotations)
	wantPod := &v1.Pod{}
	wantPod.Name, wantPod.Namespace, wantPod.UID = pod.Name, pod.Namespace, pod.UID
	wantPod.DeletionGracePeriodSeconds, wantPod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](12), ptr.To[int64](40)
	if !equality.Semantic.DeepEqual(rp, wantPod) {
		t.Errorf("restored pod %+v, want %+v", rp, wantPod)
	}
	wantC := &v1.Container{Name: "app", Ports: c.Ports, TerminationMessagePath: c.TerminationMessagePath, Lifecycle: &v1.Lifecycle{PreStop: preStop}}
	if !equality.Semantic.DeepEqual(rc, wantC) {
		t.Errorf("restored container %+v, want %+v", rc, wantC)
	}

	plain := pod.Spec.Containers[0]
	plain.Lifecycle, plain.Ports = nil, nil
	cfg = containerConfig(pod, &plain, false, 0, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, cgroupParams{})
	for _, key := range []string{"io.kubernetes.container.preStopHandler", "io.kubernetes.container.ports"} {
		if v, ok := cfg.Annotations[key]; ok {
			t.Errorf("a container without it has annotation %s = %q", key, v)
		}
	}
	if _, rc := restoreKillSpecs(cfg.Labels, cfg.Annotations); rc.Lifecycle != nil || rc.Ports != nil {
		t.Errorf("restored from a plain container: %+v", rc)
	}
}

// unknownRuntime is the simulated runtime reporting some containers in
// the unknown state, and noting the order of hooks run and stops.
type unknownRuntime struct {
	*sim.Runtime
	unknown map[string]bool
	mu      sync.Mutex
	calls   []string
}

func (u *unknownRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	list, err := u.Runtime.ListContainers(ctx, f)
	for _, c := range list {
		if u.unknown[c.Id] {
			c.State = runtimeapi.ContainerState_CONTAINER_UNKNOWN
		}
	}
	return list, err
}

func (u *unknownRuntime) note(s string) {
	u.mu.Lock()
	u.calls = append(u.calls, s)
	u.mu.Unlock()
}

func (u *unknownRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	u.note("exec " + strings.Join(cmd, " "))
	return u.Runtime.ExecSync(ctx, id, cmd, timeout)
}

func (u *unknownRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	u.note(fmt.Sprintf("stop %d", timeout))
	return u.Runtime.StopContainer(ctx, id, timeout)
}

// refRecorder records events with the object each is about.
type refRecorder struct {
	mu     sync.Mutex
	events []string // "<fieldPath> <type> <reason> <message>" of pod <ns>/<name> <uid>
}

func (r *refRecorder) Event(obj k8sruntime.Object, eventType, reason, message string) {
	ref, ok := obj.(*v1.ObjectReference)
	if !ok {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf("%s %s/%s %s %s|%s %s %s", ref.Kind, ref.Namespace, ref.Name, ref.UID, ref.FieldPath, eventType, reason, message))
	r.mu.Unlock()
}

func (r *refRecorder) Eventf(obj k8sruntime.Object, eventType, reason, format string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *refRecorder) AnnotatedEventf(obj k8sruntime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	r.Eventf(obj, eventType, reason, format, args...)
}

// TestContainerGCKillsUnknownContainerAsUpstream: a container of a pod
// the kubelet no longer knows (a restarted kubelet whose source has
// synced without it) reported in the unknown state is killed by the
// container GC as upstream's removeOldestN kills one through
// killContainer with the specs restored from its annotations: a Normal
// Killing event "Container is in unknown state, try killing it before
// removal" on the pod the labels name, about the container as upstream's
// GenerateContainerRef names one its pod's spec lacks ("implicitly
// required container app"); then its preStop hook (exec), within the
// pod's grace period (its termination grace period of 12 s, written when
// the container was made); then the stop, with what is left of it; then
// the removal. Before, it was stopped with the grace period alone: no
// hook, no event.
func TestContainerGCKillsUnknownContainerAsUpstream(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("hooked", func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](12)
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/tmp/stopping"}}}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("hooked: %s", got.Status.Phase)
	}
	list, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("containers %v, %v", list, err)
	}
	id := list[0].Id

	// A new kubelet that has not been handed the pod, its source synced:
	// the pod is gone, and its container is in the unknown state.
	rt := &unknownRuntime{Runtime: h.rt, unknown: map[string]bool{id: true}}
	events := &refRecorder{}
	h.krt = rt
	h.k = h.newKubelet(func(c *Config) { c.Recorder = events })
	collector := h.k.nodeGC(h.ctx, h.clock.Now())
	if collector == nil {
		t.Fatal("no collector")
	}
	if removed, err := collector.CollectContainers(h.ctx, false, h.clock.Now()); err != nil || removed != 1 {
		t.Fatalf("CollectContainers = %d, %v; want 1 removed", removed, err)
	}
	if want := []string{"exec touch /tmp/stopping", "stop 12"}; !slices.Equal(rt.calls, want) {
		t.Errorf("runtime calls %v, want %v", rt.calls, want)
	}
	want := fmt.Sprintf("Pod default/hooked %s implicitly required container app|Normal Killing Container is in unknown state, try killing it before removal", p.UID)
	if !slices.Contains(events.events, want) {
		t.Errorf("events %q, want %q", events.events, want)
	}
	if left, _ := h.rt.ListContainers(h.ctx, nil); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

var _ runtime.Runtime = (*unknownRuntime)(nil)
