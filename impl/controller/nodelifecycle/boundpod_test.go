package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// A pod newly bound to a node (upstream's processPod): nothing while the
// controller has no health record of the node or the record has no Ready
// condition; retried while the node is not in the cache; marked not Ready
// while the recorded Ready is not True.
func TestDecideBoundPod(t *testing.T) {
	health := func(ready corev1.ConditionStatus) *Health { return &Health{Ready: ready} }
	tests := []struct {
		name      string
		health    *Health
		nodeFound bool
		want      BoundPodDecision
	}{
		{"node not yet seen by a monitor pass", nil, true, BoundPodIgnore},
		{"node gone from the cache too", nil, false, BoundPodIgnore},
		{"node seen, no longer in the cache", health(corev1.ConditionFalse), false, BoundPodRetry},
		{"never posted a Ready condition", health(""), true, BoundPodIgnore},
		{"Ready", health(corev1.ConditionTrue), true, BoundPodIgnore},
		{"kubelet reports not Ready", health(corev1.ConditionFalse), true, BoundPodMarkNotReady},
		{"unreachable", health(corev1.ConditionUnknown), true, BoundPodMarkNotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideBoundPod(tt.health, tt.nodeFound); got != tt.want {
				t.Fatalf("DecideBoundPod(%+v, found=%v) = %v, want %v", tt.health, tt.nodeFound, got, tt.want)
			}
		})
	}
}

// The Ready status a pass leaves in the node's health record is the one
// the node has after the pass: the kubelet's, or the controller's Unknown.
func TestDecideNodeRecordsReady(t *testing.T) {
	d := DecideNode(readyNode(corev1.ConditionFalse, t0), nil, nil, t0, timing)
	if d.Health.Ready != corev1.ConditionFalse {
		t.Fatalf("kubelet-reported False recorded as %q", d.Health.Ready)
	}
	d = DecideNode(readyNode(corev1.ConditionTrue, t0), nil, &d.Health, t0.Add(41*time.Second), timing)
	if d.Health.Ready != corev1.ConditionUnknown {
		t.Fatalf("turned Unknown, recorded as %q", d.Health.Ready)
	}
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)}}
	if d = DecideNode(fresh, nil, nil, t0, timing); d.Health.Ready != "" {
		t.Fatalf("node without a Ready condition recorded as %q", d.Health.Ready)
	}
}

// A Ready pod that the controller learns is bound to a node whose Ready it
// last saw not True is marked not Ready at once, with its Warning
// NodeNotReady, whether it arrives bound or is bound later; the monitor
// passes themselves would not mark it (the kubelet reported Ready=False,
// the controller did not turn Ready from True). A Ready pod bound to a
// Ready node, or to a node no pass has seen yet, is left alone, and a
// status update of a bound pod is not a binding.
func TestPodBoundToNotReadyNodeMarkedNotReady(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	sick := readyNode(corev1.ConditionFalse, t0)
	sick.Name, sick.UID = "sick", "uid-sick"
	healthy, l := readyNode(corev1.ConditionTrue, t0), lease(t0)
	healthy.Name, healthy.UID, l.Name = "healthy", "uid-healthy", "healthy"
	client := fake.NewClientset(sick, healthy, l)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &refRecorder{}
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), rec, clk,
		Config{MonitorPeriod: time.Hour, MonitorGrace: 40 * time.Second, StartupGrace: time.Minute,
			Defaults: DefaultTolerations{NotReadySeconds: 3600, UnreachableSeconds: 3600}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 1) }()
	waitFor(t, "Run's first monitor pass", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.health) == 2
	})

	podReady := func(name string) corev1.ConditionStatus {
		p, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return conditionOf(p, corev1.PodReady)
	}
	create := func(p *corev1.Pod) {
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Arrives bound (as after a relist, or a restart of the controller).
	arrives := readyPod(podOn("arrives"))
	arrives.Spec.NodeName = "sick"
	create(arrives)
	waitFor(t, "the pod arriving on sick marked not Ready", func() bool { return podReady("arrives") == corev1.ConditionFalse })
	// Bound later.
	bound := readyPod(podOn("bound"))
	bound.Spec.NodeName = ""
	create(bound)
	onHealthy := readyPod(podOn("on-healthy"))
	onHealthy.Spec.NodeName = "healthy"
	create(onHealthy)
	waitFor(t, "the unbound pod in the cache", func() bool {
		_, err := c.podLister.Pods("ns").Get("bound")
		return err == nil
	})
	bound.Spec.NodeName = "sick"
	if _, err := client.CoreV1().Pods("ns").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod bound to sick marked not Ready", func() bool { return podReady("bound") == corev1.ConditionFalse })

	// A node no pass has seen: its pods wait for the passes.
	unseen := readyNode(corev1.ConditionFalse, t0)
	unseen.Name = "unseen"
	if _, err := client.CoreV1().Nodes().Create(ctx, unseen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new node in the cache", func() bool {
		_, err := c.nodeLister.Get("unseen")
		return err == nil
	})
	onUnseen := readyPod(podOn("on-unseen"))
	onUnseen.Spec.NodeName = "unseen"
	create(onUnseen)
	// A status update of a bound pod is no binding: the pod marked above
	// made Ready again by its kubelet stays Ready.
	p, err := client.CoreV1().Pods("ns").Get(ctx, "arrives", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the kubelet's update and the new pods in the cache", func() bool {
		cached, err := c.podLister.Pods("ns").Get("arrives")
		if err != nil || conditionOf(cached, corev1.PodReady) != corev1.ConditionTrue {
			return false
		}
		_, err = c.podLister.Pods("ns").Get("on-unseen")
		return err == nil
	})
	// One worker takes the keys in order: once a pod queued after them is
	// marked, the queue has been through the pods above.
	last := readyPod(podOn("last"))
	last.Spec.NodeName = "sick"
	create(last)
	waitFor(t, "the last pod marked not Ready", func() bool { return podReady("last") == corev1.ConditionFalse })
	for _, name := range []string{"on-healthy", "on-unseen", "arrives"} {
		if got := podReady(name); got != corev1.ConditionTrue {
			t.Errorf("%s Ready %s, want True", name, got)
		}
	}
	want := []string{"*v1.Pod Warning NodeNotReady Node is not ready", "*v1.Pod Warning NodeNotReady Node is not ready", "*v1.Pod Warning NodeNotReady Node is not ready"}
	// The event follows the pod's write: the last one may still be on
	// its way.
	var got []string
	waitFor(t, "the marked pods' events", func() bool {
		got = append(got, notReadyEvents(rec)...)
		return len(got) >= len(want)
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func conditionOf(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// While a monitor pass's write of a node's new Ready=Unknown is in flight,
// and after it failed, a pod bound to the node is decided by the Ready the
// node still has (True: left alone), as upstream's tryUpdateNodeHealth
// stores the node's health only after its status write; once the write
// succeeded, by Unknown.
func TestBoundPodDecidedByWrittenReady(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	client := fake.NewClientset(readyNode(corev1.ConditionTrue, t0), lease(t0))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clk,
		Config{MonitorPeriod: time.Hour, MonitorGrace: 40 * time.Second, StartupGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)
	c.MonitorNodes(ctx)
	decision := func() BoundPodDecision {
		c.mu.Lock()
		defer c.mu.Unlock()
		return DecideBoundPod(c.health["n1"], true)
	}
	if got := decision(); got != BoundPodIgnore {
		t.Fatalf("Ready node: %v", got)
	}

	writing, release := make(chan struct{}), make(chan error)
	client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		writing <- struct{}{}
		if err := <-release; err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	clk.Step(41 * time.Second) // past the grace period: the pass turns Ready Unknown
	pass := func(writeErr error) (during BoundPodDecision) {
		done := make(chan struct{})
		go func() { defer close(done); c.MonitorNodes(ctx) }()
		select {
		case <-writing:
		case <-time.After(20 * time.Second):
			t.Fatal("the pass did not write the node's status")
		}
		during = decision()
		release <- writeErr
		<-done
		return during
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("changed"))
	if got := pass(conflict); got != BoundPodIgnore {
		t.Errorf("during the write that failed: %v, want %v", got, BoundPodIgnore)
	}
	if got := decision(); got != BoundPodIgnore {
		t.Errorf("after the write failed: %v, want %v", got, BoundPodIgnore)
	}
	if got := pass(nil); got != BoundPodIgnore {
		t.Errorf("during the write that succeeded: %v, want %v", got, BoundPodIgnore)
	}
	if got := decision(); got != BoundPodMarkNotReady {
		t.Errorf("after the write: %v, want %v", got, BoundPodMarkNotReady)
	}
}

// A pod newly bound to a not-Ready node whose marking keeps failing is
// retried, with back-off, until the marking succeeds, as upstream's
// processPod puts it back rate limited with no limit: here after more
// failures than workloop.MaxRetries.
func TestBoundPodMarkingRetriedUntilItSucceeds(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	sick := readyNode(corev1.ConditionFalse, t0)
	client := fake.NewClientset(sick, lease(t0))
	const failures = workloop.MaxRetries + 2
	var writes atomic.Int32
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && writes.Add(1) <= failures {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), record.NewFakeRecorder(1000), clk,
		Config{MonitorPeriod: time.Hour, MonitorGrace: time.Hour, StartupGrace: time.Hour,
			Defaults: DefaultTolerations{NotReadySeconds: -1, UnreachableSeconds: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 1) }()
	waitFor(t, "Run's first monitor pass", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.health) == 1
	})
	if _, err := client.CoreV1().Pods("ns").Create(ctx, readyPod(podOn("p", toleration(TaintNotReady, nil))), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	marked := func() bool {
		p, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "p")
		return err == nil && conditionOf(p.(*corev1.Pod), corev1.PodReady) == corev1.ConditionFalse
	}
	// The back-off delays (5 ms doubling, 328 s in all for 17 tries) pass
	// on the fake clock, within the monitor period.
	for step := 0; !marked(); step++ {
		if step == 1000 {
			t.Fatalf("the pod not marked after %d status writes (%d failing)", writes.Load(), failures)
		}
		clk.Step(3 * time.Second)
		time.Sleep(5 * time.Millisecond)
	}
	if n := writes.Load(); n != failures+1 {
		t.Fatalf("%d status writes, want %d", n, failures+1)
	}
}
