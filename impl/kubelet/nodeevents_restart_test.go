package kubelet

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// Upstream's kubelet builds its initial Node through the node status
// setters at every registration attempt, before it asks the API server to
// create it, so the pressure events are recorded each time it registers:
// by a kubelet restarted on a node that already exists (kubectl describe
// node shows them again after each start), and by an attempt that fails.
// Ready, new on the initial node, has none.
func TestNodeStatusEventsAtEveryRegistration(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	h := newHarness(t, func(c *Config) { c.Recorder = rec })
	pressure := []string{nodeStatusEvent("NodeHasSufficientMemory"), nodeStatusEvent("NodeHasNoDiskPressure"), nodeStatusEvent("NodeHasSufficientPID")}

	fail := true
	h.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	if err := h.k.registerNode(h.ctx); err == nil {
		t.Fatal("registration succeeded against a failing server")
	}
	sameEvents(t, "failed attempt", drain(rec), pressure...)
	fail = false
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "registration", drain(rec), pressure...)

	// A new kubelet process on the node, which now exists.
	h.k = h.newKubelet(func(c *Config) { c.Recorder = rec })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "restart on the existing node", drain(rec), pressure...)
	if n, err := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{}); err != nil || readyStatus(n) != v1.ConditionTrue {
		t.Fatalf("node after restart: %v", err)
	}
}
