package kubelet

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/intern"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func TestSourceTransformDropsOnlyManagedFields(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Env: []v1.EnvVar{{Name: "X"}}}}}}
	out, _ := sourceTransform(intern.New(), nil)(p)
	got := out.(*v1.Pod)
	if got.ManagedFields != nil || got.Annotations["a"] != "b" || len(got.Spec.Containers[0].Env) != 1 {
		t.Errorf("trimmed wrongly: %+v", got)
	}
}

func TestShareLastStatusOnceTheSourceHasTheWrittenVersion(t *testing.T) {
	written := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}}
	rec := &podRecord{lastStatus: &written, lastStatusRV: "5"}
	older := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "4"}, Status: *written.DeepCopy()}
	shareLastStatus(rec, older)
	if rec.lastStatus != &written {
		t.Fatal("shared with an older version of the pod")
	}
	src := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strings.Clone("5")}, Status: *written.DeepCopy()} // a decode's own copy
	shareLastStatus(rec, src)
	if rec.lastStatus != &src.Status {
		t.Fatal("lastStatus is not the source pod's status")
	}
	if rec.lastStatusRV != "5" || unsafe.StringData(rec.lastStatusRV) != unsafe.StringData(src.ResourceVersion) {
		t.Errorf("lastStatusRV %q is not the source pod's copy of 5", rec.lastStatusRV)
	}
	if rec.lastStatus.Phase != v1.PodRunning {
		t.Errorf("status content changed: %+v", rec.lastStatus)
	}
	shared := rec.lastStatus
	shareLastStatus(rec, src)
	if rec.lastStatus != shared {
		t.Error("sharing again allocated a new status")
	}
}

func TestPodDispatcherOnASharedPodInformer(t *testing.T) {
	baseline := goruntime.NumGoroutine()
	client := newFakeClient()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	pods := NewPodInformer(client, 0)
	wg.Go(func() { pods.RunWithContext(ctx) })
	// Another component of the process (the controller manager) watching
	// the same pods with its own handler.
	var others atomic.Int32
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { others.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	d := NewPodDispatcherWithInformer(pods)
	for i := 0; i < 2; i++ {
		cidr := fmt.Sprintf("10.200.%d.0/24", i)
		rt, err := sim.New(sim.Config{PodCIDR: cidr})
		if err != nil {
			t.Fatal(err)
		}
		k, err := New(ctx, client, Config{NodeName: fmt.Sprintf("node-%d", i), PodCIDR: cidr, ExternalPodSource: true, Workers: 2}, rt)
		if err != nil {
			t.Fatal(err)
		}
		d.Add(k)
		wg.Go(func() { _ = k.Run(ctx) })
	}
	wg.Go(func() { _ = d.Run(ctx) })
	createPods(t, client, 4, 2)
	unbound := benchPod(99, 2)
	unbound.Spec.NodeName = ""
	if _, err := client.CoreV1().Pods("default").Create(ctx, unbound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "4 running pods", func() bool { ok, _ := allRunning(client, 4); return ok })
	if p, err := client.CoreV1().Pods("default").Get(ctx, unbound.Name, metav1.GetOptions{}); err != nil || p.Status.Phase != "" {
		t.Errorf("the unbound pod was touched: %v %v", p.Status.Phase, err)
	}
	if n := others.Load(); n < 5 {
		t.Errorf("the other component's handler saw %d pods, want 5", n)
	}
	if objs, _ := pods.GetIndexer().ByIndex(byNodeName, "node-0"); len(objs) != 2 {
		t.Errorf("node-0 has %d pods in the shared cache", len(objs))
	}
	cancel()
	wg.Wait()
	goroutinesEnd(t, baseline)
}

// The pod source's transform gives a new version of a pod the UID and name
// strings of the version its informer holds.
func TestSourceTransformSharesStringsWithThePriorVersion(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	tr := sourceTransform(intern.New(), storePrior(store))
	mk := func(rv string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string([]byte("web-1")), UID: "u-" + types.UID(string([]byte("1"))), ResourceVersion: rv}}
	}
	first, _ := tr(mk("1"))
	if err := store.Add(first); err != nil {
		t.Fatal(err)
	}
	second, _ := tr(mk("2"))
	a, b := first.(*v1.Pod), second.(*v1.Pod)
	if unsafe.StringData(string(a.UID)) != unsafe.StringData(string(b.UID)) || unsafe.StringData(a.Name) != unsafe.StringData(b.Name) {
		t.Error("the new version keeps its own UID and name strings")
	}
	if b.ResourceVersion != "2" {
		t.Errorf("resourceVersion %q", b.ResourceVersion)
	}
	empty := cache.NewStore(cache.MetaNamespaceKeyFunc)
	if out, _ := sourceTransform(intern.New(), storePrior(empty))(mk("3")); out.(*v1.Pod).UID != "u-1" {
		t.Error("a transform with no prior version changed the pod")
	}
}
