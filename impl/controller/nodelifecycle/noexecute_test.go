package nodelifecycle

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// taintNames lists taints as sorted "key:Effect" strings.
func taintNames(ts []corev1.Taint) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	sort.Strings(out)
	return out
}

// The not-ready/unreachable NoExecute taint follows the Ready status a pass
// read, before it wrote anything (upstream's processTaintBaseEviction is
// given the observed Ready condition); the NoSchedule taints follow the
// conditions the pass leaves. So the pass on which the controller turns
// Ready from True to Unknown adds the unreachable NoSchedule taint only,
// and the next pass queues the node for its NoExecute taint; a not-ready
// NoExecute taint is swapped for the unreachable one a pass after the
// controller turns a kubelet-reported False to Unknown; a node that never
// posted status is queued on the pass that turns it Unknown (it was read
// Unknown); a node still without a Ready condition keeps its NoExecute
// taints as they are.
func TestNoExecuteFollowsTheReadyReadByThePass(t *testing.T) {
	ne := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute} }
	ns := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule} }
	late := t0.Add(41 * time.Second)
	silent := func(status corev1.ConditionStatus, taints ...corev1.Taint) (*corev1.Node, *Health) {
		n := readyNode(status, t0)
		n.Spec.Taints = taints
		h := DecideNode(n, nil, nil, t0, timing).Health
		return n, &h
	}
	// written is node after a pass wrote d.
	written := func(node *corev1.Node, d NodeDecision) *corev1.Node {
		n := node.DeepCopy()
		if d.Conditions != nil {
			n.Status.Conditions = d.Conditions
		}
		if taints, _ := GateNoExecute(node.Spec.Taints, d.Taints); taints != nil {
			n.Spec.Taints = taints
		}
		return n
	}
	type pass struct {
		write []string // the taints written now (nil: none)
		queue bool
	}
	check := func(t *testing.T, what string, d NodeDecision, current []corev1.Taint, want pass) {
		t.Helper()
		taints, queue := GateNoExecute(current, d.Taints)
		var got []string
		if taints != nil {
			got = taintNames(taints)
		}
		if queue != want.queue || (got == nil) != (want.write == nil) || len(got) != len(want.write) {
			t.Fatalf("%s: writes %v, queue %v; want %v, %v", what, got, queue, want.write, want.queue)
		}
		for i := range got {
			if got[i] != want.write[i] {
				t.Fatalf("%s: writes %v, want %v", what, got, want.write)
			}
		}
	}

	t.Run("the controller turns True to Unknown", func(t *testing.T) {
		n, h := silent(corev1.ConditionTrue)
		d := DecideNode(n, nil, h, late, timing)
		check(t, "turning pass", d, n.Spec.Taints, pass{write: []string{TaintUnreachable + ":NoSchedule"}})
		n = written(n, d)
		d = DecideNode(n, nil, &d.Health, late.Add(5*time.Second), timing)
		check(t, "next pass", d, n.Spec.Taints, pass{queue: true})
	})
	t.Run("the controller turns a kubelet's False to Unknown", func(t *testing.T) {
		n, h := silent(corev1.ConditionFalse, ne(TaintNotReady), ns(TaintNotReady))
		d := DecideNode(n, nil, h, late, timing)
		check(t, "turning pass", d, n.Spec.Taints, pass{write: []string{TaintNotReady + ":NoExecute", TaintUnreachable + ":NoSchedule"}})
		n = written(n, d)
		d = DecideNode(n, nil, &d.Health, late.Add(5*time.Second), timing)
		check(t, "next pass", d, n.Spec.Taints, pass{write: []string{TaintUnreachable + ":NoExecute", TaintUnreachable + ":NoSchedule"}})
	})
	t.Run("the kubelet reports False", func(t *testing.T) {
		n := readyNode(corev1.ConditionFalse, t0)
		d := DecideNode(n, nil, nil, t0, timing)
		check(t, "first pass", d, nil, pass{write: []string{TaintNotReady + ":NoSchedule"}, queue: true})
	})
	t.Run("the kubelet reports True again", func(t *testing.T) {
		n, h := silent(corev1.ConditionTrue, ne(TaintUnreachable), ns(TaintUnreachable))
		d := DecideNode(n, nil, h, t0.Add(5*time.Second), timing)
		check(t, "first pass", d, n.Spec.Taints, pass{write: []string{}})
	})
	t.Run("a node that never posted status", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)}}
		d := DecideNode(n, nil, nil, t0.Add(61*time.Second), timing)
		check(t, "turning pass", d, nil, pass{write: []string{TaintUnreachable + ":NoSchedule"}, queue: true})
	})
	t.Run("no Ready condition yet", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{ne(TaintUnreachable), ns(TaintUnreachable)}}}
		d := DecideNode(n, nil, nil, t0, timing)
		check(t, "within the startup grace", d, n.Spec.Taints, pass{write: []string{TaintUnreachable + ":NoExecute"}})
	})
}

// A not-Ready node whose NoExecute taint is removed by someone else is
// queued again by the next pass and tainted again when its zone's bucket
// admits it, as upstream's markNodeForTainting, which takes a node without
// the taint it should have out of the zone's queue and adds it back.
func TestRemovedNoExecuteTaintComesBack(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	// n2, in another zone, stays Ready, so evictions do not stop.
	n1 := inZone(readyNode(corev1.ConditionFalse, t0), "a")
	n2, l2 := inZone(readyNode(corev1.ConditionTrue, t0), "b"), lease(t0)
	n2.Name, l2.Name = "n2", "n2"
	client := fake.NewClientset(n1, lease(t0), n2, l2)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clk, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)
	node := func() *corev1.Node {
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cached := func(what string, taints []corev1.Taint) {
		waitFor(t, what, func() bool {
			n, err := c.nodeLister.Get("n1")
			return err == nil && taintsEqual(n.Spec.Taints, taints)
		})
	}
	c.MonitorNodes(ctx)
	c.TaintingPass(ctx)
	n := node()
	if !taintSet(n.Spec.Taints)[TaintNotReady+":NoExecute"] {
		t.Fatalf("n1 not tainted NoExecute: %v", n.Spec.Taints)
	}
	cached("n1's taints in the cache", n.Spec.Taints)
	n.Spec.Taints = []corev1.Taint{{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule}}
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cached("the removal in the cache", n.Spec.Taints)
	clk.Step(10 * time.Second) // a token again at 0.1 nodes/s
	c.MonitorNodes(ctx)
	c.TaintingPass(ctx)
	if ts := taintSet(node().Spec.Taints); !ts[TaintNotReady+":NoExecute"] {
		t.Fatalf("removed NoExecute taint not added again: %v", ts)
	}
}
