package nodelifecycle

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"
	clocktesting "k8s.io/utils/clock/testing"
)

// involvedRecorder keeps the involvedObject client-go's recorder would
// write for each event (reference.GetReference of what it is given).
type involvedRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *involvedRecorder) add(obj runtime.Object, eventType, reason, msg string) {
	ref, err := reference.GetReference(scheme.Scheme, obj)
	line := fmt.Sprintf("error %v", err)
	if err == nil {
		line = fmt.Sprintf("%s/%s ns=%q name=%s uid=%s rv=%q", ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, ref.UID, ref.ResourceVersion)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, line+" "+eventType+" "+reason+" "+msg)
}

func (r *involvedRecorder) Event(obj runtime.Object, eventType, reason, msg string) {
	r.add(obj, eventType, reason, msg)
}

func (r *involvedRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.add(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *involvedRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	r.add(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// The node event the controller records when it turns a node's Ready
// Unknown refers to the node as upstream's RecordNodeStatusChange does:
// v1 Node, name and UID, no resourceVersion.
func TestNodeNotReadyEventReference(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	n1 := readyNode(corev1.ConditionTrue, t0)
	n1.UID, n1.ResourceVersion = "uid-n1", "7"
	client := fake.NewClientset(n1, lease(t0))
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &involvedRecorder{}
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), rec, clk,
		Config{MonitorPeriod: time.Hour, MonitorGrace: 40 * time.Second, StartupGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)

	c.MonitorNodes(ctx)
	clk.Step(41 * time.Second)
	c.MonitorNodes(ctx)
	want := `v1/Node ns="" name=n1 uid=uid-n1 rv="" Normal NodeNotReady Node n1 status is now: NodeNotReady`
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.events {
		if e == want {
			return
		}
	}
	t.Errorf("events\n%q\nwant among them\n%q", rec.events, want)
}
