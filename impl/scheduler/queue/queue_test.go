package queue

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/queuesort"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time       { return c.t }
func (c *fakeClock) Step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock                { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func less() fw.LessFunc                   { return (&queuesort.PrioritySort{}).Less }
func pop(t *testing.T, q *PriorityQueue) *fw.QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return p
}

func TestActiveQueueOrdersByPriorityThenArrival(t *testing.T) {
	clock := newClock()
	q := New(less(), WithClock(clock))
	q.Add(tu.Pod("low-early").Priority(1).Obj())
	clock.Step(time.Second)
	q.Add(tu.Pod("high").Priority(10).Obj())
	clock.Step(time.Second)
	q.Add(tu.Pod("low-late").Priority(1).Obj())
	for _, want := range []string{"high", "low-early", "low-late"} {
		if got := pop(t, q).Pod.Name; got != want {
			t.Fatalf("popped %s, want %s", got, want)
		}
	}
}

func TestPopBlocksUntilAddAndStopsOnClose(t *testing.T) {
	q := New(less())
	got := make(chan string)
	go func() {
		p, err := q.Pop(context.Background())
		if err != nil {
			got <- err.Error()
			return
		}
		got <- p.Pod.Name
	}()
	q.Add(tu.Pod("p").Obj())
	if name := <-got; name != "p" {
		t.Fatalf("Pop returned %q", name)
	}
	go func() {
		_, err := q.Pop(context.Background())
		got <- err.Error()
	}()
	q.Close()
	if msg := <-got; msg != ErrClosed.Error() {
		t.Fatalf("Pop after Close: %q", msg)
	}
}

func TestPopReturnsOnContextCancel(t *testing.T) {
	q := New(less())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := q.Pop(ctx); done <- err }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Pop = %v, want context.Canceled", err)
	}
}

func TestBackoffDoublesUpToMax(t *testing.T) {
	q := New(less(), WithBackoff(time.Second, 10*time.Second))
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		p := &fw.QueuedPodInfo{Attempts: i + 1}
		if got := q.backoffDuration(p); got != w {
			t.Errorf("attempt %d: backoff %v, want %v", i+1, got, w)
		}
	}
}

func TestUnschedulablePodMovesOnlyOnRelevantEvent(t *testing.T) {
	clock := newClock()
	q := New(less(), WithClock(clock), WithClusterEventInterest(map[string][]fw.ClusterEvent{
		"NodeResourcesFit": {{Resource: fw.Node, ActionType: fw.Add | fw.UpdateNodeAllocatable}, {Resource: fw.AssignedPod, ActionType: fw.Delete}},
	}))
	q.Add(tu.Pod("p").Obj())
	p := pop(t, q)
	cycle := q.SchedulingCycle()
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(p, cycle)
	if w := q.Where(p.Pod); w != "unschedulable" {
		t.Fatalf("pod in %q, want unschedulable", w)
	}
	q.MoveAllToActiveOrBackoffQueue(fw.ClusterEvent{Resource: fw.Node, ActionType: fw.UpdateNodeLabel})
	if w := q.Where(p.Pod); w != "unschedulable" {
		t.Fatalf("a label change moved the pod to %q; NodeResourcesFit does not care", w)
	}
	// Still backing off (1 s): a relevant event moves it to backoff.
	q.MoveAllToActiveOrBackoffQueue(fw.EventNodeAdd)
	if w := q.Where(p.Pod); w != "backoff" {
		t.Fatalf("after NodeAdd during backoff, pod in %q, want backoff", w)
	}
	clock.Step(2 * time.Second)
	q.FlushBackoffQCompleted()
	if w := q.Where(p.Pod); w != "active" {
		t.Fatalf("after backoff expired, pod in %q, want active", w)
	}
}

func TestMoveRequestDuringCycleSendsPodToBackoff(t *testing.T) {
	q := New(less(), WithClock(newClock()))
	q.Add(tu.Pod("p").Obj())
	p := pop(t, q)
	cycle := q.SchedulingCycle()
	// A node appears while p is being scheduled.
	q.MoveAllToActiveOrBackoffQueue(fw.EventNodeAdd)
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(p, cycle)
	if w := q.Where(p.Pod); w != "backoff" {
		t.Fatalf("pod in %q, want backoff: the event during its cycle may have helped", w)
	}
}

func TestErrorsGoToBackoff(t *testing.T) {
	q := New(less(), WithClock(newClock()))
	q.Add(tu.Pod("p").Obj())
	p := pop(t, q)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
	if w := q.Where(p.Pod); w != "backoff" {
		t.Fatalf("pod that failed with an error is in %q, want backoff", w)
	}
}

func TestLeftoverUnschedulablePodsAreRetried(t *testing.T) {
	clock := newClock()
	q := New(less(), WithClock(clock))
	q.Add(tu.Pod("p").Obj())
	p := pop(t, q)
	p.UnschedulablePlugins = sets.New("X")
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
	clock.Step(DefaultUnschedulableMaxDuration - time.Second)
	q.FlushUnschedulablePodsLeftover()
	if w := q.Where(p.Pod); w != "unschedulable" {
		t.Fatalf("moved too early to %q", w)
	}
	clock.Step(2 * time.Second)
	q.FlushUnschedulablePodsLeftover()
	if w := q.Where(p.Pod); w != "active" {
		t.Fatalf("after the timeout pod is in %q, want active", w)
	}
}

func TestUpdateOfUnschedulablePodWithNewTolerationRetriesIt(t *testing.T) {
	clock := newClock()
	q := New(less(), WithClock(clock))
	old := tu.Pod("p").Obj()
	q.Add(old)
	p := pop(t, q)
	p.UnschedulablePlugins = sets.New("TaintToleration")
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
	clock.Step(time.Minute)
	// A status-only update keeps it parked.
	statusOnly := old.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(old, statusOnly)
	if w := q.Where(old); w != "unschedulable" {
		t.Fatalf("status update moved the pod to %q", w)
	}
	tolerating := statusOnly.DeepCopy()
	tolerating.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	q.Update(statusOnly, tolerating)
	if w := q.Where(old); w != "active" {
		t.Fatalf("pod with a new toleration is in %q, want active", w)
	}
	if got := pop(t, q).Pod; len(got.Spec.Tolerations) != 1 {
		t.Fatal("popped the old version")
	}
}

func TestDeleteRemovesFromEverySubQueue(t *testing.T) {
	q := New(less(), WithClock(newClock()))
	a, b := tu.Pod("a").Obj(), tu.Pod("b").Obj()
	q.Add(a)
	q.Add(b)
	pb := pop(t, q) // a or b, by arrival: a
	pb.UnschedulablePlugins = sets.New("X")
	q.AddUnschedulableIfNotPresent(pb, q.SchedulingCycle())
	q.Delete(a)
	q.Delete(b)
	if act, bo, un, g := q.Lengths(); act+bo+un+g != 0 {
		t.Fatalf("lengths after delete: %d %d %d", act, bo, un)
	}
}

func TestNominatedPods(t *testing.T) {
	q := New(less())
	p := tu.Pod("p").Obj()
	q.AddNominatedPod(fw.NewPodInfo(p), "n1")
	if got := q.NominatedPodsForNode("n1"); len(got) != 1 || got[0].Pod.Name != "p" {
		t.Fatalf("nominated for n1: %v", got)
	}
	q.AddNominatedPod(fw.NewPodInfo(p), "n2")
	if len(q.NominatedPodsForNode("n1")) != 0 || len(q.NominatedPodsForNode("n2")) != 1 {
		t.Fatal("re-nomination did not move the pod")
	}
	q.DeleteNominatedPodIfExists(p)
	if len(q.NominatedPodsForNode("n2")) != 0 {
		t.Fatal("nomination not deleted")
	}
}

func TestGatedPodWaitsForItsGatesToBeRemoved(t *testing.T) {
	q := New(less(), WithClock(newClock()))
	gated := tu.Pod("g").Obj()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}}
	q.Add(gated)
	if w := q.Where(gated); w != "gated" {
		t.Fatalf("gated pod in %q", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if p, err := q.Pop(ctx); err == nil {
		t.Fatalf("popped gated pod %s", p.Pod.Name)
	}
	open := gated.DeepCopy()
	open.Spec.SchedulingGates = nil
	q.Update(gated, open)
	if got := pop(t, q).Pod.Name; got != "g" {
		t.Fatalf("popped %s", got)
	}
}
