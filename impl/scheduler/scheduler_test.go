package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func TestPodsAreBoundWithinCapacityAndSpread(t *testing.T) {
	c := newFakeCluster()
	for i := 0; i < 3; i++ {
		createNode(t, c, makeNode(fmt.Sprintf("node-%d", i), "4", "16Gi", 110, nil))
	}
	startScheduler(t, c, testConfig())
	for i := 0; i < 12; i++ {
		createPod(t, c, makePod("default", fmt.Sprintf("web-%d", i), "1", "1Gi"))
	}
	// A 13th pod does not fit anywhere (3 nodes × 4 cpu).
	createPod(t, c, makePod("default", "web-extra", "1", "1Gi"))
	perNode := map[string]int{}
	waitFor(t, "12 pods bound", func() bool {
		pods, _ := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		perNode = map[string]int{}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				perNode[p.Spec.NodeName]++
				bound++
			}
		}
		return bound == 12
	})
	for n, k := range perNode {
		if k != 4 {
			t.Errorf("node %s has %d pods, want 4 (capacity 4 cpu, 1 cpu each): %v", n, k, perNode)
		}
	}
	waitFor(t, "web-extra marked unschedulable", func() bool {
		return scheduledCondition(getPod(t, c, "default", "web-extra")) != nil
	})
	cond := scheduledCondition(getPod(t, c, "default", "web-extra"))
	want := "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	if cond.Status != v1.ConditionFalse || cond.Reason != v1.PodReasonUnschedulable || cond.Message != want {
		t.Errorf("PodScheduled = %s/%s %q, want False/Unschedulable %q", cond.Status, cond.Reason, cond.Message, want)
	}
}

func TestPodsSpreadAcrossNodes(t *testing.T) {
	c := newFakeCluster()
	for i := 0; i < 4; i++ {
		createNode(t, c, makeNode(fmt.Sprintf("node-%d", i), "32", "64Gi", 110, nil))
	}
	startScheduler(t, c, testConfig())
	for i := 0; i < 20; i++ {
		createPod(t, c, makePod("default", fmt.Sprintf("web-%d", i), "100m", "128Mi"))
	}
	perNode := map[string]int{}
	waitFor(t, "20 pods bound", func() bool {
		pods, _ := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		perNode = map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				perNode[p.Spec.NodeName]++
			}
		}
		return sum(perNode) == 20
	})
	if len(perNode) != 4 {
		t.Fatalf("pods landed on %d nodes, want all 4: %v", len(perNode), perNode)
	}
	for n, k := range perNode {
		if k < 4 || k > 6 {
			t.Errorf("node %s got %d of 20 pods; LeastAllocated should spread them evenly: %v", n, k, perNode)
		}
	}
}

func sum(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestUnschedulablePodIsScheduledWhenAFittingNodeAppears(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("small-0", "2", "4Gi", 110, nil))
	createNode(t, c, makeNode("small-1", "2", "4Gi", 110, nil))
	startScheduler(t, c, testConfig())
	createPod(t, c, makePod("default", "big", "8", "1Gi"))

	waitFor(t, "big marked unschedulable", func() bool {
		return scheduledCondition(getPod(t, c, "default", "big")) != nil
	})
	p := getPod(t, c, "default", "big")
	cond := scheduledCondition(p)
	want := "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	if cond.Status != v1.ConditionFalse || cond.Reason != v1.PodReasonUnschedulable || cond.Message != want {
		t.Fatalf("PodScheduled = %s/%s %q, want False/Unschedulable %q", cond.Status, cond.Reason, cond.Message, want)
	}
	if p.Spec.NodeName != "" {
		t.Fatalf("pod bound to %q although nothing fits", p.Spec.NodeName)
	}
	waitFor(t, "FailedScheduling event", func() bool {
		evs, _ := c.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Regarding.Name == "big" && e.Note == want && e.Type == v1.EventTypeWarning {
				return true
			}
		}
		return false
	})

	createNode(t, c, makeNode("large", "16", "32Gi", 110, nil))
	waitFor(t, "big bound to the new node", func() bool { return getPod(t, c, "default", "big").Spec.NodeName == "large" })
	waitFor(t, "Scheduled event", func() bool {
		evs, _ := c.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			if e.Reason == "Scheduled" && e.Note == "Successfully assigned default/big to large" {
				return true
			}
		}
		return false
	})
}

func TestFailedBindingForgetsAndRequeues(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("node-a", "1", "4Gi", 110, nil))
	failures := 0
	c.setFailBind(func(b *v1.Binding) error {
		if failures < 2 {
			failures++
			return apierrors.NewInternalError(errors.New("injected binding failure"))
		}
		return nil
	})
	conf := testConfig()
	s := startScheduler(t, c, conf)
	// The pod takes the node's whole cpu: if the failed assumption were
	// not forgotten, the retry could not fit.
	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p bound after two failed bindings", func() bool { return getPod(t, c, "default", "p").Spec.NodeName == "node-a" })
	if got := c.bindCount("default", "p"); got != 1 {
		t.Errorf("successful bindings = %d, want 1", got)
	}
	if failures != 2 {
		t.Errorf("failed bindings = %d, want 2", failures)
	}
	waitFor(t, "cache to confirm the pod", func() bool {
		return s.Cache().PodCount() == 1 && !s.Cache().IsAssumedPod(getPod(t, c, "default", "p"))
	})
}

func TestPreemptionEvictsLowerPriorityPods(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("node-a", "4", "16Gi", 110, nil))
	createNode(t, c, makeNode("node-b", "4", "16Gi", 110, nil))
	low, mid := int32(1), int32(50)
	// node-a: four low-priority pods; node-b: four mid-priority pods.
	for i := 0; i < 4; i++ {
		p := makePod("default", fmt.Sprintf("low-%d", i), "1", "1Gi")
		p.Spec.Priority, p.Spec.NodeName = &low, "node-a"
		createPod(t, c, p)
		q := makePod("default", fmt.Sprintf("mid-%d", i), "1", "1Gi")
		q.Spec.Priority, q.Spec.NodeName = &mid, "node-b"
		createPod(t, c, q)
	}
	startScheduler(t, c, testConfig())
	high := int32(100)
	hp := makePod("default", "high", "2", "1Gi")
	hp.Spec.Priority = &high
	createPod(t, c, hp)

	waitFor(t, "high nominated to node-a", func() bool {
		return c.nominatedTo("default", "high") == "node-a"
	})
	pods, _ := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	lowLeft, midLeft := 0, 0
	for _, p := range pods.Items {
		switch *p.Spec.Priority {
		case low:
			lowLeft++
		case mid:
			midLeft++
		}
	}
	if lowLeft != 2 || midLeft != 4 {
		t.Errorf("after preemption: %d low and %d mid pods left, want 2 low (fewest victims) and 4 mid", lowLeft, midLeft)
	}
	waitFor(t, "high bound to node-a", func() bool { return getPod(t, c, "default", "high").Spec.NodeName == "node-a" })
	waitFor(t, "Preempted events", func() bool {
		evs, _ := c.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		n := 0
		for _, e := range evs.Items {
			if e.Reason == "Preempted" && strings.HasPrefix(e.Regarding.Name, "low-") && e.Related != nil && e.Related.Name == "high" {
				n++
			}
		}
		return n == 2
	})
}

func TestPodOfAnotherSchedulerIsIgnored(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("node-a", "4", "16Gi", 110, nil))
	s := startScheduler(t, c, testConfig())
	other := makePod("default", "other", "1", "1Gi")
	other.Spec.SchedulerName = "my-scheduler"
	createPod(t, c, other)
	mine := makePod("default", "mine", "1", "1Gi")
	createPod(t, c, mine)
	waitFor(t, "mine bound", func() bool { return getPod(t, c, "default", "mine").Spec.NodeName != "" })
	if s.Queue().Where(other) != "" || getPod(t, c, "default", "other").Spec.NodeName != "" {
		t.Errorf("pod for my-scheduler was picked up by default-scheduler")
	}
}

func TestRemovingATaintSchedulesTheWaitingPod(t *testing.T) {
	c := newFakeCluster()
	n := makeNode("n1", "4", "8Gi", 110, nil)
	n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}
	createNode(t, c, n)
	startScheduler(t, c, testConfig())
	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p unschedulable", func() bool {
		cond := scheduledCondition(getPod(t, c, "default", "p"))
		return cond != nil && cond.Message == "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	})
	n, _ = c.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	n.Spec.Taints = nil
	if _, err := c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p bound after the taint is removed", func() bool { return getPod(t, c, "default", "p").Spec.NodeName == "n1" })
}

func TestDeletingABoundPodFreesRoomForAWaitingPod(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "2", "8Gi", 110, nil))
	hog := makePod("default", "hog", "2", "1Gi")
	hog.Spec.NodeName = "n1"
	createPod(t, c, hog)
	startScheduler(t, c, testConfig())
	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p unschedulable", func() bool { return scheduledCondition(getPod(t, c, "default", "p")) != nil })
	if err := c.CoreV1().Pods("default").Delete(context.Background(), "hog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p bound once hog is gone", func() bool { return getPod(t, c, "default", "p").Spec.NodeName == "n1" })
}

func TestGatedPodIsScheduledOnlyAfterItsGatesAreRemoved(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "4", "8Gi", 110, nil))
	s := startScheduler(t, c, testConfig())
	gated := makePod("default", "gated", "1", "1Gi")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	createPod(t, c, gated)
	waitFor(t, "gated pod queued as gated", func() bool { return s.Queue().Where(gated) == "gated" })
	createPod(t, c, makePod("default", "free", "1", "1Gi"))
	waitFor(t, "free bound", func() bool { return getPod(t, c, "default", "free").Spec.NodeName != "" })
	if getPod(t, c, "default", "gated").Spec.NodeName != "" {
		t.Fatal("gated pod was bound")
	}
	p := getPod(t, c, "default", "gated")
	p.Spec.SchedulingGates = nil
	if _, err := c.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gated bound after its gate is removed", func() bool { return getPod(t, c, "default", "gated").Spec.NodeName == "n1" })
}

// TestPreemptionMarksVictimsAsDisruptionTargets checks that each victim is
// deleted only after it carries DisruptionTarget=True with reason
// PreemptionByScheduler, as kube-scheduler does.
func TestPreemptionMarksVictimsAsDisruptionTargets(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("node-a", "2", "16Gi", 110, nil))
	low := int32(1)
	for i := 0; i < 2; i++ {
		p := makePod("default", fmt.Sprintf("low-%d", i), "1", "1Gi")
		p.Spec.Priority, p.Spec.NodeName = &low, "node-a"
		createPod(t, c, p)
	}
	var mu sync.Mutex
	atDeletion := map[string]*v1.PodCondition{}
	c.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, kruntime.Object, error) {
		name := action.(clienttesting.DeleteAction).GetName()
		obj, err := c.Tracker().Get(podsGVR, "default", name)
		mu.Lock()
		defer mu.Unlock()
		atDeletion[name] = nil
		if err == nil {
			for _, cond := range obj.(*v1.Pod).Status.Conditions {
				if cond.Type == v1.DisruptionTarget {
					atDeletion[name] = cond.DeepCopy()
				}
			}
		}
		return false, nil, nil
	})
	startScheduler(t, c, testConfig())
	high := int32(100)
	hp := makePod("default", "high", "2", "1Gi")
	hp.Spec.Priority = &high
	createPod(t, c, hp)
	waitFor(t, "high bound to node-a", func() bool { return getPod(t, c, "default", "high").Spec.NodeName == "node-a" })

	mu.Lock()
	defer mu.Unlock()
	if len(atDeletion) != 2 {
		t.Fatalf("deleted %d pods, want both low-priority pods", len(atDeletion))
	}
	for name, cond := range atDeletion {
		if cond == nil {
			t.Errorf("%s was deleted without a DisruptionTarget condition", name)
			continue
		}
		if cond.Status != v1.ConditionTrue || cond.Reason != v1.PodReasonPreemptionByScheduler ||
			cond.Message != "default-scheduler: preempting to accommodate a higher priority pod" || cond.LastTransitionTime.IsZero() {
			t.Errorf("%s's DisruptionTarget condition: %+v", name, cond)
		}
	}
}
