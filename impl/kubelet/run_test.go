package kubelet

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// goroutinesEnd waits (real time, up to 20 s) until no more goroutines
// run than the baseline counted before the test started anything, and
// otherwise fails with every goroutine's stack, so that a leak, or a
// goroutine some library starts lazily once per process, can be told
// from a slow shutdown.
func goroutinesEnd(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for goruntime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			t.Fatalf("timed out waiting for goroutines to end: %d running, %d before the test:\n%s", goruntime.NumGoroutine(), baseline, buf)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventually polls cond (real time) until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunRegistersNodeHeartbeatsAndRunsPods(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	clk := testingclock.NewFakeClock(t0)
	client := newFakeClient()
	k, rt := newSimKubelet(t, client, Config{NodeName: "n1", Clock: clk, CPU: resourceMust("2")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()

	var node *v1.Node
	var err error
	eventually(t, "node registration", func() bool {
		node, err = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && len(node.Status.Conditions) == 4
	})
	if c := nodeCondition(node, v1.NodeReady); c.Status != v1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Fatalf("Ready = %+v", c)
	}
	if cpu := node.Status.Allocatable[v1.ResourceCPU]; cpu.String() != "2" || node.Status.NodeInfo.KubeletVersion == "" ||
		node.Status.DaemonEndpoints.KubeletEndpoint.Port != KubeletPort {
		t.Fatalf("node status: %+v", node.Status)
	}
	// Allocatable keeps back the default hard eviction thresholds.
	capMem, allocMem := node.Status.Capacity[v1.ResourceMemory], node.Status.Allocatable[v1.ResourceMemory]
	capMem.Sub(allocMem)
	if want := resource.MustParse("100Mi"); capMem.Cmp(want) != 0 {
		t.Fatalf("capacity - allocatable memory = %s, want 100Mi (memory.available<100Mi)", capMem.String())
	}
	var lease *coordinationv1.Lease
	eventually(t, "lease", func() bool {
		lease, err = client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
		return err == nil
	})
	if *lease.Spec.HolderIdentity != "n1" || *lease.Spec.LeaseDurationSeconds != 40 || !lease.Spec.RenewTime.Time.Equal(t0) {
		t.Fatalf("lease: %+v", lease.Spec)
	}

	// A pod bound to the node is started through the watch.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec: v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "nginx:1"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod bound elsewhere is ignored.
	other := pod.DeepCopy()
	other.Name, other.UID, other.Spec.NodeName = "q", "uid-q", "n2"
	if _, err := client.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod running", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})

	// Its events reach the API from the kubelet's own broadcaster.
	eventually(t, "a Started event from kubelet on n1", func() bool {
		evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == EventStarted && e.Source.Component == EventComponent && e.Source.Host == "n1" &&
				e.InvolvedObject.Name == "p" && e.InvolvedObject.FieldPath == "spec.containers{c}" && e.Message == "Started container c" {
				return true
			}
		}
		return false
	})

	// Heartbeat: stepping the clock renews the lease.
	for i := 0; i < 11; i++ {
		clk.Step(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	eventually(t, "lease renewal", func() bool {
		l, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.Time.After(t0)
	})

	// Graceful delete: the kubelet stops the pod and deletes it finally.
	p, _ := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	now := metav1.NewTime(clk.Now())
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptrInt64(30)
	if _, err := client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "final delete", func() bool {
		_, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	eventually(t, "runtime cleanup", func() bool {
		sb, c := rt.Counts()
		return sb == 0 && c == 0
	})
	if _, err := client.CoreV1().Pods("default").Get(ctx, "q", metav1.GetOptions{}); err != nil {
		t.Fatalf("the other node's pod was touched: %v", err)
	}

	// Pause stops heartbeats.
	k.Pause()
	l0, _ := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
	for i := 0; i < 30; i++ {
		clk.Step(time.Second)
		time.Sleep(time.Millisecond)
	}
	l1, _ := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
	if !l1.Spec.RenewTime.Equal(l0.Spec.RenewTime) {
		t.Fatalf("a paused kubelet renewed its lease")
	}

	k.Stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	goroutinesEnd(t, baseline)
}

// TestRunStartsAPodCreatedBetweenListAndWatch: a pod bound to the node
// and created after the pod source listed the pods but before its watch
// began arrives through the watch, and the kubelet runs it. Run with -race
// it also checks that the test client's watches deliver copies
// (newFakeClient): client-go's fake tracker hands such a pod to the watch
// as the object it stores, which the source's transform interns in place
// while the test's Get copies it (a data race with fake.NewClientset).
func TestRunStartsAPodCreatedBetweenListAndWatch(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	client := newFakeClient()
	var once sync.Once
	client.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		once.Do(func() {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
				Spec: v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "nginx:1"}}}}
			if err := client.Tracker().Create(v1.SchemeGroupVersion.WithResource("pods"), pod, "default"); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil // the watch itself is the client's
	})
	k, _ := newSimKubelet(t, client, Config{NodeName: "n1", Clock: clk, CPU: resourceMust("2")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()
	eventually(t, "pod running", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	k.Stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
}

// newSimKubelet returns a kubelet of cfg on a simulated runtime driven by
// cfg.Clock.
func newSimKubelet(t *testing.T, client kubernetes.Interface, cfg Config) (*Kubelet, *sim.Runtime) {
	t.Helper()
	rt, err := sim.New(sim.Config{Clock: cfg.Clock, PodCIDR: "10.244.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(context.Background(), client, cfg, rt)
	if err != nil {
		t.Fatal(err)
	}
	return k, rt
}

func nodeCondition(n *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func ptrInt64(v int64) *int64 { return &v }

// A kubelet restarted while its node is failed (paused before Run) stays
// silent: no node registration, no lease, until Resume. (A props campaign
// saw a restarted failed node report Ready and lose its unreachable taint
// while still failed.)
func TestKubeletStartedPausedStaysSilentUntilResumed(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	clk := testingclock.NewFakeClock(t0)
	client := newFakeClient()
	rt, err := sim.New(sim.Config{Clock: clk, PodCIDR: "10.244.2.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(context.Background(), client, Config{NodeName: "n2", Clock: clk}, rt)
	if err != nil {
		t.Fatal(err)
	}
	k.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()

	time.Sleep(20 * pausePoll)
	if _, err := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a kubelet started paused registered its node (err %v)", err)
	}
	if _, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a kubelet started paused renewed its lease (err %v)", err)
	}

	k.Resume()
	eventually(t, "node registration after Resume", func() bool {
		_, err := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
		return err == nil
	})
	k.Stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	goroutinesEnd(t, baseline)
}

// The periodic resync reaches a running pod without any event about it: a
// changed ConfigMap shows up in its volume within two sync periods (the
// first resync comes at a random phase of the period, and a volume is
// refreshed at most once per period).
func TestResyncRefreshesARunningPodWithoutEvents(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	clk := testingclock.NewFakeClock(t0)
	client := newFakeClient(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"mode": "old"}})
	k, _ := newSimKubelet(t, client, Config{NodeName: "n1", Clock: clk, CPU: resourceMust("2"), RootDir: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()

	vol := v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec: v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways, Volumes: []v1.Volume{vol},
			Containers: []v1.Container{{Name: "c", Image: "nginx:1", VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod running", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	file := filepath.Join(k.volumeDir(pod.UID, volumePlugin(&vol), "cfg"), "mode")
	content := func() string { b, _ := os.ReadFile(file); return string(b) }
	if got := content(); got != "old" {
		t.Fatalf("volume file = %q, want %q", got, "old")
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"mode": "new"}}
	if _, err := client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	period := k.cfg.SyncFrequency
	for elapsed := time.Duration(0); content() != "new"; elapsed += time.Second {
		if elapsed > 2*period+5*time.Second {
			t.Fatalf("the changed ConfigMap did not reach the running pod in %s (two sync periods of %s)", elapsed, period)
		}
		clk.Step(time.Second)
		time.Sleep(5 * time.Millisecond)
	}

	k.Stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	goroutinesEnd(t, baseline)
}
