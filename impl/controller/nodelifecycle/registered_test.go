package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// refRecorder records each event with the reference it is about.
type refRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *refRecorder) add(obj runtime.Object, eventType, reason, msg string) {
	var ref string
	switch o := obj.(type) {
	case *corev1.ObjectReference:
		ref = fmt.Sprintf("%s/%s %s/%s uid=%s", o.APIVersion, o.Kind, o.Namespace, o.Name, o.UID)
	case *corev1.Node:
		ref = fmt.Sprintf("v1/Node /%s uid=%s", o.Name, o.UID)
	default:
		ref = fmt.Sprintf("%T", obj)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ref+" "+eventType+" "+reason+" "+msg)
}

func (r *refRecorder) Event(obj runtime.Object, eventType, reason, msg string) {
	r.add(obj, eventType, reason, msg)
}

func (r *refRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.add(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *refRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	r.add(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func (r *refRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// The controller announces each node it starts watching over with a
// RegisteredNode event on the node ("Node n1 event: Registered Node n1 in
// Controller", by node UID), once per node while it runs, and a deleted
// node with RemovingNode, as kube-controller-manager's node lifecycle
// controller does (kubectl describe node lists them).
func TestRegisteredAndRemovingNodeEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	n1 := readyNode(corev1.ConditionTrue, t0)
	n1.UID = "uid-n1"
	n2 := readyNode(corev1.ConditionTrue, t0)
	n2.Name, n2.UID = "n2", "uid-n2"
	l2 := lease(t0)
	l2.Name = "n2"
	client := fake.NewClientset(n1, lease(t0), n2, l2)
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

	c.MonitorNodes(ctx)
	want := []string{
		"v1/Node /n1 uid=uid-n1 Normal RegisteredNode Node n1 event: Registered Node n1 in Controller",
		"v1/Node /n2 uid=uid-n2 Normal RegisteredNode Node n2 event: Registered Node n2 in Controller",
	}
	if got := rec.take(); fmt.Sprint(sorted(got)) != fmt.Sprint(want) {
		t.Fatalf("first pass events:\n%q\nwant\n%q", got, want)
	}
	c.MonitorNodes(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("second pass events %q, want none", got)
	}

	if err := client.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 gone from the cache", func() bool {
		_, err := c.nodeLister.Get("n2")
		return err != nil
	})
	c.MonitorNodes(ctx)
	want = []string{"v1/Node /n2 uid=uid-n2 Normal RemovingNode Node n2 event: Removing Node n2 from Controller"}
	if got := rec.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events after n2's deletion:\n%q\nwant\n%q", got, want)
	}
}

// A pod the controller marks not Ready because its node is not gets
// upstream's Warning NodeNotReady "Node is not ready"; a pod already gone
// gets none.
func TestMarkNotReadyEvent(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	pod := readyPod(podOn("p"))
	client := fake.NewClientset(pod)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &refRecorder{}
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), rec, clk, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.markNotReady(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.take(), []string{"*v1.Pod Warning NodeNotReady Node is not ready"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", got, want)
	}
	gone := readyPod(podOn("gone"))
	if err := c.markNotReady(ctx, gone); err != nil {
		t.Fatalf("marking a pod already gone: %v", err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("events for a deleted pod: %q", got)
	}
}
