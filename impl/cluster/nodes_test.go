package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/kubelet"
)

// TestSimulatedNodesShareOnePodWatch runs the controller manager, the
// scheduler and two simulated nodes with an audit log of every request,
// starts a pod, and reads who asked for what: pods are listed and watched
// by NodeSimulatorUser only (one informer for the kubelets, the controller
// manager and the scheduler), services by it and by no node, while the pod's status, the nodes, their
// leases and the kubelets' events are written by system:node:<name>. The
// kubelets' root directory holds the pod's volumes while it runs and is
// gone once the cluster stopped.
func TestSimulatedNodesShareOnePodWatch(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	c, cs, stop := startForTest(t, Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 2, Auth: AuthOptions{AuditPolicyFile: policy, AuditLogPath: auditLog}})
	root, tmpfs := c.KubeletRootDir()
	if onShm := isDir(shmDir); tmpfs != onShm || (tmpfs && !strings.HasPrefix(root, shmDir+"/")) {
		t.Errorf("kubelets' root %s (tmpfs %v); the machine has a tmpfs at %s: %v", root, tmpfs, shmDir, onShm)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	pod, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var node string
	deadline := time.Now().Add(time.Minute)
	for node == "" {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning {
			node = p.Spec.NodeName
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not Running after a minute: %+v", p.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The kubelet's events (Pulled, Created, Started) name the node as
	// their source.
	for {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs.Items {
			found = found || (e.Source.Component == "kubelet" && e.Source.Host == node && e.InvolvedObject.Name == "web")
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kubelet event from %s for the pod: %+v", node, evs.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pod's service account token volume is on the kubelets' root.
	if _, err := os.Stat(filepath.Join(root, "root", "pods", string(pod.UID), "volumes")); err != nil {
		t.Errorf("pod volumes not under the kubelets' root: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("kubelets' root %s still there after Stop: %v", root, err)
	}

	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string]map[string]int{"pods": {}, "services": {}} // resource → user → lists and watches
	writers := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			Verb      string
			User      struct{ Username string }
			ObjectRef *struct{ Resource, Subresource, Name string }
			Stage     string
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if ev.ObjectRef == nil {
			continue
		}
		r := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			r += "/" + ev.ObjectRef.Subresource
		}
		switch {
		case (r == "pods" || r == "services") && (ev.Verb == "list" || ev.Verb == "watch"):
			readers[r][ev.User.Username]++
		case ev.Verb == "create" || ev.Verb == "update" || ev.Verb == "patch":
			if writers[r] == nil {
				writers[r] = map[string]bool{}
			}
			writers[r][ev.User.Username] = true
		}
	}
	for _, r := range []string{"pods", "services"} {
		for user := range readers[r] {
			if user != NodeSimulatorUser && !(r == "services" && !strings.HasPrefix(user, NodeUserPrefix)) {
				t.Errorf("%s listed or watched %s (%d times); of the nodes only %s should", user, r, readers[r][user], NodeSimulatorUser)
			}
		}
		if readers[r][NodeSimulatorUser] == 0 {
			t.Errorf("%s never read %s; readers %v", NodeSimulatorUser, r, readers[r])
		}
	}
	for _, r := range []string{"pods/status", "nodes", "leases", "events"} {
		if !writers[r][NodeUserPrefix+node] {
			t.Errorf("%s not written by %s%s: writers %v", r, NodeUserPrefix, node, writers[r])
		}
		if writers[r][NodeSimulatorUser] {
			t.Errorf("%s written by %s", r, NodeSimulatorUser)
		}
	}
	waitGoroutines(t, before)
}

// TestSimulatedNodesRestartOnTheSameDataDir stops and starts a cluster with
// a simulated node on one data directory: the second start finds the
// simulator's role and binding already there and the kubelets' root
// directory (same path) emptied, a pod created before the restart is
// Running on the node after it, and the directory is gone after each stop.
func TestSimulatedNodesRestartOnTheSameDataDir(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Scheduler: true, Nodes: 1}
	var roots []string
	var firstContainer string // the container ID the first run reported
	for round := 0; round < 2; round++ {
		c, err := Start(ctx, cfg)
		if err != nil {
			t.Fatalf("start %d: %v", round+1, err)
		}
		root, _ := c.KubeletRootDir()
		roots = append(roots, root)
		cs, err := c.Client()
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
			if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(time.Minute)
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "kept", metav1.GetOptions{})
			// After the restart, Running again with a container of the new
			// (simulated, so empty) runtime, not the status kept from before.
			if err == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "node-1" &&
				len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID != firstContainer {
				firstContainer = p.Status.ContainerStatuses[0].ContainerID
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("start %d: pod not Running on node-1: %v %+v", round+1, err, p)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("start %d: kubelets' root %s still there after Stop: %v", round+1, root, err)
		}
	}
	if roots[0] != roots[1] {
		t.Errorf("kubelets' root moved from %s to %s on the same data directory", roots[0], roots[1])
	}
	waitGoroutines(t, before)
}

// TestSimulatedNodesWriteAllEvents starts pods on many simulated nodes at
// once and finds every kubelet event of every pod in the API, written by
// the pod's node (its source host); once the cluster stopped, no
// goroutine is left (each kubelet's event broadcaster ended with it).
//
// Each kubelet has its own broadcaster, as upstream's. Measured with
// client-go v0.37.2 (1,000 broadcasters with a sink writing nothing, a
// forced GC before and after): ~68 KiB heap (its two 1,000-event
// channels) and ~6 KiB of stacks (three goroutines) per broadcaster; 30
// pods per node with 4 events each add ~4.1 KiB per pod to the
// correlators' caches — as much as a shared correlator would hold if its
// 4,096 entries sufficed for every node's (and the old shared one, with
// 4,096 entries for 1,000 nodes, held ~0.2 KiB per pod).
func TestSimulatedNodesWriteAllEvents(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	const nodes, pods = 20, 100
	_, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Scheduler: true, Nodes: nodes})
	for i := 0; i < pods; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every pod's Pulled, Created and Started, from its node.
	want := []string{kubelet.EventPulled, kubelet.EventCreated, kubelet.EventStarted}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodeOf := map[string]string{}
		for _, p := range list.Items {
			nodeOf[p.Name] = p.Spec.NodeName
		}
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]map[string]bool{} // pod → reasons from its node's kubelet
		hosts := map[string]bool{}
		for _, e := range evs.Items {
			if e.Source.Component != kubelet.EventComponent || e.Source.Host == "" || e.Source.Host != nodeOf[e.InvolvedObject.Name] {
				continue
			}
			if got[e.InvolvedObject.Name] == nil {
				got[e.InvolvedObject.Name] = map[string]bool{}
			}
			got[e.InvolvedObject.Name][e.Reason] = true
			hosts[e.Source.Host] = true
		}
		var missing []string
		for i := 0; i < pods; i++ {
			name := fmt.Sprintf("p-%d", i)
			for _, r := range want {
				if !got[name][r] {
					missing = append(missing, name+" "+r)
				}
			}
		}
		if len(missing) == 0 {
			if len(hosts) < nodes/2 {
				t.Errorf("events from %d nodes only; the pods were spread over fewer nodes than expected", len(hosts))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes %d kubelet events missing, e.g. %v", len(missing), missing[:min(len(missing), 10)])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

// TestSimulatedNodesShareTheirConnections starts twenty simulated nodes:
// they authenticate with in-memory bearer tokens (no node credential is
// written to the data directory) and their requests share the nodes'
// transport, at most two connections for all of them, where a client
// certificate per node would take one connection each. A token is its
// node's identity for the Node authorizer and NodeRestriction: node-1
// may read its own Node but not change node-2's.
func TestSimulatedNodesShareTheirConnections(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	dir := t.TempDir()
	const nodes = 20
	c, cs, stop := startForTest(t, Config{DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: nodes})
	deadline := time.Now().Add(time.Minute)
	for {
		leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases.Items) == nodes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d node leases after a minute", len(leases.Items), nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if open := c.simNodes.conns.Load(); open < 1 || open > 2 {
		t.Errorf("the %d nodes hold %d connections, want 1 or 2", nodes, open)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "pki")); err != nil {
		t.Fatal(err)
	} else {
		for _, e := range entries {
			if e.Name() == "nodes" || (strings.HasPrefix(e.Name(), "node-") && !strings.HasPrefix(e.Name(), "node-simulator.")) {
				t.Errorf("node credential %s written to the data directory", e.Name())
			}
		}
	}

	node1, err := c.nodeClient("node-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node1.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{}); err != nil {
		t.Errorf("node-1 reading its own Node: %v", err)
	}
	other, err := cs.CoreV1().Nodes().Get(ctx, "node-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if other.Labels == nil {
		other.Labels = map[string]string{}
	}
	other.Labels["stolen"] = "yes"
	if _, err := node1.CoreV1().Nodes().Update(ctx, other, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node-1 updating node-2: err %v, want Forbidden", err)
	}
	if _, err := node1.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node-1 listing secrets: err %v, want Forbidden", err)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

// startForTest starts a cluster of cfg and its admin client. stop stops
// the cluster once; if the test ends first, its cleanup does.
func startForTest(t *testing.T, cfg Config) (*Cluster, kubernetes.Interface, func() error) {
	t.Helper()
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceValue(c.Stop)
	t.Cleanup(func() { _ = stop() })
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c, cs, stop
}
