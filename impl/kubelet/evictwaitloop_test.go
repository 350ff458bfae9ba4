package kubelet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// nextEvent waits (real time, up to 10 s) for an event with the prefix,
// skipping others.
func nextEvent(t *testing.T, rec *record.FakeRecorder, prefix string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-rec.Events:
			if strings.HasPrefix(e, prefix) {
				return
			}
		case <-timeout:
			t.Fatalf("timed out waiting for a %q event", prefix)
		}
	}
}

// TestHousekeepingAdvancesEvictionWait: while the eviction manager waits
// for the pods it evicted, the housekeeping loop advances the wait every
// tick, whatever the monitoring interval (a day here): the kill's wait
// times out (ExceededGracePeriod), the clean-up's too, the manager picks
// the pod again at once, and a second after the pod is finished it picks
// the next one. Without the housekeeping wiring nothing happens until
// the monitoring interval.
func TestHousekeepingAdvancesEvictionWait(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true, MonitoringInterval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) {
		c.Eviction = &ecfg
		c.Memory = resource.MustParse("4Gi")
		c.Recorder = rec
	})
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	hog := h.sync(h.create(h.pod("hog", withMemory("64Mi", "512Mi"))))
	modest := h.sync(h.create(h.pod("modest", withMemory("256Mi", "128Mi"))))
	lowOnMemory(t, h)
	h.k.evictionTick(h.ctx)
	if !picked(h.k, hog.UID) {
		t.Fatal("hog not picked")
	}
	drain(rec)

	waiters := h.clock.Waiters()
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.k.housekeeping(ctx)
	}()
	defer func() { cancel(); <-done }()
	eventually(t, "housekeeping's ticker", func() bool { return h.clock.Waiters() > waiters })

	h.step(10 * time.Second)
	nextEvent(t, rec, "Warning ExceededGracePeriod")
	h.step(30 * time.Second)
	nextEvent(t, rec, "Warning Evicted") // the hog, picked again
	if picked(h.k, modest.UID) {
		t.Fatal("modest picked while the hog was not finished")
	}
	if got := h.sync(hog); got.Status.Phase != v1.PodFailed {
		t.Fatalf("hog: %s", got.Status.Phase)
	}
	h.step(time.Second)
	nextEvent(t, rec, "Warning Evicted")
	if !picked(h.k, modest.UID) {
		t.Fatal("modest not picked once the hog was finished")
	}
}

// TestContainerGCRunsWhileEvictionWaits: the periodic container garbage
// collection runs when due though the eviction manager is waiting for a
// pod it evicted, as upstream's runs on its own loop (garbageCollection).
func TestContainerGCRunsWhileEvictionWaits(t *testing.T) {
	h, _, _ := memoryPressureHarness(t)
	hog := h.sync(h.create(h.pod("hog", withMemory("64Mi", "512Mi"))))
	orphanLeft := func() int {
		sbs, err := h.rt.ListPodSandbox(h.ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: "uid-gone"}})
		if err != nil {
			t.Fatal(err)
		}
		return len(sbs)
	}
	lowOnMemory(t, h)
	h.k.evictionTick(h.ctx)
	if !picked(h.k, hog.UID) || !h.k.evictWaiting.Load() {
		t.Fatalf("setup: hog picked %v, waiting %v", picked(h.k, hog.UID), h.k.evictWaiting.Load())
	}
	waiters := h.clock.Waiters()
	ctx, cancel := context.WithCancel(h.ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	h.k.garbageCollection(ctx, &wg) // its first collection at once
	eventually(t, "the collection loop's timer", func() bool { return h.clock.Waiters() > waiters })
	h.stoppedSandbox("gone")
	h.step(gc.ContainerPeriod - time.Second)
	h.k.evictionTick(h.ctx)
	if !h.k.evictWaiting.Load() || orphanLeft() != 1 {
		t.Fatalf("before the period: waiting %v, orphan sandboxes %d", h.k.evictWaiting.Load(), orphanLeft())
	}
	h.step(time.Second) // the collection is due; the hog's kill is still awaited
	eventually(t, "the container collection while the eviction manager waits", func() bool { return orphanLeft() == 0 })
	h.k.evictionTick(h.ctx)
	if !h.k.evictWaiting.Load() {
		t.Fatal("the wait for the hog is over")
	}
}

// TestEvictionWaitWakesOnKill: the eviction manager's wait for a pod it
// evicted ends the moment the pod's worker ends its kill, as upstream's
// (killPodNow blocks on the kill's completion channel, which the pod
// worker closes once SyncTerminatingPod succeeded), and the clean-up is
// polled a second after that, not at housekeeping's next tick: with
// housekeeping ticking once an hour, the next pod is picked a second
// after the first one's kill. Before, the wait advanced on housekeeping's
// ticks only.
func TestEvictionWaitWakesOnKill(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true, MonitoringInterval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) {
		c.Eviction = &ecfg
		c.Memory = resource.MustParse("4Gi")
		c.Recorder = rec
		c.RelistPeriod = time.Hour
	})
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	hog := h.sync(h.create(h.pod("hog", withMemory("64Mi", "512Mi"))))
	modest := h.sync(h.create(h.pod("modest", withMemory("256Mi", "128Mi"))))
	lowOnMemory(t, h)
	h.k.evictionTick(h.ctx)
	if !picked(h.k, hog.UID) {
		t.Fatal("hog not picked")
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.k.housekeeping(ctx)
	}()
	defer func() { cancel(); <-done }()

	killedAt := h.clock.Now()
	if got := h.sync(hog); got.Status.Phase != v1.PodFailed {
		t.Fatalf("hog: %s", got.Status.Phase)
	}
	firstPoll := killedAt.Add(eviction.PodCleanupPollPeriod).UnixNano()
	eventually(t, "the wait woken by the end of the hog's kill", func() bool { return h.k.evictWakeAt.Load() == firstPoll })
	if picked(h.k, modest.UID) {
		t.Fatal("modest picked before the clean-up's first poll")
	}
	h.step(eviction.PodCleanupPollPeriod)
	eventually(t, "modest picked a second after the hog's kill", func() bool { return picked(h.k, modest.UID) })
}
