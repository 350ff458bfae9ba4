package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/fakeclient"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// fakeCluster is a fake clientset whose pods/binding behaves like the API
// server's: it sets spec.nodeName and PodScheduled=True, clears
// status.nominatedNodeName, and refuses to re-bind (409). failBind, when
// set, may reject a binding. nominated records the last nominatedNodeName
// each pod's status patches set (a binding clears the stored one). Its watches
// deliver copies (fakeclient.CopyingWatches): the scheduler's informer
// transform trims and interns the objects it receives in place.
type fakeCluster struct {
	*fake.Clientset
	mu        sync.Mutex
	failBind  func(b *v1.Binding) error
	binds     map[string]int
	nominated map[string]string
}

func newFakeCluster(objs ...kruntime.Object) *fakeCluster {
	c := &fakeCluster{Clientset: fakeclient.CopyingWatches(fake.NewClientset(objs...)), binds: map[string]int{}, nominated: map[string]string{}}
	c.PrependReactor("patch", "pods", func(action clienttesting.Action) (bool, kruntime.Object, error) {
		pa := action.(clienttesting.PatchAction)
		if pa.GetSubresource() != "status" {
			return false, nil, nil
		}
		var patch struct {
			Status struct {
				NominatedNodeName *string `json:"nominatedNodeName"`
			} `json:"status"`
		}
		if json.Unmarshal(pa.GetPatch(), &patch) == nil && patch.Status.NominatedNodeName != nil {
			c.mu.Lock()
			c.nominated[pa.GetNamespace()+"/"+pa.GetName()] = *patch.Status.NominatedNodeName
			c.mu.Unlock()
		}
		return false, nil, nil
	})
	c.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, kruntime.Object, error) {
		ca := action.(clienttesting.CreateAction)
		if ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		c.mu.Lock()
		fail := c.failBind
		c.mu.Unlock()
		if fail != nil {
			if err := fail(b); err != nil {
				return true, nil, err
			}
		}
		obj, err := c.Tracker().Get(podsGVR, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), b.Name, fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		pod.Status.NominatedNodeName = ""
		pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
		if err := c.Tracker().Update(podsGVR, pod, b.Namespace); err != nil {
			return true, nil, err
		}
		c.mu.Lock()
		c.binds[b.Namespace+"/"+b.Name]++
		c.mu.Unlock()
		return true, b, nil
	})
	return c
}

func (c *fakeCluster) setFailBind(f func(b *v1.Binding) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failBind = f
}

// nominatedTo is the last node a status patch nominated the pod to.
func (c *fakeCluster) nominatedTo(ns, name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nominated[ns+"/"+name]
}

func (c *fakeCluster) bindCount(ns, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.binds[ns+"/"+name]
}

func makeNode(name string, cpu, mem string, pods int64, labels map[string]string) *v1.Node {
	alloc := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse(mem),
		v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, UID: types.UID("node-" + name)},
		Status:     v1.NodeStatus{Allocatable: alloc, Capacity: alloc},
	}
}

func makePod(ns, name, cpu, mem string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec: v1.PodSpec{
			SchedulerName: config.DefaultSchedulerName,
			Containers:    []v1.Container{{Name: "c", Image: "nginx", Resources: v1.ResourceRequirements{Requests: req}}},
		},
	}
}

// testConfig disables leader election and shortens backoff.
func testConfig() *config.KubeSchedulerConfiguration {
	c := config.Default()
	f := false
	c.LeaderElection.LeaderElect = &f
	return c
}

// startScheduler runs a scheduler until the test ends, then checks Run
// returned and no goroutine leaked.
func startScheduler(t *testing.T, client *fakeCluster, conf *config.KubeSchedulerConfiguration) *Scheduler {
	t.Helper()
	return startSchedulerWithIdentity(t, client, conf, "", true)
}

// startSchedulerWithIdentity starts a scheduler; with checkLeaks its
// cleanup waits for the goroutine count to return to what it was before it
// started (pass false for schedulers started while another runs: the first
// one's cleanup, which runs last, checks for both).
func startSchedulerWithIdentity(t *testing.T, client *fakeCluster, conf *config.KubeSchedulerConfiguration, identity string, checkLeaks bool) *Scheduler {
	t.Helper()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, client, Config{Configuration: conf, Seed: 1, Identity: identity})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Run did not return after cancel")
		}
		if checkLeaks {
			waitFor(t, "goroutines to stop", func() bool { return runtime.NumGoroutine() <= before })
		}
	})
	return s
}

// waitFor polls cond (every 10 ms, up to 20 s — a liveness bound, not a
// speed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getPod(t *testing.T, c *fakeCluster, ns, name string) *v1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	return p
}

func createPod(t *testing.T, c *fakeCluster, p *v1.Pod) {
	t.Helper()
	if _, err := c.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
}

func createNode(t *testing.T, c *fakeCluster, n *v1.Node) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
}
