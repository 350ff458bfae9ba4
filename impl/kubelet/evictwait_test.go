package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// picked reports whether the eviction manager has asked for the pod's
// eviction and it is not carried out yet.
func picked(k *Kubelet, uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.pods[uid]
	return r != nil && r.eviction != nil
}

// countEvicted counts the events of drained with the prefix (e.g.
// "Warning Evicted").
func countEvicted(rec *record.FakeRecorder, prefix string) int {
	n := 0
	for _, e := range drain(rec) {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// TestEvictionWaitsForVictim: after evicting a pod the eviction manager
// looks at the node again only once the pod's kill ended or timed out
// (10 s for a hard threshold's 1 s of grace: ExceededGracePeriod on the
// pod) and its clean-up is done or timed out (30 s more), as upstream's
// (TerminatePodAbnormallyAndWait, waitForPodsCleanup). A victim still not
// terminated then is picked again, with a second Evicted event; once the
// victim is killed and finished, the next interval follows a second
// later, not a monitoring interval later. Before, the next interval
// picked the next pod while the first was still running, and never the
// same pod again.
func TestEvictionWaitsForVictim(t *testing.T) {
	h, _, rec := memoryPressureHarness(t)
	hog := h.sync(h.create(h.pod("hog", withMemory("64Mi", "512Mi"))))
	modest := h.sync(h.create(h.pod("modest", withMemory("256Mi", "128Mi"))))
	lowOnMemory(t, h)
	drain(rec)
	h.k.evictionTick(h.ctx)
	if !picked(h.k, hog.UID) {
		t.Fatal("hog not picked")
	}
	if n := countEvicted(rec, "Warning Evicted"); n != 1 {
		t.Fatalf("%d Evicted events, want 1", n)
	}
	// The pod workers do not get to the hog: its kill does not end.
	h.step(5 * time.Second)
	h.k.evictionTick(h.ctx)
	if picked(h.k, modest.UID) {
		t.Fatal("next pod picked while the first one's kill is awaited")
	}
	h.step(5 * time.Second)
	h.k.evictionTick(h.ctx)
	events := drain(rec)
	want := "Warning ExceededGracePeriod Container runtime did not terminate the pod within specified grace period."
	if len(events) != 1 || events[0] != want {
		t.Fatalf("events once the kill timed out: %q, want %q", events, want)
	}
	if picked(h.k, modest.UID) {
		t.Fatal("next pod picked while the clean-up is awaited")
	}
	h.step(29 * time.Second)
	h.k.evictionTick(h.ctx)
	if n := countEvicted(rec, "Warning Evicted"); n != 0 || picked(h.k, modest.UID) {
		t.Fatalf("synchronized before the clean-up timed out (%d Evicted events)", n)
	}
	h.step(time.Second)
	h.k.evictionTick(h.ctx)
	if n := countEvicted(rec, "Warning Evicted"); n != 1 || picked(h.k, modest.UID) {
		t.Fatalf("after the waits: %d Evicted events, modest picked %v; want hog picked again", n, picked(h.k, modest.UID))
	}
	// The hog's worker carries its eviction out; it is finished.
	if got := h.sync(hog); got.Status.Phase != v1.PodFailed {
		t.Fatalf("hog: %s", got.Status.Phase)
	}
	h.k.evictionTick(h.ctx)
	if picked(h.k, modest.UID) {
		t.Fatal("clean-up checked before its first poll")
	}
	h.step(time.Second)
	h.k.evictionTick(h.ctx)
	if !picked(h.k, modest.UID) {
		t.Fatal("modest not picked once the hog was finished")
	}
}

// TestEvictionSkipsPodTerminalBeforeRestart: a restarted kubelet does
// not pick a pod whose phase in the API is terminal and of which nothing
// runs, before its first sync, as upstream's pod workers take such a pod
// for terminated the first time they see it (UpdatePod,
// isPodStatusCacheTerminal). Before, it was active until that sync.
func TestEvictionSkipsPodTerminalBeforeRestart(t *testing.T) {
	h, _, _ := memoryPressureHarness(t)
	done := h.sync(h.create(h.pod("done", func(p *v1.Pod) {
		withMemory("64Mi", "512Mi")(p)
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Annotations[sim.AnnotationExitAfter] = "1s"
		p.Annotations[sim.AnnotationExitCode] = "1"
	})))
	h.step(2 * time.Second)
	h.sync(done)
	if got := h.sync(done); got.Status.Phase != v1.PodFailed {
		t.Fatalf("setup: %s", got.Status.Phase)
	}
	k2 := h.newKubelet(func(c *Config) {
		c.Eviction = h.k.cfg.Eviction
		c.Memory = resource.MustParse("4Gi")
	})
	if err := k2.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	k2.HandlePod(h.get(done))
	q := resource.MustParse("50Mi")
	if err := k2.SetAvailable(eviction.SignalMemoryAvailable, &q); err != nil {
		t.Fatal(err)
	}
	k2.evictionTick(h.ctx)
	if picked(k2, done.UID) {
		t.Fatal("a pod terminated before the restart was picked before its first sync")
	}
	if !k2.Pressure().Memory {
		t.Fatal("no memory pressure")
	}
}

// TestEvictedTerminatingPodContentKept: a pod evicted while its kill for
// its active deadline is under way keeps its content (dead containers)
// as any terminated pod, as upstream's pod workers mark a pod evicted
// (ShouldPodContentBeRemoved) only when the eviction begins its
// termination; a pod evicted while running loses it. Before, both were
// removable.
func TestEvictedTerminatingPodContentKept(t *testing.T) {
	h, rt, rec := memoryPressureHarness(t)
	p := slowHog(t, h, func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) })
	h.step(6 * time.Second)
	evictionCutsKill(t, h, rt, rec, p, syncInBackground(h, p))
	h.sync(p)
	if got := h.k.podGCState(string(p.UID)); got != gc.PodTerminated {
		t.Fatalf("pod evicted while terminating: GC state %v, want terminated (%v)", got, gc.PodTerminated)
	}

	h2, _, _ := memoryPressureHarness(t)
	hog := h2.sync(h2.create(h2.pod("hog", withMemory("64Mi", "512Mi"))))
	lowOnMemory(t, h2)
	h2.k.evictionTick(h2.ctx)
	if got := h2.sync(hog); got.Status.Phase != v1.PodFailed {
		t.Fatalf("hog: %s", got.Status.Phase)
	}
	if got := h2.k.podGCState(string(hog.UID)); got != gc.PodRemovable {
		t.Fatalf("pod evicted while running: GC state %v, want removable (%v)", got, gc.PodRemovable)
	}
}
