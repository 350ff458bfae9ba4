package controllermanager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestNodeLifecycleAgainstTheAPIServer drives the node lifecycle controller
// with a fake clock against kubeproof's API server: a node whose Lease stops
// being renewed becomes Ready=Unknown with the unreachable taints, and a pod
// on it is evicted after its 300 s default toleration.
func TestNodeLifecycleAgainstTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	restCfg := rest.CopyConfig(c.AdminConfig)
	restCfg.QPS, restCfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)

	now := metav1.NewTime(start)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	renew := metav1.NewMicroTime(start)
	holder := "n1"
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.Controllers = []string{controllermanager.NodeLifecycle}
	cfg.Clock = clk
	var wg sync.WaitGroup
	wg.Add(1)
	cmErr := make(chan error, 1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, cs, restCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()
	getNode := func() *corev1.Node {
		n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	hasTaint := func(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
		for _, t := range n.Spec.Taints {
			if t.Key == key && t.Effect == effect {
				return true
			}
		}
		return false
	}
	// Step the fake clock in monitor periods until the grace period has run out.
	eventually(t, "node n1 unreachable", func() (bool, error) {
		if clk.Since(start) < 5*time.Minute {
			clk.Step(5 * time.Second)
		}
		n := getNode()
		for _, cnd := range n.Status.Conditions {
			if cnd.Type == corev1.NodeReady && cnd.Status == corev1.ConditionUnknown && cnd.Reason == "NodeStatusUnknown" {
				return hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) && hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), nil
			}
		}
		return false, nil
	})
	if clk.Since(start) < 40*time.Second {
		t.Fatalf("unreachable after %v, before the 40 s grace period", clk.Since(start))
	}
	tainted := clk.Now()
	eventually(t, "pod p evicted after its toleration", func() (bool, error) {
		clk.Step(5 * time.Second)
		p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.DeletionTimestamp != nil, err
	})
	if waited := clk.Since(tainted); waited < 300*time.Second {
		t.Fatalf("evicted %v after the taint, before the 300 s default toleration", waited)
	}
}
