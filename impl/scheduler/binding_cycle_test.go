package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins"
)

// gate is a test plugin at Reserve, Permit, PreBind and PostBind, like a
// gang-scheduling plugin: permit and preBind decide each call; it counts
// what it was told.
type gate struct {
	mu         sync.Mutex
	permit     func(pod *v1.Pod) (*fw.Status, time.Duration)
	preBind    func(pod *v1.Pod) *fw.Status
	reserved   map[string]int
	unreserved map[string]int
	postBound  map[string]string
}

const gateName = "Gate"

func newGate() *gate {
	return &gate{reserved: map[string]int{}, unreserved: map[string]int{}, postBound: map[string]string{}}
}

func (g *gate) Name() string { return gateName }

func (g *gate) Reserve(_ context.Context, _ *fw.CycleState, pod *v1.Pod, _ string) *fw.Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserved[pod.Name]++
	return nil
}

func (g *gate) Unreserve(_ context.Context, _ *fw.CycleState, pod *v1.Pod, _ string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unreserved[pod.Name]++
}

func (g *gate) Permit(_ context.Context, _ *fw.CycleState, pod *v1.Pod, _ string) (*fw.Status, time.Duration) {
	g.mu.Lock()
	f := g.permit
	g.mu.Unlock()
	if f == nil {
		return nil, 0
	}
	return f(pod)
}

func (g *gate) PreBind(_ context.Context, _ *fw.CycleState, pod *v1.Pod, _ string) *fw.Status {
	g.mu.Lock()
	f := g.preBind
	g.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(pod)
}

func (g *gate) PostBind(_ context.Context, _ *fw.CycleState, pod *v1.Pod, node string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.postBound[pod.Name] = node
}

func (g *gate) setPermit(f func(pod *v1.Pod) (*fw.Status, time.Duration)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.permit = f
}

func (g *gate) counts(pod string) (reserved, unreserved int, postBoundTo string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reserved[pod], g.unreserved[pod], g.postBound[pod]
}

// startGatedScheduler runs the default plugins plus g, registered and
// enabled the way a user's out-of-tree plugin is.
func startGatedScheduler(t *testing.T, c *fakeCluster, g *gate) *Scheduler {
	t.Helper()
	return startGatedSchedulerWith(t, c, g, Config{})
}

func startGatedSchedulerWith(t *testing.T, c *fakeCluster, g *gate, cfg Config) *Scheduler {
	t.Helper()
	reg := plugins.NewInTreeRegistry()
	reg[gateName] = func(json.RawMessage, fw.Handle) (fw.Plugin, error) { return g, nil }
	conf := testConfig()
	conf.Profiles = []config.KubeSchedulerProfile{{
		SchedulerName: config.DefaultSchedulerName,
		Plugins:       &config.Plugins{MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: gateName}}}},
	}}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Configuration, cfg.Seed, cfg.Registry = conf, 1, reg
	s, err := New(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		waitFor(t, "goroutines to stop", func() bool { return runtime.NumGoroutine() <= before })
	})
	return s
}

func (s *Scheduler) defaultProfile() *fw.Framework { return s.profiles[config.DefaultSchedulerName] }

func podScheduledFalse(t *testing.T, c *fakeCluster, name, message string) func() bool {
	return func() bool {
		cond := scheduledCondition(getPod(t, c, "default", name))
		return cond != nil && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable && cond.Message == message
	}
}

func TestPermitPluginDelaysBindingUntilAllowed(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "1", "4Gi", 110, nil))
	g := newGate()
	g.setPermit(func(*v1.Pod) (*fw.Status, time.Duration) { return fw.NewStatus(fw.Wait), time.Hour })
	s := startGatedScheduler(t, c, g)

	createPod(t, c, makePod("default", "held", "1", "1Gi"))
	held := getPod(t, c, "default", "held")
	var wp fw.WaitingPod
	waitFor(t, "held to wait at Permit", func() bool { wp = s.defaultProfile().GetWaitingPod(held.UID); return wp != nil })
	if wp.NodeName() != "n1" || len(wp.GetPendingPlugins()) != 1 || wp.GetPendingPlugins()[0] != gateName {
		t.Fatalf("waiting on %q for %v", wp.NodeName(), wp.GetPendingPlugins())
	}
	// While it waits, the pod is assumed (the next decision counts its
	// cpu) but not bound.
	if !s.Cache().IsAssumedPod(held) {
		t.Error("a pod waiting at Permit must stay assumed")
	}
	other := makePod("default", "other", "1", "1Gi")
	createPod(t, c, other)
	waitFor(t, "other to find no room", podScheduledFalse(t, c, "other", "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."))
	if n := c.bindCount("default", "held"); n != 0 || getPod(t, c, "default", "held").Spec.NodeName != "" {
		t.Fatalf("held was bound %d times before Permit allowed it", n)
	}

	go wp.Allow(gateName) // plugins allow from their own goroutines
	waitFor(t, "held bound once allowed", func() bool { return getPod(t, c, "default", "held").Spec.NodeName == "n1" })
	waitFor(t, "PostBind", func() bool { _, _, node := g.counts("held"); return node == "n1" })
	if r, u, _ := g.counts("held"); r != 1 || u != 0 {
		t.Errorf("Reserve %d, Unreserve %d; want 1 and 0", r, u)
	}
}

func TestPermitRejectionUnreservesAndRequeues(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "1", "4Gi", 110, nil))
	g := newGate()
	g.setPermit(func(*v1.Pod) (*fw.Status, time.Duration) {
		return fw.NewStatus(fw.Unschedulable, "waiting for the rest of the gang"), 0
	})
	s := startGatedScheduler(t, c, g)

	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p rejected at Permit", podScheduledFalse(t, c, "p", "0/1 nodes are available: 1 waiting for the rest of the gang."))
	waitFor(t, "Unreserve after the rejection", func() bool { _, u, _ := g.counts("p"); return u >= 1 })
	if s.Cache().IsAssumedPod(getPod(t, c, "default", "p")) {
		t.Error("a rejected pod must be forgotten")
	}
	if c.bindCount("default", "p") != 0 {
		t.Fatal("a rejected pod was bound")
	}
	waitFor(t, "FailedScheduling event", func() bool {
		evs, _ := c.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Regarding.Name == "p" && e.Note == "0/1 nodes are available: 1 waiting for the rest of the gang." {
				return true
			}
		}
		return false
	})

	// The gang is complete: the pod is retried (a new node is a cluster
	// event that moves it) and bound.
	g.setPermit(nil)
	createNode(t, c, makeNode("n2", "1", "4Gi", 110, nil))
	waitFor(t, "p bound after requeue", func() bool { return getPod(t, c, "default", "p").Spec.NodeName != "" })
	if r, u, _ := g.counts("p"); r != u+1 {
		t.Errorf("Reserve %d, Unreserve %d: every failed attempt must be unreserved", r, u)
	}
}

func TestWaitingPodRejectedFromAnotherGoroutine(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "1", "4Gi", 110, nil))
	g := newGate()
	g.setPermit(func(*v1.Pod) (*fw.Status, time.Duration) { return fw.NewStatus(fw.Wait), time.Hour })
	s := startGatedScheduler(t, c, g)

	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	uid := getPod(t, c, "default", "p").UID
	var wp fw.WaitingPod
	waitFor(t, "p waiting", func() bool { wp = s.defaultProfile().GetWaitingPod(uid); return wp != nil })
	go wp.Reject(gateName, "gang timed out")
	waitFor(t, "p rejected", podScheduledFalse(t, c, "p", "0/1 nodes are available: 1 gang timed out."))
	waitFor(t, "Unreserve", func() bool { _, u, _ := g.counts("p"); return u == 1 })
	waitFor(t, "assumption forgotten", func() bool { return !s.Cache().IsAssumedPod(getPod(t, c, "default", "p")) })
	if c.bindCount("default", "p") != 0 {
		t.Error("a rejected pod was bound")
	}
}

func TestDeletingAWaitingPodRejectsIt(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "1", "4Gi", 110, nil))
	g := newGate()
	g.setPermit(func(*v1.Pod) (*fw.Status, time.Duration) { return fw.NewStatus(fw.Wait), time.Hour })
	s := startGatedScheduler(t, c, g)

	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	uid := getPod(t, c, "default", "p").UID
	waitFor(t, "p waiting", func() bool { return s.defaultProfile().GetWaitingPod(uid) != nil })
	if err := c.CoreV1().Pods("default").Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p no longer waiting and unreserved", func() bool {
		_, u, _ := g.counts("p")
		return s.defaultProfile().GetWaitingPod(uid) == nil && u == 1
	})
	waitFor(t, "its room freed", func() bool { return s.Cache().PodCount() == 0 })
}

func TestPreBindFailureUnreservesAndRetries(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "1", "4Gi", 110, nil))
	g := newGate()
	var failures int
	g.preBind = func(*v1.Pod) *fw.Status {
		if failures == 0 {
			failures++
			return fw.AsStatus(errors.New("volume not attached yet"))
		}
		return nil
	}
	startGatedScheduler(t, c, g)
	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p bound after a failed PreBind", func() bool { return getPod(t, c, "default", "p").Spec.NodeName == "n1" })
	waitFor(t, "PostBind", func() bool { _, _, n := g.counts("p"); return n == "n1" })
	if r, u, _ := g.counts("p"); r != 2 || u != 1 {
		t.Errorf("Reserve %d, Unreserve %d; want 2 and 1", r, u)
	}
	if c.bindCount("default", "p") != 1 {
		t.Errorf("bindings = %d, want 1", c.bindCount("default", "p"))
	}
}

// A gang plugin holds every member at Permit until all have arrived. Held
// pods do not take binding slots, so a gang larger than the in-flight
// binding bound is still scheduled.
func TestGangLargerThanTheBindingBoundIsScheduled(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "8", "16Gi", 110, nil))
	g := newGate()
	const members = 3
	var s *Scheduler
	g.setPermit(func(pod *v1.Pod) (*fw.Status, time.Duration) {
		waiting := 0
		s.defaultProfile().IterateOverWaitingPods(func(fw.WaitingPod) { waiting++ })
		if waiting+1 < members {
			return fw.NewStatus(fw.Wait), time.Hour
		}
		// The last member arrives: let the others through.
		s.defaultProfile().IterateOverWaitingPods(func(wp fw.WaitingPod) { wp.Allow(gateName) })
		return nil, 0
	})
	s = startGatedSchedulerWith(t, c, g, Config{MaxInFlightBindings: 1})
	for i := 0; i < members; i++ {
		createPod(t, c, makePod("default", fmt.Sprintf("member-%d", i), "1", "1Gi"))
	}
	waitFor(t, "every member bound", func() bool {
		for i := 0; i < members; i++ {
			if getPod(t, c, "default", fmt.Sprintf("member-%d", i)).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
}
