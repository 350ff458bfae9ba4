package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestEvictionRecordedBeforeKill drives the pod worker over an evicted
// pod whose container will not stop. As upstream's SyncTerminatingPod
// sets the eviction's status (Failed, Evicted, its message and the
// DisruptionTarget) before killing, a failed kill leaves the eviction
// recorded: the sync fails (FailedKillPod after the one Evicted event)
// and is retried on the back-off, killing again with nothing of the pod
// restarted meanwhile, and the API sees no terminal phase while the
// container runs (upstream's status manager holds it back). Once the
// container is gone (here it exits on its own) the retry's kill succeeds
// and the pod is reported Failed/Evicted with its DisruptionTarget. The
// eviction was lost before: the sidecar the failed kill stopped was
// restarted and the pod kept running.
func TestEvictionRecordedBeforeKill(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true, PressureTransitionPeriod: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) {
		c.Eviction = &ecfg
		c.Memory = resource.MustParse("4Gi")
		c.Recorder = events
		c.SyncErrorBackOff = 10 * time.Second
	})
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	hog := h.sync(h.create(h.pod("hog", func(p *v1.Pod) {
		withMemory("64Mi", "512Mi")(p)
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "busybox"})
		p.Annotations[sim.AnnotationStopFailure+".app"] = "ttrpc: closed"
		p.Annotations[sim.AnnotationExitAfter+".app"] = "1h"
	})))
	if hog.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", hog.Status.Phase)
	}
	q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
	defer q.ShutDown()
	h.k.queue = q
	drain(events)
	// The pod's events: not the node's (its memory pressure).
	reasons := func() []string {
		var out []string
		for _, e := range drain(events) {
			if f := strings.Fields(e); len(f) >= 2 && !strings.HasPrefix(f[1], "NodeHas") {
				out = append(out, f[0]+" "+f[1])
			}
		}
		return out
	}
	sideContainers := func() int {
		rs, err := h.k.podRuntimeState(h.ctx, hog.UID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range rs.Containers {
			if c.Name == "side" {
				n++
			}
		}
		return n
	}

	q50 := resource.MustParse("50Mi")
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, &q50); err != nil {
		t.Fatal(err)
	}
	h.k.evictionTick(h.ctx)
	if q.Len() != 1 {
		t.Fatalf("%d pods queued after the eviction, want 1", q.Len())
	}
	h.k.processNext(h.ctx)
	if got := reasons(); !equalStrings(got, []string{"Warning Evicted", "Normal Killing", "Normal Killing", "Warning FailedKillPod"}) {
		t.Fatalf("first attempt: events %q", got)
	}
	delay := q.lastDelay()
	if delay <= 0 {
		t.Fatalf("the failed eviction is not retried (delay %v)", delay)
	}
	for try := range 2 {
		if got := h.get(hog); got.Status.Phase != v1.PodRunning || got.Status.Reason != "" || hasCondition(got, v1.DisruptionTarget) {
			t.Fatalf("attempt %d: API status %s %q %+v while the container runs", try+1, got.Status.Phase, got.Status.Reason, got.Status.Conditions)
		}
		if n := sideContainers(); n != 1 {
			t.Fatalf("attempt %d: %d side containers: the stopped sidecar was restarted", try+1, n)
		}
		if try == 1 {
			break
		}
		h.step(delay)
		q.Add(hog.UID)
		h.k.processNext(h.ctx)
		if got := reasons(); !equalStrings(got, []string{"Normal Killing", "Warning FailedKillPod"}) {
			t.Fatalf("retry: events %q, want the kill again without another Evicted", got)
		}
		if delay = q.lastDelay(); delay <= 0 {
			t.Fatalf("the failed retry is not retried (delay %v)", delay)
		}
	}

	// The container exits on its own: the next retry's kill succeeds.
	h.step(time.Hour)
	q.Add(hog.UID)
	h.k.processNext(h.ctx)
	got := h.get(hog)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != eviction.ReasonEvicted || !strings.HasPrefix(got.Status.Message, "The node was low on resource: memory.") {
		t.Fatalf("after the kill: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	dt := condition(got, v1.DisruptionTarget)
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != reasonTerminationByKubelet || dt.Message != got.Status.Message {
		t.Fatalf("DisruptionTarget %+v", dt)
	}
	if !dt.LastTransitionTime.Time.Equal(h.clock.Now().Truncate(time.Second)) {
		t.Errorf("DisruptionTarget dated %v, want when the terminal phase was reported (%v)", dt.LastTransitionTime, h.clock.Now())
	}
	if ev := reasons(); len(ev) != 0 {
		t.Errorf("events after the kill succeeded: %q", ev)
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

func hasCondition(p *v1.Pod, t v1.PodConditionType) bool { return condition(p, t) != nil }

func condition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
