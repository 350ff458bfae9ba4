package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
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
