package bench

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// The holders stand in for the full run's nodes against an API server of
// their own: each node exists with its Lease, the node simulator watches
// pods and services, and a pod bound to node-2 gets its kubelet events
// and Running status from node-2 — which the Node authorizer allows only
// node-2 — and node-2 watches its namespace's kube-root-ca.crt.
func TestHoldersActAsTheNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ccfg := cluster.UpConfig(filepath.Join(t.TempDir(), "cluster"))
	ccfg.BindAddress, ccfg.UnsafeNoFsync = "127.0.0.1:0", true
	ccfg.ControllerManager, ccfg.Scheduler, ccfg.Nodes = false, false, 0
	ccfg.NodeTokens = true
	c, err := cluster.Start(ctx, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	cs, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	tmpl := &upTemplates{
		node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{ready}}},
		lease: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: corev1.NamespaceNodeLease}},
		pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
		events: []corev1.Event{
			{Reason: "Scheduled", Source: corev1.EventSource{Component: "default-scheduler"}, Type: corev1.EventTypeNormal},
			{Reason: "Started", Source: corev1.EventSource{Component: kubelet.EventComponent}, Type: corev1.EventTypeNormal},
		},
	}
	h, err := startHolders(ctx, "", "", c, cs, 3, tmpl, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer h.stop()
	for i := 0; i < 3; i++ {
		name, cidr := cluster.SimulatedNode(i)
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || n.Spec.PodCIDR != cidr || len(n.Status.Conditions) != 1 {
			t.Fatalf("node %s: %+v %v", name, n, err)
		}
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != name {
			t.Fatalf("lease %s: %+v %v", name, l, err)
		}
	}

	ns := "holders"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureDefaultServiceAccount(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := BenchPod(ns, "p")
	pod.Spec.Volumes = []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}}}}}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: p.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodRunning {
			if !strings.HasPrefix(got.Status.PodIP, "10.244.1.") {
				t.Errorf("pod IP %q not from node-2's CIDR 10.244.1.0/24", got.Status.PodIP)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the pod never got its Running status")
		case <-time.After(20 * time.Millisecond):
		}
	}
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 || evs.Items[0].Reason != "Started" || evs.Items[0].Source.Host != "node-2" || evs.Items[0].InvolvedObject.UID != p.UID {
		t.Errorf("events %+v: want node-2's Started (the scheduler's are the control's to write)", evs.Items)
	}
	// The watches the API server serves: pods and services for the node
	// simulator, node-2's kube-root-ca.crt, and the API server's own of
	// its legacy token tracking ConfigMap (so two of configmaps: one alone
	// would not say node-2 watches).
	for r, want := range map[string]float64{"pods": 1, "services": 1, "configmaps": 2} {
		for watching(c, r) < want {
			select {
			case <-ctx.Done():
				t.Fatalf("no watch of %s", r)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	checkNoGoroutineLeak(t, before)
}

// watching is the API server's count of open watches of resource.
func watching(c *cluster.Cluster, resource string) float64 {
	mfs, err := c.Metrics.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_longrunning_requests" {
			continue
		}
		for _, m := range mf.GetMetric() {
			verb, res := "", ""
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "verb":
					verb = l.GetValue()
				case "resource":
					res = l.GetValue()
				}
			}
			if verb == "WATCH" && res == resource {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
