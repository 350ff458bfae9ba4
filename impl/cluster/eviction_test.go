package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestEvictionUnderMemoryPressure runs the API server, the controller
// manager and one simulated kubelet whose eviction manager observes every
// 100 ms. With memory.available set below the hard threshold, the pod
// using most above its request ends Failed/Evicted with DisruptionTarget,
// the node reports MemoryPressure and the node lifecycle controller taints
// it node.kubernetes.io/memory-pressure:NoSchedule; once memory is back
// and the transition period has passed, MemoryPressure turns False and the
// taint goes.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	kctx, kcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		kcancel()
		wg.Wait()
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	}()
	cs, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true,
		PressureTransitionPeriod: time.Second, MonitoringInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{PodCIDR: "10.244.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kubelet.New(kctx, cs, kubelet.Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24",
		RelistPeriod: 50 * time.Millisecond, NodeStatusUpdateFrequency: 200 * time.Millisecond, Eviction: &ecfg, Memory: resource.MustParse("4Gi")}, rt)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = k.Run(kctx) })

	pod := func(name, request, usage string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{eviction.AnnotationMemoryUsage: usage}},
			Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "app", Image: "nginx",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}}}}},
		}
	}
	for _, p := range []*v1.Pod{pod("hog", "64Mi", "512Mi"), pod("modest", "256Mi", "128Mi")} {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	getPod := func(name string) *v1.Pod {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	getNode := func() *v1.Node {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	condition := func(n *v1.Node, typ v1.NodeConditionType) v1.ConditionStatus {
		for _, c := range n.Status.Conditions {
			if c.Type == typ {
				return c.Status
			}
		}
		return ""
	}
	tainted := func(n *v1.Node) bool {
		for _, t := range n.Spec.Taints {
			if t.Key == v1.TaintNodeMemoryPressure && t.Effect == v1.TaintEffectNoSchedule {
				return true
			}
		}
		return false
	}
	wait("pods Running", func() bool {
		return getPod("hog").Status.Phase == v1.PodRunning && getPod("modest").Status.Phase == v1.PodRunning
	})
	if n := getNode(); condition(n, v1.NodeMemoryPressure) != v1.ConditionFalse || tainted(n) {
		t.Fatalf("node before pressure: %+v %+v", n.Status.Conditions, n.Spec.Taints)
	}

	q := resource.MustParse("50Mi")
	if err := k.SetAvailable(eviction.SignalMemoryAvailable, &q); err != nil {
		t.Fatal(err)
	}
	wait("hog evicted", func() bool { return getPod("hog").Status.Phase == v1.PodFailed })
	hog := getPod("hog")
	if hog.Status.Reason != "Evicted" || !strings.Contains(hog.Status.Message, "Container app was using 512Mi, request is 64Mi") {
		t.Fatalf("hog: %q %q", hog.Status.Reason, hog.Status.Message)
	}
	var dt *v1.PodCondition
	for i := range hog.Status.Conditions {
		if hog.Status.Conditions[i].Type == v1.DisruptionTarget {
			dt = &hog.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" {
		t.Fatalf("hog DisruptionTarget: %+v", dt)
	}
	wait("the Evicted event", func() bool {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "hog" && e.Reason == "Evicted" && e.Type == v1.EventTypeWarning && e.Message == hog.Status.Message &&
				e.Annotations["starved_resource"] == "memory" && e.Annotations["offending_containers"] == "app" {
				return true
			}
		}
		return false
	})
	wait("MemoryPressure=True and the memory-pressure taint", func() bool {
		n := getNode()
		return condition(n, v1.NodeMemoryPressure) == v1.ConditionTrue && tainted(n)
	})
	// The pressure persists: the next interval takes the other pod.
	wait("modest evicted", func() bool { return getPod("modest").Status.Phase == v1.PodFailed })

	if err := k.SetAvailable(eviction.SignalMemoryAvailable, nil); err != nil {
		t.Fatal(err)
	}
	wait("MemoryPressure=False and no taint", func() bool {
		n := getNode()
		return condition(n, v1.NodeMemoryPressure) == v1.ConditionFalse && !tainted(n)
	})
}
