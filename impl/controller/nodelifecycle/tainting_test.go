package nodelifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// The tainting pass's decision for a node it took from the queue follows
// upstream's doNoExecuteTaintingPass: a node without a Ready condition, or
// one the read failed for other than not found, is tried again, not
// dropped.
func TestDecideTainting(t *testing.T) {
	noReady := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}}}
	odd := readyNode(corev1.ConditionTrue, t0)
	odd.Status.Conditions[0].Status = "Maybe"
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n1")
	for _, tc := range []struct {
		name string
		node *corev1.Node
		err  error
		want TaintingStep
	}{
		{"Ready False", readyNode(corev1.ConditionFalse, t0), nil, TaintingApply},
		{"Ready Unknown", readyNode(corev1.ConditionUnknown, t0), nil, TaintingApply},
		{"Ready True", readyNode(corev1.ConditionTrue, t0), nil, TaintingDrop},
		{"Ready neither True, False nor Unknown", odd, nil, TaintingDrop},
		{"no Ready condition", noReady, nil, TaintingRetry},
		{"no conditions at all", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, nil, TaintingRetry},
		{"not found", nil, notFound, TaintingDrop},
		{"read failed", nil, errors.New("connection refused"), TaintingRetry},
		{"read failed, server timeout", nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "nodes"}, "get", 1), TaintingRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecideTainting(tc.node, tc.err); got != tc.want {
				t.Errorf("DecideTainting = %d, want %d", got, tc.want)
			}
		})
	}
}

// A queued node without a Ready condition stays queued through a tainting
// pass (untainted), and one that is gone leaves the queue.
func TestTaintingPassKeepsNodeWithoutReady(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	client := fake.NewClientset(n1)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), record.NewFakeRecorder(10), clk, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.mu.Lock()
	c.buckets["a"] = NewTokenBucket(1000, t0) // a burst of one: one node per pass
	c.mu.Unlock()
	c.enqueueTainting("a", "n1")
	c.TaintingPass(ctx)
	c.mu.Lock()
	pending := slices.Clone(c.pending["a"])
	c.mu.Unlock()
	if !slices.Equal(pending, []string{"n1"}) {
		t.Fatalf("queue after the pass: %v, want n1 back for a retry", pending)
	}
	if n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil || len(n.Spec.Taints) != 0 {
		t.Fatalf("n1: taints %v, err %v; want untainted", n.Spec.Taints, err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(EvictionPeriod)
	c.TaintingPass(ctx)
	c.mu.Lock()
	pending = slices.Clone(c.pending["a"])
	_, queued := c.queued["n1"]
	c.mu.Unlock()
	if len(pending) != 0 || queued {
		t.Fatalf("queue after n1 was deleted: %v (in queued set: %v), want it gone", pending, queued)
	}
}
