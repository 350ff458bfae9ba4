package kubelet

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

func nodeStatusEvent(reason string) string {
	return fmt.Sprintf("Normal %s Node node-7 status is now: %s", reason, reason)
}

func sameEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: events\n%q\nwant\n%q", what, got, want)
	}
}

// The kubelet's node events as upstream's node status setters record
// them ("Node <name> status is now: <reason>", kubectl describe node
// lists them): each pressure condition when registering the node and
// whenever its status changes; Ready only on a change (so not at
// registration); NodeNotSchedulable/NodeSchedulable when the node is
// cordoned or uncordoned.
func TestNodeStatusEvents(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	h := newHarness(t, func(c *Config) { c.Recorder = rec })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "registration", drain(rec),
		nodeStatusEvent("NodeHasSufficientMemory"), nodeStatusEvent("NodeHasNoDiskPressure"), nodeStatusEvent("NodeHasSufficientPID"))

	step := func() {
		t.Helper()
		h.step(DefaultNodeStatusUpdateFrequency)
		if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	step()
	sameEvents(t, "unchanged status", drain(rec))

	nodes := h.client.CoreV1().Nodes()
	n, err := nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The node lifecycle controller's write for a node cut off.
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = v1.ConditionUnknown
	}
	if _, err := nodes.UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step()
	sameEvents(t, "back from Unknown", drain(rec),
		nodeStatusEvent("NodeHasSufficientMemory"), nodeStatusEvent("NodeHasNoDiskPressure"), nodeStatusEvent("NodeHasSufficientPID"),
		nodeStatusEvent("NodeReady"))

	h.k.SetPressure(Pressure{Memory: true})
	h.k.evictionTick(h.ctx) // the eviction manager's next look
	step()
	sameEvents(t, "memory pressure", drain(rec), nodeStatusEvent("NodeHasInsufficientMemory"))

	cordon := func(on bool) {
		t.Helper()
		n, err := nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Unschedulable = on
		if _, err := nodes.Update(h.ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	step()
	sameEvents(t, "cordoned", drain(rec), nodeStatusEvent("NodeNotSchedulable"))
	step()
	sameEvents(t, "still cordoned", drain(rec))
	cordon(false)
	step()
	sameEvents(t, "uncordoned", drain(rec), nodeStatusEvent("NodeSchedulable"))
}

// A starting kubelet says so on its node first: Normal Starting "Starting
// kubelet.", as upstream's kubelet at start.
func TestKubeletStartingEvent(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	rec := record.NewFakeRecorder(100)
	client := newFakeClient()
	k, _ := newSimKubelet(t, client, Config{NodeName: "node-7", Clock: testingclock.NewFakeClock(t0), Recorder: rec})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()
	select {
	case e := <-rec.Events:
		if e != "Normal Starting Starting kubelet." {
			t.Errorf("first event %q, want %q", e, "Normal Starting Starting kubelet.")
		}
	case <-time.After(10 * time.Second):
		t.Error("no event")
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	goroutinesEnd(t, baseline)
}

// With two conditions of a type in the node as read, the events follow the
// one the kubelet updates (ownedConditionIndex): the last of a pressure
// type, the first Ready, as upstream's setters compare the condition they
// update. Failed before: the previous status was taken from the first
// namesake and the new one from the last, so a holding PID pressure
// recorded NodeHasSufficientPID and a holding Ready NodeNotReady.
func TestNodeStatusEventsFollowTheUpdatedNamesake(t *testing.T) {
	old := []v1.NodeCondition{
		{Type: v1.NodePIDPressure, Status: v1.ConditionTrue},
		{Type: v1.NodeReady, Status: v1.ConditionTrue},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse},
		{Type: v1.NodeReady, Status: v1.ConditionFalse},
	}
	cfg := Config{NodeName: "n1", NodeIP: "192.168.0.1"}
	st := NodeStatus(&cfg, &v1.NodeStatus{Conditions: old}, Pressure{}, "sim://1", nil, t0)
	sameEvents(t, "holding PID pressure and Ready", nodeStatusEvents(old, st.Conditions), EventNodeHasSufficientMemory, EventNodeHasNoDiskPressure)
	st = NodeStatus(&cfg, &v1.NodeStatus{Conditions: old}, Pressure{PID: true}, "sim://1", nil, t0)
	sameEvents(t, "PID pressure", nodeStatusEvents(old, st.Conditions), EventNodeHasSufficientMemory, EventNodeHasNoDiskPressure, EventNodeHasInsufficientPID)
}
