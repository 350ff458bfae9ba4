package clientgo

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/cluster"

	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// seen is one event a pod informer handler received.
type seen struct {
	typ  string // add, update, delete
	rv   int64
	step string // the pod's "step" annotation
}

// recorder is a pod event handler that keeps every event per pod.
type recorder struct {
	mu     sync.Mutex
	byName map[string][]seen
	errs   []string
}

func (r *recorder) add(typ string, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		r.mu.Lock()
		r.errs = append(r.errs, fmt.Sprintf("%s of a %T", typ, obj))
		r.mu.Unlock()
		return
	}
	rv, err := strconv.ParseInt(pod.ResourceVersion, 10, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s %s: resourceVersion %q", typ, pod.Name, pod.ResourceVersion))
	}
	r.byName[pod.Name] = append(r.byName[pod.Name], seen{typ, rv, pod.Annotations["step"]})
}

func (r *recorder) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.add("add", obj) },
		UpdateFunc: func(old, obj any) {
			o, n := old.(*corev1.Pod), obj.(*corev1.Pod)
			if ro, rn := o.ResourceVersion, n.ResourceVersion; len(ro) > len(rn) || (len(ro) == len(rn) && ro > rn) {
				r.mu.Lock()
				r.errs = append(r.errs, fmt.Sprintf("update of %s went back from resourceVersion %s to %s", n.Name, ro, rn))
				r.mu.Unlock()
			}
			r.add("update", obj)
		},
		DeleteFunc: func(obj any) { r.add("delete", obj) },
	}
}

func (r *recorder) events(name string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byName[name])
}

// TestInformerSurvivesRestartAndCompaction: a shared pod informer syncs and
// sees every update in order; then the API server restarts (closing the
// informer's watch) and, while the informer cannot reach it, pods change and
// etcd is compacted past everything the informer saw. The informer's
// re-watch gets 410 Expired, it relists, and it ends with exactly the
// server's state, having never gone back in resourceVersion; the watch after
// the relist delivers later updates again. Watch cache on and off, with
// client-go's watch-list (streaming initial sync) on and off.
func TestInformerSurvivesRestartAndCompaction(t *testing.T) {
	for _, mode := range cacheModes {
		for _, watchList := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/watchlist=%v", mode.name, watchList), func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
				testInformer(t, mode.watchCache)
			})
		}
	}
}

func testInformer(t *testing.T, watchCache bool) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "data")
	c := startCluster(t, dataDir, "127.0.0.1:0", watchCache)
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	addr := hostPort(t, c.URL)
	writer := fastClient(t, c)

	const ns = "default"
	p := newProbe()
	factory := informers.NewSharedInformerFactoryWithOptions(mustClient(t, p.wrap(c.AdminConfig)), 0, informers.WithNamespace(ns))
	podInformer := factory.Core().V1().Pods().Informer()
	rec := &recorder{byName: map[string][]seen{}}
	if _, err := podInformer.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	informerCtx, stopInformer := context.WithCancel(ctx)
	factory.StartWithContext(informerCtx)
	defer func() {
		stopInformer()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		t.Fatal("pod informer did not sync")
	}

	// Phase 1: N pods, each updated K times, concurrently; the informer sees
	// every write, with the resourceVersion each write returned, in order.
	const pods, updates = 6, 5
	written := make([][]int64, pods) // per pod, the resourceVersion of each write
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	for i := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rvs, err := writePod(ctx, writer, ns, fmt.Sprintf("pod-%d", i), updates)
			written[i] = rvs
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range pods {
		name := fmt.Sprintf("pod-%d", i)
		eventually(t, 30*time.Second, "informer sees "+name+"'s last write", func() (bool, string) {
			ev := rec.events(name)
			return len(ev) > 0 && ev[len(ev)-1].rv == written[i][updates], fmt.Sprint(ev)
		})
		var want []seen
		for step, rv := range written[i] {
			typ := "update"
			if step == 0 {
				typ = "add"
			}
			want = append(want, seen{typ, rv, strconv.Itoa(step)})
		}
		if got := rec.events(name); !slices.Equal(got, want) {
			t.Errorf("%s: informer saw %v, want every write in order %v", name, got, want)
		}
	}
	lastSeen := written[pods-1][updates]
	for i := range pods {
		lastSeen = max(lastSeen, written[i][updates])
	}

	// Phase 2: hold the informer's requests back and stop the API server:
	// the server ends the informer's watch and the informer's re-watch waits
	// at the gate. Change pods through the API server started on another
	// port, compact etcd past everything the informer saw, and start the API
	// server again on the informer's port: its fresh watch cache, like etcd,
	// no longer has the informer's resourceVersion.
	p.hold()
	if err := c.Stop(); err != nil {
		t.Fatalf("stopping the cluster: %v", err)
	}
	eventually(t, 30*time.Second, "the informer re-watches after the server went away", func() (bool, string) {
		return p.waitersAtGate() > 0, fmt.Sprint(p.events())
	})
	c = startCluster(t, dataDir, "127.0.0.1:0", watchCache)
	writer = fastClient(t, c)
	for i := range pods {
		if _, err := setStep(ctx, writer, ns, fmt.Sprintf("pod-%d", i), updates+1); err != nil {
			t.Fatal(err)
		}
	}
	finalStep := map[string]string{}
	for i := range pods - 1 {
		name := fmt.Sprintf("pod-%d", i)
		for step := updates + 2; step <= updates+3; step++ {
			if _, err := setStep(ctx, writer, ns, name, step); err != nil {
				t.Fatal(err)
			}
		}
		finalStep[name] = strconv.Itoa(updates + 3)
	}
	deleted := fmt.Sprintf("pod-%d", pods-1)
	if err := writer.CoreV1().Pods(ns).Delete(ctx, deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := writePod(ctx, writer, ns, "pod-new", 1); err != nil {
		t.Fatal(err)
	}
	finalStep["pod-new"] = "1"
	if _, err := writePod(ctx, writer, ns, "pod-ghost", 1); err != nil {
		t.Fatal(err)
	}
	if err := writer.CoreV1().Pods(ns).Delete(ctx, "pod-ghost", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	head, err := c.EtcdClient.Get(ctx, "/kubeproof-e2e-compaction-probe")
	if err != nil {
		t.Fatal(err)
	}
	if head.Header.Revision <= lastSeen {
		t.Fatalf("etcd revision %d not past the informer's %d", head.Header.Revision, lastSeen)
	}
	if _, err := c.EtcdClient.Compact(ctx, head.Header.Revision); err != nil {
		t.Fatalf("compacting etcd at %d: %v", head.Header.Revision, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stopping the cluster: %v", err)
	}
	c = startCluster(t, dataDir, addr, watchCache)
	writer = fastClient(t, c)
	syncsBefore := len(p.events())
	p.release()

	// The informer re-watches from a compacted resourceVersion, gets 410,
	// relists and converges on exactly the server's state.
	eventually(t, 60*time.Second, "informer converges after the restart", func() (bool, string) {
		return sameState(ctx, writer, podInformer.GetStore(), ns)
	})
	after := p.events()[syncsBefore:]
	t.Logf("client requests after the restart: %v", after)
	expired := slices.Index(after, "expired")
	relisted := slices.IndexFunc(after, func(s string) bool {
		return strings.HasPrefix(s, "list ") || strings.HasPrefix(s, "watchlist ")
	})
	if expired < 0 || relisted < expired {
		t.Errorf("want a 410 Expired then a relist after the restart; client requests: %v", after)
	}
	// The handler hears of the relist after the store has it: client-go
	// updates the indexer, then hands the notification to each listener's
	// goroutines, so the events are waited for, not read at once.
	eventually(t, 30*time.Second, "the handler receives the relist's events", func() (bool, string) {
		for name, step := range finalStep {
			ev := rec.events(name)
			if len(ev) == 0 || ev[len(ev)-1].step != step || ev[len(ev)-1].typ == "delete" {
				return false, fmt.Sprintf("%s: last event %v, want the pod at step %s", name, ev, step)
			}
		}
		if ev := rec.events(deleted); len(ev) == 0 || ev[len(ev)-1].typ != "delete" {
			return false, fmt.Sprintf("%s: events %v, want a final delete", deleted, ev)
		}
		return true, ""
	})
	if ev := rec.events("pod-ghost"); len(ev) > 0 && ev[len(ev)-1].typ != "delete" {
		t.Errorf("pod-ghost (created and deleted during the break): events %v end live", ev)
	}

	// Phase 3: the watch after the relist delivers new writes one by one.
	rv, err := setStep(ctx, writer, ns, "pod-0", 100)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "informer sees the write after the relist", func() (bool, string) {
		ev := rec.events("pod-0")
		return ev[len(ev)-1] == seen{"update", rv, "100"}, fmt.Sprint(ev[len(ev)-1])
	})

	// No pod's events ever went back in resourceVersion; with a relist,
	// unchanged pods may repeat their resourceVersion.
	rec.mu.Lock()
	for name, ev := range rec.byName {
		for i := 1; i < len(ev); i++ {
			if ev[i].rv < ev[i-1].rv {
				t.Errorf("%s: events went back in resourceVersion: %v", name, ev)
				break
			}
		}
	}
	for _, e := range rec.errs {
		t.Error(e)
	}
	rec.mu.Unlock()

	stopInformer()
	factory.Shutdown()
	stopped = true
	if err := c.Stop(); err != nil {
		t.Errorf("stopping the cluster: %v", err)
	}
	checkGoroutines(t, before)
}

// fastClient is an admin client without client-side rate limits.
func fastClient(t *testing.T, c *cluster.Cluster) kubernetes.Interface {
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.QPS, cfg.Burst = 1000, 1000
	return mustClient(t, cfg)
}

// writePod creates a pod at step 0 and updates it to steps 1..updates,
// returning the resourceVersion of each write.
func writePod(ctx context.Context, cs kubernetes.Interface, ns, name string, updates int) ([]int64, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"step": "0"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	rv, err := strconv.ParseInt(created.ResourceVersion, 10, 64)
	if err != nil {
		return nil, err
	}
	rvs := []int64{rv}
	for step := 1; step <= updates; step++ {
		rv, err := setStep(ctx, cs, ns, name, step)
		if err != nil {
			return nil, err
		}
		rvs = append(rvs, rv)
	}
	return rvs, nil
}

// setStep sets a pod's step annotation with a merge patch and returns the
// new resourceVersion.
func setStep(ctx context.Context, cs kubernetes.Interface, ns, name string, step int) (int64, error) {
	body := fmt.Sprintf(`{"metadata":{"annotations":{"step":"%d"}}}`, step)
	pod, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("setting %s to step %d: %w", name, step, err)
	}
	return strconv.ParseInt(pod.ResourceVersion, 10, 64)
}

// sameState compares an informer's store with a quorum list: the same pods
// at the same resourceVersions.
func sameState(ctx context.Context, cs kubernetes.Interface, store cache.Store, ns string) (bool, string) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	want := map[string]string{}
	for _, p := range list.Items {
		want[p.Name] = p.ResourceVersion
	}
	got := map[string]string{}
	for _, obj := range store.List() {
		p := obj.(*corev1.Pod)
		got[p.Name] = p.ResourceVersion
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return false, fmt.Sprintf("informer %v, server %v", got, want)
	}
	return true, ""
}
