package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// cluster is n kubelets sharing one clientset and one PodDispatcher.
type cluster struct {
	client   kubernetes.Interface
	kubelets []*Kubelet
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func startCluster(tb testing.TB, client kubernetes.Interface, n int, clk clock.WithTicker) *cluster {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{client: client, cancel: cancel}
	d := NewPodDispatcher(client)
	for i := 0; i < n; i++ {
		cidr := fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)
		rt, err := sim.New(sim.Config{Clock: clk, PodCIDR: cidr})
		if err != nil {
			tb.Fatal(err)
		}
		cfg := Config{NodeName: fmt.Sprintf("node-%d", i), PodCIDR: cidr, Clock: clk, ExternalPodSource: true, Workers: 2}
		if os.Getenv("KUBELET_BENCH_LOG") != "" {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
		k, err := New(ctx, client, cfg, rt)
		if err != nil {
			tb.Fatal(err)
		}
		d.Add(k)
		c.kubelets = append(c.kubelets, k)
		c.wg.Add(1)
		go func() { defer c.wg.Done(); k.Run(ctx) }()
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); d.Run(ctx) }()
	return c
}

func (c *cluster) stop() {
	c.cancel()
	c.wg.Wait()
}

func createPods(tb testing.TB, client kubernetes.Interface, pods, nodes int) {
	tb.Helper()
	for i := 0; i < pods; i++ {
		p := benchPod(i, nodes)
		if _, err := client.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
}

func allRunning(client kubernetes.Interface, want int) (bool, map[string]bool) {
	list, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, nil
	}
	ips := map[string]bool{}
	n := 0
	for _, p := range list.Items {
		if p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" {
			n++
			ips[p.Status.PodIP] = true
		}
	}
	return n == want, ips
}

func TestPodDispatcherFeedsManyKubelets(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	client := newFakeClient()
	c := startCluster(t, client, 3, clock.RealClock{})
	createPods(t, client, 9, 3)
	var ips map[string]bool
	eventually(t, "9 running pods", func() bool {
		var ok bool
		ok, ips = allRunning(client, 9)
		return ok
	})
	if len(ips) != 9 {
		t.Fatalf("pod IPs not distinct: %v", ips)
	}
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if len(nodes.Items) != 3 {
		t.Fatalf("%d nodes registered", len(nodes.Items))
	}
	c.stop()
	goroutinesEnd(t, baseline)
}

// BenchmarkSimulatedNodes runs 100 simulated kubelets (one shared
// clientset, one PodDispatcher) and reports heap per node, then runs them
// again with 3,000 pods already bound and reports heap per pod beyond the
// nodes' share and the time until every pod ran. The fake clientset's and
// the shared informer's copies of nodes, leases and pods are included in
// the figures (its log of actions is cleared first). It uses the plain object tracker: NewClientset's
// field-managed tracker rebuilds a REST mapper per call and would dominate;
// pods are created up front because the plain tracker's watch channel
// panics when a burst of creates outruns the watcher.
func BenchmarkSimulatedNodes(b *testing.B) {
	nodes, pods := benchNodes, benchPods
	heap := func() uint64 {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	waitNodes := func(client kubernetes.Interface) {
		for {
			list, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if len(list.Items) == nodes {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for b.Loop() {
		client := newBenchClient()
		h0 := heap()
		c := startCluster(b, client, nodes, clock.RealClock{})
		waitNodes(client)
		time.Sleep(100 * time.Millisecond)
		client.ClearActions()
		perNode := float64(heap()-h0) / float64(nodes)
		c.stop()

		var objs []k8sruntime.Object
		for i := 0; i < pods; i++ {
			objs = append(objs, benchPod(i, nodes))
		}
		client = newBenchClient(objs...)
		h2 := heap()
		start := time.Now()
		c = startCluster(b, client, nodes, clock.RealClock{})
		for {
			if ok, _ := allRunning(client, pods); ok {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		elapsed := time.Since(start)
		client.ClearActions() // the fake's own log of every call
		perPod := (float64(heap()-h2) - perNode*float64(nodes)) / float64(pods)
		c.stop()
		b.ReportMetric(perNode/1024, "KiB/node")
		b.ReportMetric(perPod/1024, "KiB/pod")
		b.ReportMetric(elapsed.Seconds(), "s-to-all-running")
	}
}

func benchPod(i, nodes int) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", i))},
		Spec: v1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%nodes), RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "c", Image: "nginx:1.27"}}}}
}

// Benchmark size: 100 nodes and 3,000 pods unless the environment sets
// KUBELET_BENCH_NODES and KUBELET_BENCH_PODS (e.g. 1000 and 30000).
var benchNodes, benchPods = envInt("KUBELET_BENCH_NODES", 100), envInt("KUBELET_BENCH_PODS", 3000)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// newBenchClient is a plain fake clientset whose watches never overflow:
// the tracker's own watchers have 100-slot channels that panic when a
// burst of writes outruns the watcher, so writes and watches go through
// bufferedTracker instead.
func newBenchClient(objs ...k8sruntime.Object) *fake.Clientset {
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck
	bt := &bufferedTracker{ObjectTracker: client.Tracker()}
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(bt))
	client.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w := &bufWatcher{gvr: action.GetResource(), ns: action.GetNamespace(), out: make(chan watch.Event), stop: make(chan struct{}), wake: make(chan struct{}, 1)}
		bt.mu.Lock()
		bt.watchers = append(bt.watchers, w)
		bt.mu.Unlock()
		go w.pump()
		return true, w, nil
	})
	return client
}

type bufferedTracker struct {
	clienttesting.ObjectTracker
	mu       sync.Mutex
	watchers []*bufWatcher
}

func (t *bufferedTracker) notify(gvr schema.GroupVersionResource, ns, name string, typ watch.EventType, obj k8sruntime.Object) {
	if obj == nil {
		o, err := t.ObjectTracker.Get(gvr, ns, name)
		if err != nil {
			return
		}
		obj = o
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.watchers {
		if w.gvr == gvr && (w.ns == "" || w.ns == ns) {
			w.push(watch.Event{Type: typ, Object: obj.DeepCopyObject()})
		}
	}
}

func nameOf(obj k8sruntime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

func (t *bufferedTracker) Create(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.CreateOptions) error {
	if err := t.ObjectTracker.Create(gvr, obj, ns, opts...); err != nil {
		return err
	}
	t.notify(gvr, ns, nameOf(obj), watch.Added, nil)
	return nil
}

func (t *bufferedTracker) Update(gvr schema.GroupVersionResource, obj k8sruntime.Object, ns string, opts ...metav1.UpdateOptions) error {
	if err := t.ObjectTracker.Update(gvr, obj, ns, opts...); err != nil {
		return err
	}
	t.notify(gvr, ns, nameOf(obj), watch.Modified, nil)
	return nil
}

func (t *bufferedTracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	old, err := t.ObjectTracker.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	if err := t.ObjectTracker.Delete(gvr, ns, name, opts...); err != nil {
		return err
	}
	t.notify(gvr, ns, name, watch.Deleted, old)
	return nil
}

// bufWatcher is a watch with an unbounded buffer.
type bufWatcher struct {
	gvr      schema.GroupVersionResource
	ns       string
	mu       sync.Mutex
	buf      []watch.Event
	wake     chan struct{}
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *bufWatcher) push(e watch.Event) {
	w.mu.Lock()
	w.buf = append(w.buf, e)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *bufWatcher) pump() {
	defer close(w.out)
	for {
		w.mu.Lock()
		var next *watch.Event
		if len(w.buf) > 0 {
			next = &w.buf[0]
		}
		w.mu.Unlock()
		if next == nil {
			select {
			case <-w.wake:
				continue
			case <-w.stop:
				return
			}
		}
		select {
		case w.out <- *next:
			w.mu.Lock()
			w.buf = w.buf[1:]
			w.mu.Unlock()
		case <-w.stop:
			return
		}
	}
}

func (w *bufWatcher) ResultChan() <-chan watch.Event { return w.out }
func (w *bufWatcher) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
