package nodelifecycle

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func podOn(name string, tols ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "n1", Tolerations: tols}}
}

func inZone(n *corev1.Node, zone string) *corev1.Node {
	n.Labels = map[string]string{LabelZone: zone}
	return n
}

// renewLease is the kubelet of node name renewing its Lease at now; it
// returns once the controller's cache shows the renewal.
func renewLease(t *testing.T, ctx context.Context, client *fake.Clientset, c *Controller, name string, now time.Time) {
	t.Helper()
	l, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := metav1.NewMicroTime(now)
	l.Spec.RenewTime = &r
	if _, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the renewal of "+name+" in the cache", func() bool {
		cached, err := c.leaseLister.Leases(NodeLeaseNamespace).Get(name)
		return err == nil && cached.Spec.RenewTime.Equal(&r)
	})
}

func readyPod(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

func TestUnreachableNodeTaintedAndPodsEvictedOnTime(t *testing.T) {
	before := runtime.NumGoroutine()
	clk := clocktesting.NewFakeClock(t0)
	// n2, in another zone, stays healthy: with n1 the only node, every
	// zone would be fully disrupted and evictions would stop.
	n1 := inZone(readyNode(corev1.ConditionTrue, t0), "a")
	n2, l2 := inZone(readyNode(corev1.ConditionTrue, t0), "b"), lease(t0)
	n2.Name, l2.Name = "n2", "n2"
	client := fake.NewClientset(
		n1, lease(t0), n2, l2,
		podOn("plain"),
		podOn("short", toleration(TaintUnreachable, secs(10))),
		readyPod(podOn("forever", toleration(TaintUnreachable, nil))),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	cfg := Config{MonitorPeriod: time.Hour, MonitorGrace: 40 * time.Second, StartupGrace: time.Minute,
		Defaults: DefaultTolerations{NotReadySeconds: -1, UnreachableSeconds: -1}}
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), recorder, clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	startInformers(t, ctx, client, factory)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 2) }()

	podExists := func(name string) bool {
		_, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}
	node := func() *corev1.Node {
		n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return n
	}
	// Let Run's own first pass happen before the clock moves (its monitor
	// ticker, an hour, never fires after that).
	waitFor(t, "Run's first monitor pass", func() bool { return len(c.ZoneStates()) == 2 })
	c.MonitorNodes(ctx)
	clk.Step(30 * time.Second)
	c.MonitorNodes(ctx)
	if len(node().Spec.Taints) != 0 {
		t.Fatal("tainted within the grace period")
	}
	clk.Step(11 * time.Second) // 41 s without a heartbeat or a lease renewal
	renewLease(t, ctx, client, c, "n2", clk.Now())
	c.MonitorNodes(ctx)
	c.TaintingPass(ctx)
	// The pass turned Ready Unknown: the NoSchedule taint now, the
	// NoExecute one queued by the next pass, which reads Unknown.
	if ts := taintSet(node().Spec.Taints); !ts[TaintUnreachable+":NoSchedule"] || ts[TaintUnreachable+":NoExecute"] {
		t.Fatalf("taints after the pass turning n1 Unknown: %v", ts)
	}
	waitFor(t, "n1 Unknown in the cache", func() bool {
		cached, err := c.nodeLister.Get("n1")
		return err == nil && conditionStatus(cached.Status.Conditions, corev1.NodeReady) == corev1.ConditionUnknown
	})
	clk.Step(time.Second)
	renewLease(t, ctx, client, c, "n2", clk.Now())
	c.MonitorNodes(ctx)
	c.TaintingPass(ctx) // Run's tainting ticker may have done it first
	waitFor(t, "the unreachable NoExecute taint", func() bool { return taintSet(node().Spec.Taints)[TaintUnreachable+":NoExecute"] })
	n := node()
	if ready := readyCondition(n.Status.Conditions); ready == nil || ready.Status != corev1.ConditionUnknown {
		t.Fatalf("ready condition %+v", ready)
	}
	waitFor(t, "the intolerant pod evicted at once", func() bool { return !podExists("plain") })
	waitFor(t, "the 10 s pod scheduled for eviction", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.underTaint["ns/short"]
		return ok
	})
	if !podExists("short") || !podExists("forever") {
		t.Fatal("tolerating pods evicted early")
	}
	clk.Step(10 * time.Second)
	waitFor(t, "the 10 s pod evicted after its tolerationSeconds", func() bool { return !podExists("short") })
	if !podExists("forever") {
		t.Fatal("a pod tolerating forever was evicted")
	}
	if p, _ := client.CoreV1().Pods("ns").Get(ctx, "forever", metav1.GetOptions{}); p.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Fatalf("a pod on an unreachable node still claims Ready: %+v", p.Status.Conditions)
	}

	// The kubelet comes back: its status update shows Ready with a new heartbeat.
	n = node()
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = corev1.ConditionFalse
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionTrue
		}
		n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(clk.Now())
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the informer to see the recovered node", func() bool {
		cached, err := c.nodeLister.Get("n1")
		return err == nil && readyCondition(cached.Status.Conditions).Status == corev1.ConditionTrue
	})
	c.MonitorNodes(ctx)
	if ts := node().Spec.Taints; len(ts) != 0 {
		t.Fatalf("taints not removed on recovery: %+v", ts)
	}
	cancel()
	wg.Wait()
	factory.Shutdown()
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before+2 })
}
