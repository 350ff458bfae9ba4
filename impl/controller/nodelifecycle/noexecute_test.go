package nodelifecycle

import (
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
