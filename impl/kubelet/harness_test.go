package kubelet

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/fakeclient"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// harness drives one kubelet synchronously: the test plays the pod source
// (HandlePod after every change) and the pod worker (sync).
// fataler is what the harness needs of *testing.T (and *rapid.T).
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

type harness struct {
	t      fataler
	ctx    context.Context
	clock  *testingclock.FakeClock
	client *fake.Clientset
	rt     *sim.Runtime
	krt    runtime.Runtime // what the kubelet talks to (default rt)
	k      *Kubelet
	seq    int
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newHarness(t fataler, mutate func(*Config)) *harness {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	rt, err := sim.New(sim.Config{Clock: clk, PodCIDR: "10.244.7.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: context.Background(), clock: clk, client: newFakeClient(), rt: rt}
	h.k = h.newKubelet(mutate)
	return h
}

func (h *harness) newKubelet(mutate func(*Config)) *Kubelet {
	cfg := Config{NodeName: "node-7", NodeIP: "192.168.0.7", Clock: h.clock}
	if mutate != nil {
		mutate(&cfg)
	}
	var krt runtime.Runtime = h.rt
	if h.krt != nil {
		krt = h.krt
	}
	k, err := New(h.ctx, h.client, cfg, krt)
	if err != nil {
		h.t.Fatal(err)
	}
	k.MarkSourceSynced()
	return k
}

// pod returns a one-container pod bound to the node.
func (h *harness) pod(name string, mutate func(*v1.Pod)) *v1.Pod {
	h.seq++
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: v1.PodSpec{
			NodeName:      "node-7",
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort,
			Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// create stores the pod in the API and hands it to the kubelet.
func (h *harness) create(p *v1.Pod) *v1.Pod {
	h.t.Helper()
	created, err := h.client.CoreV1().Pods(p.Namespace).Create(h.ctx, p, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.k.HandlePod(created)
	return created
}

// get reads the pod from the API (nil if gone).
func (h *harness) get(p *v1.Pod) *v1.Pod {
	h.t.Helper()
	got, err := h.client.CoreV1().Pods(p.Namespace).Get(h.ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return got
}

// sync delivers the API's current pod to the kubelet and syncs it once.
func (h *harness) sync(p *v1.Pod) *v1.Pod {
	h.t.Helper()
	return h.syncWith(h.k, p)
}

func (h *harness) syncWith(k *Kubelet, p *v1.Pod) *v1.Pod {
	h.t.Helper()
	if cur := h.get(p); cur != nil {
		k.HandlePod(cur)
	} else {
		k.HandlePodDeleted(p)
	}
	if _, err := k.syncPod(h.ctx, p.UID); err != nil {
		h.t.Fatalf("sync %s: %v", p.Name, err)
	}
	return h.get(p)
}

func (h *harness) step(d time.Duration) { h.clock.Step(d) }

// failNextStatusWrite makes the next pods/status update fail (an error
// without a verdict, as a lost connection) and later ones go through.
func (h *harness) failNextStatusWrite() {
	failed := false
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() == "status" && !failed {
			failed = true
			return true, nil, errors.New("injected write failure")
		}
		return false, nil, nil
	})
}

func cond(p *v1.Pod, t v1.PodConditionType) v1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func cstatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, l := range [][]v1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, s := range l {
			if s.Name == name {
				return s
			}
		}
	}
	return v1.ContainerStatus{}
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

// newFakeClient is client-go's fake clientset holding objs, its watches
// delivering copies of the tracker's objects (fakeclient.CopyingWatches):
// the pod source's transform interns a pod it receives in place, and the
// fake tracker hands a new watch the pods created between an informer's
// list and its watch themselves, which a test's Get then copies while the
// transform writes them (a race in the test's fake, not in the kubelet:
// a real client decodes a new object for every event).
func newFakeClient(objs ...k8sruntime.Object) *fake.Clientset {
	return fakeclient.CopyingWatches(fake.NewClientset(objs...))
}
