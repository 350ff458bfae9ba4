package podgc

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(name, node string, phase corev1.PodPhase, created time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(created))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func terminating(p *corev1.Pod) *corev1.Pod {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
	return p
}

func node(name string, ready bool, taintKeys ...string) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	for _, k := range taintKeys {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoExecute})
	}
	return n
}

func names(actions []Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, fmt.Sprintf("%s:%s", a.Pod.Name, a.Reason))
	}
	return out
}

func TestTerminatedPodsOverThresholdGoOldestFirst(t *testing.T) {
	evicted := pod("evicted-young", "n1", corev1.PodFailed, 10*time.Minute)
	evicted.Status.Reason = "Evicted"
	pods := []*corev1.Pod{
		pod("done-3", "n1", corev1.PodSucceeded, 3*time.Minute),
		pod("failed-1", "n1", corev1.PodFailed, 1*time.Minute),
		pod("running-0", "n1", corev1.PodRunning, 0),
		pod("pending-0", "", corev1.PodPending, 0),
		pod("done-2b", "n1", corev1.PodSucceeded, 2*time.Minute),
		pod("done-2a", "n1", corev1.PodSucceeded, 2*time.Minute),
		evicted,
	}
	nodes := []*corev1.Node{node("n1", true)}
	for _, tc := range []struct {
		threshold int
		want      []string
	}{
		{threshold: 0, want: nil},  // off
		{threshold: 5, want: nil},  // 5 terminated, not over
		{threshold: 10, want: nil}, // under
		{threshold: 4, want: []string{"evicted-young:terminated"}},
		{threshold: 2, want: []string{"evicted-young:terminated", "failed-1:terminated", "done-2a:terminated"}},
		{threshold: 1, want: []string{"evicted-young:terminated", "failed-1:terminated", "done-2a:terminated", "done-2b:terminated"}},
	} {
		t.Run(fmt.Sprint(tc.threshold), func(t *testing.T) {
			p := Decide(Observed{Pods: pods, Nodes: nodes, Now: t0}, Config{TerminatedPodThreshold: tc.threshold})
			if got := names(p.Deletes); !slices.Equal(got, tc.want) {
				t.Fatalf("deletes %v, want %v", got, tc.want)
			}
			for _, a := range p.Deletes {
				if a.MarkFailed() || a.Condition != nil {
					t.Fatalf("terminal pod %s would be re-marked: %+v", a.Pod.Name, a)
				}
			}
		})
	}
}

func TestTerminatingPodsOnOutOfServiceNodes(t *testing.T) {
	pods := []*corev1.Pod{
		terminating(pod("on-oos", "oos", corev1.PodRunning, 2)),
		terminating(pod("on-oos-ready", "oos-ready", corev1.PodRunning, 0)),
		terminating(pod("on-notready", "notready", corev1.PodRunning, 0)),
		pod("alive-on-oos", "oos", corev1.PodRunning, 1), // not terminating
		terminating(pod("on-oos-older", "oos", corev1.PodRunning, 1)),
	}
	nodes := []*corev1.Node{
		node("oos", false, corev1.TaintNodeOutOfService),
		node("oos-ready", true, corev1.TaintNodeOutOfService),
		node("notready", false, corev1.TaintNodeNotReady),
	}
	p := Decide(Observed{Pods: pods, Nodes: nodes, Now: t0}, Config{TerminatedPodThreshold: 100})
	want := []string{"on-oos-older:out-of-service", "on-oos:out-of-service"}
	if got := names(p.Deletes); !slices.Equal(got, want) {
		t.Fatalf("deletes %v, want %v", got, want)
	}
	for _, a := range p.Deletes {
		if !a.MarkFailed() || a.Condition != nil {
			t.Fatalf("running pod %s: want marked Failed without condition, got %+v", a.Pod.Name, a)
		}
	}
}

func TestUnscheduledTerminatingPods(t *testing.T) {
	pods := []*corev1.Pod{
		terminating(pod("gone-before-bound", "", corev1.PodPending, 0)),
		pod("waiting", "", corev1.PodPending, 0),
		terminating(pod("bound", "n1", corev1.PodRunning, 0)),
	}
	p := Decide(Observed{Pods: pods, Nodes: []*corev1.Node{node("n1", true)}, Now: t0}, Config{})
	want := []string{"gone-before-bound:unscheduled"}
	if got := names(p.Deletes); !slices.Equal(got, want) {
		t.Fatalf("deletes %v, want %v", got, want)
	}
}

// A pod is collected once per pass even when several rules apply.
func TestPodCollectedOnce(t *testing.T) {
	pods := []*corev1.Pod{
		terminating(pod("a", "oos", corev1.PodFailed, 0)),
		terminating(pod("b", "oos", corev1.PodFailed, 1)),
	}
	p := Decide(Observed{Pods: pods, Nodes: []*corev1.Node{node("oos", false, corev1.TaintNodeOutOfService)}, Now: t0},
		Config{TerminatedPodThreshold: 1})
	want := []string{"a:terminated", "b:out-of-service"}
	if got := names(p.Deletes); !slices.Equal(got, want) {
		t.Fatalf("deletes %v, want %v", got, want)
	}
	if got := Orphans(pods, map[string]bool{"oos": true}, p.Deletes, t0); len(got) != 0 {
		t.Fatalf("orphans repeat planned deletes: %v", names(got))
	}
}

// LIVE-4: a pod bound to a node the informer does not know is quarantined,
// the node is checked once the quarantine is over, and the pods of a node
// confirmed gone are deleted with the DisruptionTarget condition.
func TestOrphansAfterQuarantine(t *testing.T) {
	pods := []*corev1.Pod{
		pod("orphan", "gone", corev1.PodRunning, 0),
		pod("orphan-done", "gone", corev1.PodSucceeded, 0),
		pod("fine", "n1", corev1.PodRunning, 0),
		pod("unbound", "", corev1.PodPending, 0),
	}
	nodes := []*corev1.Node{node("n1", true)}
	cfg := Config{Quarantine: 40 * time.Second}

	p := Decide(Observed{Pods: pods, Nodes: nodes, Now: t0}, cfg)
	if len(p.Verify) != 0 || len(p.Deletes) != 0 {
		t.Fatalf("first sight: verify %v deletes %v, want nothing", p.Verify, names(p.Deletes))
	}
	if since, ok := p.Quarantined["gone"]; !ok || !since.Equal(t0) || len(p.Quarantined) != 1 {
		t.Fatalf("quarantine %v, want gone since t0", p.Quarantined)
	}
	p = Decide(Observed{Pods: pods, Nodes: nodes, Quarantined: p.Quarantined, Now: t0.Add(39 * time.Second)}, cfg)
	if len(p.Verify) != 0 || !p.Quarantined["gone"].Equal(t0) {
		t.Fatalf("inside quarantine: verify %v quarantine %v", p.Verify, p.Quarantined)
	}
	later := t0.Add(40 * time.Second)
	p = Decide(Observed{Pods: pods, Nodes: nodes, Quarantined: p.Quarantined, Now: later}, cfg)
	if !slices.Equal(p.Verify, []string{"gone"}) {
		t.Fatalf("after quarantine: verify %v, want [gone]", p.Verify)
	}
	orphans := Orphans(pods, map[string]bool{"gone": true}, p.Deletes, later)
	if got, want := names(orphans), []string{"orphan:orphaned", "orphan-done:orphaned"}; !slices.Equal(got, want) {
		t.Fatalf("orphans %v, want %v", got, want)
	}
	for _, a := range orphans {
		c := a.Condition
		if c == nil || c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue ||
			c.Reason != "DeletionByPodGC" || c.Message != "PodGC: node no longer exists" {
			t.Fatalf("orphan %s condition %+v", a.Pod.Name, c)
		}
	}
	if !orphans[0].MarkFailed() || orphans[1].MarkFailed() {
		t.Fatalf("only the running orphan is marked Failed first")
	}

	// The node reappears in the informer: it leaves the quarantine.
	p = Decide(Observed{Pods: pods, Nodes: append(nodes, node("gone", true)), Quarantined: p.Quarantined, Now: later}, cfg)
	if len(p.Quarantined) != 0 || len(p.Verify) != 0 {
		t.Fatalf("node back: quarantine %v verify %v", p.Quarantined, p.Verify)
	}
}
