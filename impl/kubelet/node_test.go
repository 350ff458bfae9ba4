package kubelet

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func readyStatus(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// A node the node lifecycle controller marked Ready=Unknown while its
// kubelet was cut off is corrected at the kubelet's next status update,
// not only after the report frequency: the kubelet compares against the
// API's Node, not its own last write.
func TestNodeStatusCorrectsExternalUnknown(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	nodes := h.client.CoreV1().Nodes()
	n, err := nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil || readyStatus(n) != v1.ConditionTrue {
		t.Fatalf("registered node: Ready=%v, %v", readyStatus(n), err)
	}
	// The node lifecycle controller's write.
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = v1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
	}
	if _, err := nodes.UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(DefaultNodeStatusUpdateFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	n, _ = nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if readyStatus(n) != v1.ConditionTrue {
		t.Fatalf("after the kubelet's status update Ready=%s, want True", readyStatus(n))
	}
	for _, c := range n.Status.Conditions {
		if c.LastTransitionTime.Time != h.clock.Now() {
			t.Errorf("%s: transition time %v, want now (it changed from Unknown)", c.Type, c.LastTransitionTime)
		}
	}
	// Unchanged and not due: no write.
	writes := 0
	h.client.PrependReactor("update", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		writes++
		return false, nil, nil
	})
	h.step(DefaultNodeStatusUpdateFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Errorf("unchanged status was written again (%d writes)", writes)
	}
}

// A node status differing only in heartbeat times has not changed; a
// condition, the capacity's value or the images have; a quantity written
// another way has not.
func TestNodeStatusChanged(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	old := v1.NodeStatus{
		Capacity:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")},
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: t1, LastTransitionTime: t1}},
		Images:     []v1.ContainerImage{{Names: []string{"nginx:1.27"}, SizeBytes: 1}},
	}
	before := *old.DeepCopy()
	for _, c := range []struct {
		name    string
		change  func(*v1.NodeStatus)
		changed bool
	}{
		{"same", func(*v1.NodeStatus) {}, false},
		{"heartbeat", func(s *v1.NodeStatus) { s.Conditions[0].LastHeartbeatTime = metav1.NewTime(t1.Add(10 * time.Second)) }, false},
		{"quantity written another way", func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = resource.MustParse("4000m") }, false},
		{"condition", func(s *v1.NodeStatus) { s.Conditions[0].Status = v1.ConditionFalse }, true},
		{"transition time", func(s *v1.NodeStatus) { s.Conditions[0].LastTransitionTime = metav1.NewTime(t1.Add(time.Second)) }, true},
		{"capacity", func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = resource.MustParse("8") }, true},
		{"images", func(s *v1.NodeStatus) { s.Images = nil }, true},
	} {
		cur := old.DeepCopy()
		c.change(cur)
		if got := nodeStatusChanged(&old, cur); got != c.changed {
			t.Errorf("%s: changed %v, want %v", c.name, got, c.changed)
		}
	}
	if !reflect.DeepEqual(old, before) {
		t.Error("nodeStatusChanged changed its argument")
	}
}
