package controllermanager_test

import (
	"context"
	"fmt"
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
// with a fake clock against kubeproof's API server, over nodes in two
// zones: zone a has four nodes, two of whose Leases stop being renewed;
// zone b has one healthy node. Both silent nodes become Ready=Unknown with
// the unreachable NoSchedule taint at once, but their NoExecute taints
// come at most --node-eviction-rate (0.1 nodes/s) apart; no healthy node is
// tainted; a pod on a silent node is evicted after its 300 s default
// toleration.
func TestNodeLifecycleAgainstTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	restCfg := rest.CopyConfig(c.AdminConfig)
	// Standing in for the controller manager's: no warnings logged.
	controllermanager.QuietWarnings(restCfg)
	restCfg.QPS, restCfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	zones := map[string]string{"a1": "a", "a2": "a", "a3": "a", "a4": "a", "b1": "b"}
	silent := map[string]bool{"a1": true, "a2": true}
	for name, zone := range zones {
		now := metav1.NewTime(start)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
		node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		renew := metav1.NewMicroTime(start)
		holder := name
		if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// step advances the fake clock; the healthy kubelets renew their Leases.
	step := func(d time.Duration) {
		clk.Step(d)
		for name := range zones {
			if silent[name] {
				continue
			}
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			renew := metav1.NewMicroTime(clk.Now())
			l.Spec.RenewTime = &renew
			if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "a1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
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
	getNode := func(name string) *corev1.Node {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	taint := func(n *corev1.Node, key string, effect corev1.TaintEffect) *corev1.Taint {
		for i, t := range n.Spec.Taints {
			if t.Key == key && t.Effect == effect {
				return &n.Spec.Taints[i]
			}
		}
		return nil
	}
	unknown := func(n *corev1.Node) bool {
		for _, cnd := range n.Status.Conditions {
			if cnd.Type == corev1.NodeReady && cnd.Status == corev1.ConditionUnknown && cnd.Reason == "NodeStatusUnknown" {
				return true
			}
		}
		return false
	}
	// Step the fake clock in monitor periods until both silent nodes have
	// their NoExecute taint.
	eventually(t, "a1 and a2 unreachable with NoExecute taints", func() (bool, error) {
		if clk.Since(start) < 10*time.Minute {
			step(5 * time.Second)
		}
		for name := range silent {
			n := getNode(name)
			if !unknown(n) || taint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) == nil ||
				taint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if clk.Since(start) < 40*time.Second {
		t.Fatalf("unreachable after %v, before the 40 s grace period", clk.Since(start))
	}
	t1 := taint(getNode("a1"), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute).TimeAdded.Time
	t2 := taint(getNode("a2"), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute).TimeAdded.Time
	if gap := t1.Sub(t2).Abs(); gap < 10*time.Second {
		t.Fatalf("NoExecute taints %v apart in one zone, faster than --node-eviction-rate 0.1/s", gap)
	}
	for name := range zones {
		if n := getNode(name); !silent[name] && (len(n.Spec.Taints) != 0 || unknown(n)) {
			t.Fatalf("healthy node %s: taints %v", name, n.Spec.Taints)
		}
	}
	eventually(t, "pod p evicted after its toleration", func() (bool, error) {
		step(5 * time.Second)
		p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.DeletionTimestamp != nil, err
	})
	if waited := clk.Now().Sub(t1); waited < 300*time.Second {
		t.Fatalf("evicted %v after the taint, before the 300 s default toleration", waited)
	}
	// No kubelet finishes it: the pod stays terminating, marked as a
	// disruption target by the taint manager.
	p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var marked bool
	for _, c := range p.Status.Conditions {
		marked = marked || (c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByTaintManager")
	}
	if !marked {
		t.Fatalf("evicted pod's conditions %+v, want DisruptionTarget=True DeletionByTaintManager", p.Status.Conditions)
	}
}

// TestNodeLifecycleMarksPodsOnlyWhenItTurnsReadyUnknown drives the node
// lifecycle controller with a fake clock against kubeproof's API server:
// nodes down and sick report Ready=True when it starts; then sick's kubelet
// reports Ready=False, and both go silent; node up keeps renewing its
// Lease. As upstream's monitorNodeHealth, the controller records
// NodeNotReady for down (once) and marks its Ready pod not Ready with a
// Warning NodeNotReady, when it turns down's Ready from True to Unknown;
// sick's Ready pod keeps Ready and sick gets no NodeNotReady, neither while
// its kubelet reports False nor when the controller turns it Unknown. A
// Ready pod then bound to sick (pods/binding) is marked not Ready at once,
// as upstream's processPod marks a pod newly bound to a node not Ready.
func TestNodeLifecycleMarksPodsOnlyWhenItTurnsReadyUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	restCfg := rest.CopyConfig(c.AdminConfig)
	controllermanager.QuietWarnings(restCfg)
	restCfg.QPS, restCfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	clk := clocktesting.NewFakeClock(start)

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ready := map[string]corev1.ConditionStatus{"up": corev1.ConditionTrue, "down": corev1.ConditionTrue, "sick": corev1.ConditionTrue}
	for name, status := range ready {
		now := metav1.NewTime(start)
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		renew := metav1.NewMicroTime(start)
		holder := name
		if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A Running, Ready pod on each of down and sick.
	for _, node := range []string{"down", "sick"} {
		pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + node},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewTime(start)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// step advances the fake clock; up's kubelet renews its Lease.
	step := func(d time.Duration) {
		clk.Step(d)
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "up", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		renew := metav1.NewMicroTime(clk.Now())
		l.Spec.RenewTime = &renew
		if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
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
	nodeReady := func(name string) corev1.ConditionStatus {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cnd := range n.Status.Conditions {
			if cnd.Type == corev1.NodeReady {
				return cnd.Status
			}
		}
		return ""
	}
	podReady := func(name string) corev1.ConditionStatus {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cnd := range p.Status.Conditions {
			if cnd.Type == corev1.PodReady {
				return cnd.Status
			}
		}
		return ""
	}
	// notReadyEvents lists the NodeNotReady events of the node controller,
	// as "Kind/name type message xcount".
	notReadyEvents := func() (map[string]bool, error) {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, e := range list.Items {
			if e.Reason == "NodeNotReady" && e.Source.Component == "node-controller" {
				out[fmt.Sprintf("%s/%s %s %s x%d", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Message, e.Count)] = true
			}
		}
		return out, nil
	}

	// The controller's first pass records the three nodes Ready (and the
	// pods listed at its start are looked at as newly bound: nothing to
	// mark); then sick's kubelet reports Ready=False.
	eventually(t, "the first monitor pass", func() (bool, error) {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		registered := 0
		for _, e := range list.Items {
			if e.Reason == "RegisteredNode" {
				registered++
			}
		}
		return registered == len(ready), err
	})
	sick, err := cs.CoreV1().Nodes().Get(ctx, "sick", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(clk.Now())
	sick.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, sick, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "down and sick Ready=Unknown, down's pod not Ready", func() (bool, error) {
		if clk.Since(start) < 5*time.Minute {
			step(5 * time.Second)
		}
		return nodeReady("down") == corev1.ConditionUnknown && nodeReady("sick") == corev1.ConditionUnknown && podReady("on-down") == corev1.ConditionFalse, nil
	})
	if clk.Since(start) < 40*time.Second {
		t.Fatalf("Unknown after %v, before the 40 s grace period", clk.Since(start))
	}
	want := map[string]bool{
		"Node/down Normal Node down status is now: NodeNotReady x1": true,
		"Pod/on-down Warning Node is not ready x1":                  true,
	}
	eventually(t, "down's and its pod's NodeNotReady events", func() (bool, error) {
		got, err := notReadyEvents()
		if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			err = fmt.Errorf("events %v", got)
		}
		return err == nil, err
	})
	// A few more passes: nothing more.
	for range 3 {
		step(5 * time.Second)
	}
	time.Sleep(time.Second)
	if got, err := notReadyEvents(); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("NodeNotReady events %v (%v), want %v", got, err, want)
	}
	if got := podReady("on-sick"); got != corev1.ConditionTrue {
		t.Fatalf("the pod of the node whose kubelet reported Ready=False is Ready %s; want True (left alone)", got)
	}

	// A Ready pod bound to sick now is marked not Ready at once.
	late, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	late.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start)}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, late, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "sick"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["Pod/late Warning Node is not ready x1"] = true
	eventually(t, "the pod bound to sick not Ready, with its event", func() (bool, error) {
		got, err := notReadyEvents()
		if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			err = fmt.Errorf("events %v", got)
		}
		return err == nil && podReady("late") == corev1.ConditionFalse, err
	})
	if got := podReady("on-sick"); got != corev1.ConditionTrue {
		t.Fatalf("on-sick Ready %s after the binding of another pod; want True", got)
	}
}
