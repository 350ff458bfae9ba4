package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// The rule of upstream's monitorNodeHealth: NodeNotReady and the marking of
// the node's pods only when the controller itself turns Ready from True
// (observed True, not True after the pass); after a failed marking, the
// marking again (no event) while the node read is not Ready.
func TestDecideNotReady(t *testing.T) {
	cond := func(s corev1.ConditionStatus) *corev1.NodeCondition {
		return &corev1.NodeCondition{Type: corev1.NodeReady, Status: s}
	}
	const (
		T = corev1.ConditionTrue
		F = corev1.ConditionFalse
		U = corev1.ConditionUnknown
	)
	tests := []struct {
		name          string
		observed      corev1.ConditionStatus
		current       *corev1.NodeCondition
		retry         bool
		event, marked bool
	}{
		{"ready stays ready", T, cond(T), false, false, false},
		{"the controller turns True to Unknown", T, cond(U), false, true, true},
		{"the same, with a retry pending", T, cond(U), true, true, true},
		{"the kubelet reports False", F, cond(F), false, false, false},
		{"the controller turns False to Unknown", F, cond(U), false, false, false},
		{"already Unknown", U, cond(U), false, false, false},
		{"retry on a node read False", F, cond(F), true, false, true},
		{"retry on a node read Unknown", U, cond(U), true, false, true},
		{"retry on a node Ready again", T, cond(T), true, false, false},
		{"no Ready condition yet", U, nil, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event, marked := DecideNotReady(tt.observed, tt.current, tt.retry)
			if event != tt.event || marked != tt.marked {
				t.Fatalf("DecideNotReady(%s, %v, retry=%v) = event %v, mark %v; want %v, %v", tt.observed, tt.current, tt.retry, event, marked, tt.event, tt.marked)
			}
		})
	}
}

// DecideNode carries the rule: a node whose kubelet reports Ready=False
// gets no NodeNotReady and no marking, neither while it reports nor when the
// controller later turns it Unknown; a Ready node the controller turns
// Unknown gets both, once; a node that never posted status gets neither
// when it turns Unknown.
func TestDecideNodeNotReadyOnlyFromTrue(t *testing.T) {
	late := t0.Add(41 * time.Second)
	// The kubelet reports False with fresh heartbeats.
	d := DecideNode(readyNode(corev1.ConditionFalse, t0), nil, nil, t0, timing)
	if d.RecordNotReady || d.MarkPodsNotReady {
		t.Fatalf("kubelet-reported False: %+v", d)
	}
	// It goes silent: the controller turns False to Unknown.
	d = DecideNode(readyNode(corev1.ConditionFalse, t0), nil, &d.Health, late, timing)
	if d.Conditions == nil {
		t.Fatal("silent node not turned Unknown")
	}
	if d.RecordNotReady || d.MarkPodsNotReady {
		t.Fatalf("False to Unknown: %+v", d)
	}
	// A Ready node goes silent.
	d = DecideNode(readyNode(corev1.ConditionTrue, t0), nil, nil, t0, timing)
	if d.RecordNotReady || d.MarkPodsNotReady {
		t.Fatalf("healthy node: %+v", d)
	}
	d = DecideNode(readyNode(corev1.ConditionTrue, t0), nil, &d.Health, late, timing)
	if !d.RecordNotReady || !d.MarkPodsNotReady {
		t.Fatalf("True to Unknown: %+v", d)
	}
	// Once written, the next pass reads Unknown: nothing again.
	written := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: d.Conditions}}
	d = DecideNode(written, nil, &d.Health, late.Add(5*time.Second), timing)
	if d.RecordNotReady || d.MarkPodsNotReady {
		t.Fatalf("already Unknown: %+v", d)
	}
	// A failed marking is retried, without the event.
	h := d.Health
	h.RetryMarkPods = true
	d = DecideNode(written, nil, &h, late.Add(10*time.Second), timing)
	if d.RecordNotReady || !d.MarkPodsNotReady {
		t.Fatalf("retry: %+v", d)
	}
	// A node that never posted status turns Unknown after the startup grace.
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)}}
	d = DecideNode(fresh, nil, nil, t0.Add(61*time.Second), timing)
	if d.Conditions == nil || d.RecordNotReady || d.MarkPodsNotReady {
		t.Fatalf("never posted: %+v", d)
	}
}

// notReadyEvents is the NodeNotReady events of rec, pod and node alike.
func notReadyEvents(rec *refRecorder) []string {
	var out []string
	for _, e := range rec.take() {
		if strings.Contains(e, " NodeNotReady ") {
			out = append(out, e)
		}
	}
	return out
}

// A monitor pass marks a node's Ready pods not Ready, with the pods'
// Warning NodeNotReady and the node's NodeNotReady, only on the pass that
// turns the node's Ready from True to Unknown; a node whose kubelet reports
// Ready=False keeps its Ready pods, also when it then goes silent; a failed
// marking is retried on the next pass, without the node event.
func TestMonitorMarksPodsOnlyWhenItTurnsReadyUnknown(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	n1 := readyNode(corev1.ConditionFalse, t0)
	n1.UID = "uid-n1"
	n2 := readyNode(corev1.ConditionTrue, t0)
	n2.Name, n2.UID = "n2", "uid-n2"
	p1 := readyPod(podOn("p1"))
	p2 := readyPod(podOn("p2"))
	p2.Spec.NodeName = "n2"
	client := fake.NewClientset(n1, n2, p1, p2)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &refRecorder{}
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), rec, clk,
		Config{MonitorPeriod: time.Hour, MonitorGrace: 40 * time.Second, StartupGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)
	podReady := func(name string) corev1.ConditionStatus {
		p, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Status.Conditions[0].Status
	}
	// The first pass after the conflict below re-reads the node; let the
	// cache catch up with each write before the next pass.
	cachedReady := func(name string, want corev1.ConditionStatus) {
		waitFor(t, name+" Ready "+string(want)+" in the cache", func() bool {
			n, err := c.nodeLister.Get(name)
			return err == nil && readyCondition(n.Status.Conditions) != nil && readyCondition(n.Status.Conditions).Status == want
		})
	}

	c.MonitorNodes(ctx)
	clk.Step(5 * time.Second)
	c.MonitorNodes(ctx)
	if got := notReadyEvents(rec); len(got) != 0 || podReady("p1") != corev1.ConditionTrue {
		t.Fatalf("kubelet-reported Ready=False: events %q, p1 Ready %s; want none, True", got, podReady("p1"))
	}

	// Both go silent; marking p2 fails once.
	failOnce := true
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" && failOnce {
			failOnce = false
			return true, nil, errors.New("injected pod status update failure")
		}
		return false, nil, nil
	})
	clk.Step(36 * time.Second)
	c.MonitorNodes(ctx)
	cachedReady("n1", corev1.ConditionUnknown)
	cachedReady("n2", corev1.ConditionUnknown)
	want := []string{
		"*v1.Pod Warning NodeNotReady Node is not ready",
		"v1/Node /n2 uid=uid-n2 Normal NodeNotReady Node n2 status is now: NodeNotReady",
	}
	if got := notReadyEvents(rec); fmt.Sprint(sorted(got)) != fmt.Sprint(want) {
		t.Fatalf("pass turning both Unknown: events\n%q\nwant\n%q", got, want)
	}
	if podReady("p1") != corev1.ConditionTrue || podReady("p2") != corev1.ConditionTrue {
		t.Fatalf("p1 Ready %s (its node was False), p2 Ready %s (its marking failed); want True, True", podReady("p1"), podReady("p2"))
	}
	clk.Step(5 * time.Second)
	c.MonitorNodes(ctx)
	if got, want := notReadyEvents(rec), []string{"*v1.Pod Warning NodeNotReady Node is not ready"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("retry pass: events %q, want %q", got, want)
	}
	if podReady("p1") != corev1.ConditionTrue || podReady("p2") != corev1.ConditionFalse {
		t.Fatalf("after the retry p1 Ready %s, p2 Ready %s; want True, False", podReady("p1"), podReady("p2"))
	}
	clk.Step(5 * time.Second)
	c.MonitorNodes(ctx)
	if got := notReadyEvents(rec); len(got) != 0 {
		t.Fatalf("pass after the retry: events %q, want none", got)
	}
}
