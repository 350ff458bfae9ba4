package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// memoryPressureHarness is a kubelet with a hard memory threshold
// (memory.available<100Mi, evictions with ImmediateGracePeriodSeconds)
// on the stopContexts runtime, registered, and an event recorder.
func memoryPressureHarness(t *testing.T) (*harness, *stopContexts, *record.FakeRecorder) {
	t.Helper()
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, nil)
	rt := &stopContexts{Runtime: h.rt}
	h.krt = rt
	h.k = h.newKubelet(func(c *Config) {
		c.Eviction = &ecfg
		c.Memory = resource.MustParse("4Gi")
		c.Recorder = rec
	})
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	return h, rt, rec
}

// lowOnMemory makes the simulated node report 50Mi of memory available.
func lowOnMemory(t *testing.T, h *harness) {
	t.Helper()
	q := resource.MustParse("50Mi")
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, &q); err != nil {
		t.Fatal(err)
	}
}

// slowHog is a running pod using 512Mi above a 64Mi request whose
// container ignores SIGTERM and asks for 600 s of grace.
func slowHog(t *testing.T, h *harness, mutate func(*v1.Pod)) *v1.Pod {
	t.Helper()
	p := h.sync(h.create(h.pod("hog", func(p *v1.Pod) {
		withMemory("64Mi", "512Mi")(p)
		p.Annotations[sim.AnnotationSlowStop] = "1h"
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
		if mutate != nil {
			mutate(p)
		}
	})))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	return p
}

// evictionCutsKill: p's kill is under way (sync, waiting out its 600 s on
// the fake clock); an eviction interval under memory pressure picks it
// and cuts the kill short (its stop's context cancelled, the sync failing
// without a FailedKillPod), and the pod is killed again with the
// eviction's grace period (ImmediateGracePeriodSeconds, a container
// stopped with at least 2 s), not 600 s.
func evictionCutsKill(t *testing.T, h *harness, rt *stopContexts, rec *record.FakeRecorder, p *v1.Pod, sync chan error) {
	t.Helper()
	waitFor(t, "the kill waiting out its 600 s", h.clock.HasWaiters)
	lowOnMemory(t, h)
	drain(rec)
	h.k.evictionTick(h.ctx)
	h.k.mu.Lock()
	picked := h.k.pods[p.UID].eviction != nil
	h.k.mu.Unlock()
	if !picked {
		t.Fatal("the eviction manager did not pick the pod whose kill is under way")
	}
	if rt.last().Err() == nil {
		t.Fatal("the eviction (grace 1 s) did not cut short the kill under way (600 s)")
	}
	if err := syncEnded(t, "the kill to be cut short by the eviction", sync); err == nil {
		t.Fatal("the kill cut short reported success")
	}
	// The Evicted event is the eviction manager's, when it picks the pod.
	evicted := false
	for _, e := range drain(rec) {
		if strings.HasPrefix(e, "Warning FailedKillPod") {
			t.Errorf("event for the cancelled kill: %s", e)
		}
		evicted = evicted || strings.HasPrefix(e, "Warning Evicted")
	}
	killEndsAfter(t, h, p, "the eviction's kill", minimumGracePeriod*time.Second)
	for _, e := range drain(rec) {
		evicted = evicted || strings.HasPrefix(e, "Warning Evicted")
	}
	if !evicted {
		t.Error("no Evicted event")
	}
}

// TestEvictionPicksPodBeingDeleted: a pod being deleted with a long grace
// period (600 s, a container that ignores SIGTERM) is evicted under
// memory pressure, as upstream's eviction manager ranks the active pods
// (GetActivePods: a pod whose termination was requested stays active
// until known terminated), and its eviction's shorter grace period cuts
// the deletion's kill short (killPodNow: UpdatePod with the eviction's
// grace override; the pod worker's effective grace period only shrinks
// and the SyncTerminatingPod in flight is cancelled). The pod ends with
// the eviction's status (its status function applied by the restarted
// SyncTerminatingPod): Failed, Evicted, DisruptionTarget; then it is
// deleted finally. Before, a pod being deleted was never picked.
func TestEvictionPicksPodBeingDeleted(t *testing.T) {
	h, rt, rec := memoryPressureHarness(t)
	p := slowHog(t, h, nil)
	deletePod(t, h, p, 600)
	h.k.HandlePod(h.get(p))
	evictionCutsKill(t, h, rt, rec, p, syncInBackground(h, p))
	if got := h.get(p); got != nil {
		t.Fatalf("pod not finally deleted once stopped: %s", got.Status.Phase)
	}
	st := h.k.pods[p.UID].lastStatus
	if st == nil || st.Phase != v1.PodFailed || st.Reason != eviction.ReasonEvicted {
		t.Fatalf("last status written: %+v", st)
	}
	if c := cond(&v1.Pod{Status: *st}, v1.DisruptionTarget); c.Status != v1.ConditionTrue || c.Reason != reasonTerminationByKubelet {
		t.Fatalf("DisruptionTarget = %+v", c)
	}
}

// TestEvictionCutsDeadlineKill: a pod past its activeDeadlineSeconds
// being killed for it (600 s of grace, its API phase still Running, the
// terminal one held back until the kill ends) is evicted under memory
// pressure and the eviction's grace period cuts the deadline's kill
// short. The pod ends Failed with the deadline's reason and message and
// the eviction's DisruptionTarget, as upstream's: the eviction's status
// function sets Evicted and the condition, then the status generated once
// the pod is killed takes the active deadline handler's reason again
// (generateAPIPodStatus: PodSyncHandlers' ShouldEvict after the preserved
// reason) and keeps the DisruptionTarget (copied from the status
// manager's). Before, the eviction waited for the deadline's kill (600 s)
// and then found the pod terminal.
func TestEvictionCutsDeadlineKill(t *testing.T) {
	h, rt, rec := memoryPressureHarness(t)
	p := slowHog(t, h, func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) })
	h.step(6 * time.Second)
	evictionCutsKill(t, h, rt, rec, p, syncInBackground(h, p))
	got := h.get(p)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != podsync.ReasonDeadlineExceeded || got.Status.Message != podsync.MessageDeadlineExceeded {
		t.Fatalf("status %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	c := cond(got, v1.DisruptionTarget)
	if c.Status != v1.ConditionTrue || c.Reason != reasonTerminationByKubelet || !strings.HasPrefix(c.Message, "The node was low on resource: memory.") {
		t.Fatalf("DisruptionTarget = %+v", c)
	}
	if rs, err := h.k.podRuntimeState(h.ctx, p.UID); err != nil || !rs.Stopped() {
		t.Fatalf("pod still runs: %+v %v", rs, err)
	}
}

// TestEvictionSkipsTerminatedPod: a pod whose kill succeeded (its
// deadline's) is terminated, as upstream's pod workers know it
// (IsPodKnownTerminated), and is not ranked by the eviction manager
// while its API phase is still Running (the status write failed).
// Before, it was picked: nothing of it runs, and the eviction freed
// nothing while no other pod was evicted that interval.
func TestEvictionSkipsTerminatedPod(t *testing.T) {
	h, _, _ := memoryPressureHarness(t)
	p := h.sync(h.create(h.pod("hog", func(p *v1.Pod) {
		withMemory("64Mi", "512Mi")(p)
		p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	})))
	h.step(6 * time.Second)
	h.failNextStatusWrite()
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("the status write did not fail")
	}
	if !h.k.pods[p.UID].x().killed {
		t.Fatal("the deadline's kill did not succeed")
	}
	if got := h.get(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("API phase %s, want Running (the write failed)", got.Status.Phase)
	}
	lowOnMemory(t, h)
	h.k.evictionTick(h.ctx)
	h.k.mu.Lock()
	r := h.k.pods[p.UID]
	picked := r.eviction != nil || r.evicted
	h.k.mu.Unlock()
	if picked {
		t.Fatal("a terminated pod was picked for eviction")
	}
}

// TestEvictionTerminal: the status an eviction gives a pod: Failed,
// Evicted, its message and a DisruptionTarget (none for a local storage
// limit); for a pod past its active deadline the deadline's reason and
// message with the eviction's condition, as upstream's status generation
// lets the active deadline handler override the eviction's reason.
func TestEvictionTerminal(t *testing.T) {
	start := t0
	pod := &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](5)}}
	pod.Generation = 3
	pod.Status.StartTime = ptr.To(metav1.NewTime(start))
	ev := &eviction.Eviction{Message: "The node was low on resource: memory. "}

	got := evictionTerminal(ev, pod, start.Add(4*time.Second))
	if got.Phase != v1.PodFailed || got.Reason != eviction.ReasonEvicted || got.Message != ev.Message {
		t.Fatalf("before the deadline: %+v", got)
	}
	if c := got.Condition; c == nil || c.Type != v1.DisruptionTarget || c.Reason != reasonTerminationByKubelet || c.Message != ev.Message || c.ObservedGeneration != 3 {
		t.Fatalf("condition: %+v", c)
	}
	got = evictionTerminal(ev, pod, start.Add(5*time.Second))
	if got.Reason != podsync.ReasonDeadlineExceeded || got.Message != podsync.MessageDeadlineExceeded || got.Condition == nil || got.Condition.Message != ev.Message {
		t.Fatalf("past the deadline: %+v", got)
	}
	local := &eviction.Eviction{Message: "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ", Limit: eviction.LimitPodEphemeral}
	if got := evictionTerminal(local, pod, start); got.Condition != nil || got.Reason != eviction.ReasonEvicted {
		t.Fatalf("local storage eviction: %+v", got)
	}
}
