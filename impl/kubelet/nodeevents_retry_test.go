package kubelet

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// A node status post retried after a failed write records the node status
// events again, against the node it re-read, as upstream's kubelet runs its
// status setters (which record them) on every try: here the node lifecycle
// controller turned the node's conditions Unknown between the kubelet's
// read and its patch, which then failed (a 500), so the retry records the
// pressure events and NodeReady that the first try, reading the node still
// Ready, did not.
func TestNodeStatusEventsOnRetry(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	h := newHarness(t, func(c *Config) { c.Recorder = rec })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	drain(rec)
	failed := false
	h.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || failed {
			return false, nil, nil
		}
		failed = true
		// The controller's write lands first.
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
		obj, err := h.client.Tracker().Get(gvr, "", "node-7")
		if err != nil {
			return true, nil, err
		}
		n := obj.(*v1.Node).DeepCopy()
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].Status = v1.ConditionUnknown
		}
		if err := h.client.Tracker().Update(gvr, n, ""); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	})
	h.step(DefaultNodeStatusUpdateFrequency)
	if err := h.k.updateNodeStatus(h.ctx, true); err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Fatal("no status patch failed")
	}
	sameEvents(t, "retry after the controller's write", drain(rec),
		nodeStatusEvent("NodeHasSufficientMemory"), nodeStatusEvent("NodeHasNoDiskPressure"), nodeStatusEvent("NodeHasSufficientPID"),
		nodeStatusEvent("NodeReady"))
	n, err := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil || readyStatus(n) != v1.ConditionTrue {
		t.Fatalf("node after the retry: %v", err)
	}
}
