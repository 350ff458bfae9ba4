package kubectl

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeproof/kubeproof/impl/controller/disruption"
)

// TestPodDisruptionBudgetWithKubectl: `kubectl create pdb`, `kubectl get
// pdb` with kubectl's columns, and `kubectl drain --ignore-daemonsets` of
// a simulated node (Node object, pods bound to it and marked Ready with
// kubectl patch --subresource=status) blocked by the budget until
// replacement pods elsewhere are Ready. The disruption controller runs in
// this test process against the shared server (which runs no controller
// manager).
func TestPodDisruptionBudgetWithKubectl(t *testing.T) {
	ns := createNamespace(t, "pdb")
	runIn(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n", "apply", "-n", ns, "-f", "-")
	for _, n := range []string{"pdb-node-a", "pdb-node-b"} {
		runIn(t, "apiVersion: v1\nkind: Node\nmetadata:\n  name: "+n+"\n", "apply", "-f", "-")
	}
	readyPod := func(name, node string) {
		t.Helper()
		runIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: web}}
spec:
  nodeName: %s
  containers: [{name: c, image: nginx}]
`, name, node), "apply", "-n", ns, "-f", "-")
		run(t, "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
			"-p", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)
	}
	for _, p := range []string{"web-1", "web-2", "web-3"} {
		readyPod(p, "pdb-node-a")
	}
	if out := run(t, "create", "pdb", "web", "-n", ns, "--selector=app=web", "--min-available=2"); !strings.Contains(out, "poddisruptionbudget.policy/web created") {
		t.Fatalf("kubectl create pdb: %s", out)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", server.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	ctrl, err := disruption.New(cs, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ctrl.Run(ctx, 1); err != nil {
			t.Errorf("disruption controller: %v", err)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}()

	allowed := func(want string) func() bool {
		return func() bool { return jsonpath(t, "{.status.disruptionsAllowed}", "get", "pdb", "web", "-n", ns) == want }
	}
	eventuallyKubectl(t, "the budget to allow one disruption", allowed("1"))
	table := run(t, "get", "pdb", "-n", ns)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE" ||
		strings.Join(strings.Fields(lines[1])[:4], " ") != "web 2 N/A 1" {
		t.Fatalf("kubectl get pdb:\n%s", table)
	}

	type result struct {
		out, errOut string
		err         error
	}
	drained := make(chan result, 1)
	drainCtx, stopDrain := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stopDrain()
	go func() {
		out, errOut, err := server.kubectl(drainCtx, "", nil, "drain", "pdb-node-a", "--ignore-daemonsets", "--force",
			"--grace-period=0", "--timeout=170s")
		drained <- result{out, errOut, err}
	}()
	podsOnA := func() int {
		out := run(t, "get", "pods", "-n", ns, "--field-selector=spec.nodeName=pdb-node-a", "-o", "name")
		return len(strings.Fields(out))
	}
	eventuallyKubectl(t, "one pod evicted", func() bool { return podsOnA() == 2 })
	eventuallyKubectl(t, "the budget to allow none", allowed("0"))
	select {
	case r := <-drained:
		t.Fatalf("drain finished while the budget forbids it: %v\n%s\n%s", r.err, r.out, r.errOut)
	default:
	}
	if n := podsOnA(); n != 2 {
		t.Fatalf("%d pods on the drained node while no disruption is allowed, want 2", n)
	}

	readyPod("web-4", "pdb-node-b")
	readyPod("web-5", "pdb-node-b")
	select {
	case r := <-drained:
		if r.err != nil {
			t.Fatalf("kubectl drain: %v\n%s\n%s", r.err, r.out, r.errOut)
		}
		if !strings.Contains(r.out, "node/pdb-node-a drained") ||
			!strings.Contains(r.errOut, "Cannot evict pod as it would violate the pod's disruption budget.") {
			t.Errorf("kubectl drain output:\n%s\n%s", r.out, r.errOut)
		}
	case <-drainCtx.Done():
		t.Fatal("kubectl drain did not finish once replacements were Ready")
	}
	if n := podsOnA(); n != 0 {
		t.Fatalf("%d pods left on the drained node", n)
	}
}
