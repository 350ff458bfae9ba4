package kubectl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestControllersWithKubectl drives issue 4's controllers with nothing but
// kubectl, against a `kubeproof up` with the whole pipeline (controller
// manager, scheduler, three simulated nodes): create, rollout status, set
// image with the maxSurge/maxUnavailable bounds checked on every watched
// change, rollout undo, pause/resume, scale, delete with each cascade, and
// deleting a namespace with its contents.
func TestControllersWithKubectl(t *testing.T) {
	t.Parallel()
	p, err := startUpWith(filepath.Join(scratch, "data-controllers"), "--nodes", "3")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	k := func(t *testing.T, args ...string) string {
		t.Helper()
		return runWith(t, p, "", nil, args...)
	}
	waitNodesReady(t, p, "node-1", "node-2", "node-3")
	ns := "ctl"
	k(t, "create", "namespace", ns)
	kn := func(t *testing.T, args ...string) string {
		t.Helper()
		return k(t, append(args, "-n", ns)...)
	}

	t.Run("create and rollout status", func(t *testing.T) {
		kn(t, "create", "deployment", "web", "--image=nginx:1", "--replicas=20")
		out := kn(t, "rollout", "status", "deployment/web", "--timeout=90s")
		if !strings.Contains(out, `deployment "web" successfully rolled out`) {
			t.Fatalf("rollout status: %q", out)
		}
		if got := kn(t, "get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}/{.status.availableReplicas}/{.status.updatedReplicas}"); got != "20/20/20" {
			t.Fatalf("ready/available/updated = %s, want 20/20/20", got)
		}
		// Every pod is bound, and the scheduler spread them over the three
		// nodes (within capacity: 20 pods of the default 110 per node).
		nodes := strings.Fields(kn(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{\" \"}{end}"))
		used := map[string]int{}
		for _, n := range nodes {
			used[n]++
		}
		if len(nodes) != 20 || len(used) != 3 {
			t.Fatalf("pods on nodes %v, want 20 pods over the 3 nodes", used)
		}
		for _, reason := range []string{"ScalingReplicaSet", "SuccessfulCreate"} {
			if out := kn(t, "get", "events", "--field-selector=reason="+reason, "-o", "name"); strings.TrimSpace(out) == "" {
				t.Errorf("no %s event", reason)
			}
		}
		if got := kn(t, "get", "deployment", "web", "-o", "jsonpath={.spec.strategy.rollingUpdate.maxSurge}/{.spec.strategy.rollingUpdate.maxUnavailable}"); got != "25%/25%" {
			t.Fatalf("strategy %s, want the defaults 25%%/25%%", got)
		}
	})

	t.Run("set image within surge and unavailability bounds", func(t *testing.T) {
		// 20 replicas, 25%/25%: maxSurge and maxUnavailable are 5, so the
		// ReplicaSets' replicas never total more than 25 and never fewer
		// than 15 pods are available.
		rsWatch := startWatch[appsv1.ReplicaSet](t, p, "replicasets", ns, "app=web")
		podWatch := startWatch[corev1.Pod](t, p, "pods", ns, "app=web")
		podWatch.waitFor(t, "20 available pods in the watch", func(pods map[string]corev1.Pod) bool { return availablePods(pods) == 20 })
		rsWatch.waitFor(t, "the ReplicaSet in the watch", func(rs map[string]appsv1.ReplicaSet) bool { return len(rs) == 1 })
		// The watches' first events rebuild the current state one object
		// at a time; the bounds apply from the full state on.
		rsFrom, podsFrom := rsWatch.mark(), podWatch.mark()
		kn(t, "set", "image", "deployment/web", "nginx=nginx:2")
		kn(t, "rollout", "status", "deployment/web", "--timeout=90s")
		podWatch.waitFor(t, "20 available nginx:2 pods in the watch", func(pods map[string]corev1.Pod) bool {
			n := 0
			for _, p := range pods {
				if isAvailable(p) && p.Spec.Containers[0].Image == "nginx:2" {
					n++
				}
			}
			return n == 20
		})
		maxTotal, minAvail := 0, 20
		for _, st := range rsWatch.stop(t)[rsFrom-1:] {
			total := 0
			for _, rs := range st {
				total += int(*rs.Spec.Replicas)
			}
			maxTotal = max(maxTotal, total)
		}
		for _, st := range podWatch.stop(t)[podsFrom-1:] {
			minAvail = min(minAvail, availablePods(st))
		}
		t.Logf("during the rollout: at most %d replicas in the ReplicaSets' specs, at least %d pods available", maxTotal, minAvail)
		if maxTotal > 25 {
			t.Errorf("the ReplicaSets' replicas totalled %d, more than replicas + maxSurge = 25", maxTotal)
		}
		if minAvail < 15 {
			t.Errorf("only %d pods were available at one point, fewer than replicas - maxUnavailable = 15", minAvail)
		}
		if got := kn(t, "get", "deployment", "web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`); got != "2" {
			t.Errorf("revision %q after set image, want 2", got)
		}
	})

	t.Run("rollout undo", func(t *testing.T) {
		kn(t, "rollout", "undo", "deployment/web")
		kn(t, "rollout", "status", "deployment/web", "--timeout=90s")
		if got := kn(t, "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != "nginx:1" {
			t.Fatalf("image after undo %q, want nginx:1", got)
		}
		if got := kn(t, "get", "deployment", "web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`); got != "3" {
			t.Errorf("revision after undo %q, want 3", got)
		}
		// The revision-1 ReplicaSet was scaled back up, not a new one made.
		if got := strings.Fields(kn(t, "get", "rs", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.replicas}{\" \"}{end}")); len(got) != 2 {
			t.Errorf("ReplicaSets after undo: replicas %v, want 2 ReplicaSets", got)
		}
		if out := kn(t, "rollout", "history", "deployment/web"); !strings.Contains(out, "2 ") || !strings.Contains(out, "3 ") {
			t.Errorf("rollout history:\n%s", out)
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		kn(t, "rollout", "pause", "deployment/web")
		kn(t, "set", "image", "deployment/web", "nginx=nginx:3")
		gen := kn(t, "get", "deployment", "web", "-o", "jsonpath={.metadata.generation}")
		eventuallyKubectl(t, "the paused Deployment observed", func() bool {
			return kn(t, "get", "deployment", "web", "-o", "jsonpath={.status.observedGeneration}") == gen
		})
		if got := kn(t, "get", "deployment", "web", "-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].reason}`); got != "DeploymentPaused" {
			t.Errorf("Progressing reason %q while paused, want DeploymentPaused", got)
		}
		if imgs := kn(t, "get", "rs", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.template.spec.containers[0].image}{\" \"}{end}"); strings.Contains(imgs, "nginx:3") {
			t.Fatalf("a paused Deployment rolled out: ReplicaSet images %s", imgs)
		}
		kn(t, "rollout", "resume", "deployment/web")
		kn(t, "rollout", "status", "deployment/web", "--timeout=90s")
		if imgs := kn(t, "get", "pods", "-l", "app=web", "--field-selector=status.phase=Running", "-o", "jsonpath={range .items[*]}{.spec.containers[0].image}{\" \"}{end}"); strings.Count(imgs, "nginx:3") != 20 {
			t.Errorf("after resume, pod images %q, want 20 nginx:3", imgs)
		}
	})

	t.Run("scale", func(t *testing.T) {
		for _, n := range []string{"50", "5"} {
			kn(t, "scale", "deployment/web", "--replicas="+n)
			kn(t, "rollout", "status", "deployment/web", "--timeout=90s")
			eventuallyKubectl(t, n+" pods", func() bool {
				return len(livePods(t, p, ns, "app=web")) == atoi(t, n)
			})
			// The Deployment's status follows its ReplicaSet's, which follows
			// the pods: rollout status may return on a status not yet
			// caught up with a scale-down (every replica is updated and
			// available), so it converges a moment after the pods.
			eventuallyKubectl(t, "available "+n, func() bool {
				return kn(t, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}") == n
			})
		}
	})

	t.Run("delete with each cascade", func(t *testing.T) {
		for _, name := range []string{"bg", "fg", "orphan"} {
			kn(t, "create", "deployment", name, "--image=nginx", "--replicas=2")
		}
		for _, name := range []string{"bg", "fg", "orphan"} {
			kn(t, "rollout", "status", "deployment/"+name, "--timeout=90s")
		}
		rsOf := func(app string) []string {
			return strings.Fields(kn(t, "get", "rs", "-l", "app="+app, "-o", "jsonpath={range .items[*]}{.metadata.name}{\" \"}{end}"))
		}
		kn(t, "delete", "deployment", "bg", "--cascade=background")
		kn(t, "delete", "deployment", "fg", "--cascade=foreground") // waits for the Deployment, which waits for its dependents
		if rs := rsOf("fg"); len(rs) != 0 {
			t.Errorf("foreground: ReplicaSets %v still there once the Deployment is gone", rs)
		}
		for _, app := range []string{"bg", "fg"} {
			eventuallyKubectl(t, app+"'s ReplicaSet and pods collected", func() bool {
				return len(rsOf(app)) == 0 && len(livePods(t, p, ns, "app="+app)) == 0
			})
		}
		rs := rsOf("orphan")
		kn(t, "delete", "deployment", "orphan", "--cascade=orphan")
		if got := rsOf("orphan"); len(rs) != 1 || len(got) != 1 || got[0] != rs[0] {
			t.Fatalf("orphan: ReplicaSets %v before, %v after", rs, got)
		}
		if refs := kn(t, "get", "rs", rs[0], "-o", "jsonpath={.metadata.ownerReferences}"); refs != "" {
			t.Errorf("orphaned ReplicaSet still has owner references %s", refs)
		}
		if n := len(livePods(t, p, ns, "app=orphan")); n != 2 {
			t.Errorf("orphan: %d pods left, want 2", n)
		}
		// The orphaned ReplicaSet still runs its pods: deleting one brings
		// a replacement.
		pod := livePods(t, p, ns, "app=orphan")[0]
		kn(t, "delete", "pod", pod, "--wait=false")
		eventuallyKubectl(t, "the orphaned ReplicaSet replacing its pod", func() bool {
			pods := livePods(t, p, ns, "app=orphan")
			return len(pods) == 2 && pods[0] != pod && pods[1] != pod
		})
	})

	t.Run("delete namespace with contents", func(t *testing.T) {
		k(t, "create", "namespace", "doomed")
		k(t, "create", "deployment", "inside", "--image=nginx", "--replicas=2", "-n", "doomed")
		k(t, "create", "configmap", "c", "--from-literal=a=b", "-n", "doomed")
		k(t, "rollout", "status", "deployment/inside", "-n", "doomed", "--timeout=90s")
		k(t, "delete", "namespace", "doomed", "--timeout=90s")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, errOut, err := p.kubectl(ctx, "", nil, "get", "namespace", "doomed"); err == nil || !strings.Contains(errOut, `namespaces "doomed" not found`) {
			t.Fatalf("namespace doomed after delete: %v %s", err, errOut)
		}
		if out := k(t, "get", "pods,rs,deployments,configmaps", "-n", "doomed", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Fatalf("left in the deleted namespace:\n%s", out)
		}
	})
}

// TestNodeFailureWithKubectl: a node registered through kubectl whose
// kubelet never comes back (no Lease renewals, no status updates) becomes
// Ready=Unknown after --node-monitor-grace-period, gets the unreachable
// taints, and its pod is evicted after its tolerationSeconds — but not the
// one tolerating the taint forever. With two healthy nodes in the same
// (unlabelled) zone, the zone is Normal, so the taint is not held back.
// The grace period stays above the simulated kubelets' 10 s Lease renewal
// interval: shorter, the healthy nodes would flap to Unknown too, the whole
// cluster would count as fully disrupted, and evictions would stop.
func TestNodeFailureWithKubectl(t *testing.T) {
	t.Parallel()
	p, err := startUpWith(filepath.Join(scratch, "data-nodefail"), "--nodes", "2", "--node-monitor-grace-period", "25s")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	k := func(args ...string) string {
		t.Helper()
		return runWith(t, p, "", nil, args...)
	}
	kin := func(stdin string, args ...string) string {
		t.Helper()
		return runWith(t, p, stdin, nil, args...)
	}
	defer func() {
		if t.Failed() {
			t.Logf("node ghost:\n%s\nkubeproof up:\n%s", k("get", "node", "ghost", "-o", "yaml"), p.log())
		}
	}()
	waitNodesReady(t, p, "node-1", "node-2")
	// The ghost node posts one Ready status, then nothing.
	kin(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"ghost"}}`, "create", "-f", "-")
	now := time.Now().UTC().Format(time.RFC3339)
	k("patch", "node", "ghost", "--subresource=status", "--type=merge", "-p",
		`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ready","lastHeartbeatTime":"`+now+`","lastTransitionTime":"`+now+`"}]}}`)
	pod := func(name, tolerationSeconds string) string {
		secs := ""
		if tolerationSeconds != "" {
			secs = `,"tolerationSeconds":` + tolerationSeconds
		}
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"default"},"spec":{"nodeName":"ghost",` +
			`"containers":[{"name":"c","image":"nginx"}],"tolerations":[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"` + secs + `}]}}`
	}
	kin(pod("short", "2"), "create", "-f", "-")
	kin(pod("forever", ""), "create", "-f", "-")

	k("wait", "--for=condition=Ready=Unknown", "node/ghost", "--timeout=90s")
	eventuallyKubectl(t, "the unreachable NoExecute taint on ghost", func() bool {
		return strings.Contains(k("get", "node", "ghost", "-o", "jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}"), "node.kubernetes.io/unreachable:NoExecute")
	})
	if reason := k("get", "node", "ghost", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`); reason != "NodeStatusUnknown" {
		t.Errorf("Ready reason %q, want NodeStatusUnknown", reason)
	}
	// Evicted: deleted gracefully, so it stays Terminating until a kubelet
	// confirms — which on a lost node never comes (as in Kubernetes).
	eventuallyKubectl(t, "pod short evicted", func() bool {
		return k("get", "pod", "short", "--ignore-not-found", "-o", "jsonpath={.metadata.deletionTimestamp}") != "" ||
			strings.TrimSpace(k("get", "pod", "short", "--ignore-not-found", "-o", "name")) == ""
	})
	// The healthy nodes are untouched, and the pod that tolerates the
	// taint forever stays.
	for _, n := range []string{"node-1", "node-2"} {
		if taints := k("get", "node", n, "-o", "jsonpath={.spec.taints}"); taints != "" {
			t.Errorf("healthy %s has taints %s", n, taints)
		}
	}
	if got := k("get", "pod", "forever", "-o", "jsonpath={.metadata.deletionTimestamp}"); got != "" {
		t.Errorf("the pod tolerating forever is being deleted (%s)", got)
	}
	if out := k("get", "events", "-n", "default", "--field-selector=involvedObject.name=short", "-o", "jsonpath={range .items[*]}{.reason}{\" \"}{end}"); !strings.Contains(out, "TaintManagerEviction") {
		t.Errorf("no TaintManagerEviction event for the evicted pod (events: %s)", out)
	}
}

// startUpWith starts `kubeproof up --port 0 --data-dir dataDir` with every
// component and the extra flags, and waits for its kubeconfig (as
// startUpWithNodes, which takes no flags).
func startUpWith(dataDir string, flags ...string) (*upProcess, error) {
	p := &upProcess{dataDir: dataDir, done: make(chan struct{})}
	p.cmd = exec.Command(kubeproofPath, append([]string{"up", "--port", "0", "--data-dir", dataDir}, flags...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.output}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kubeproof up: %w", err)
	}
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.output.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	timeout := time.After(2 * time.Minute)
	for p.kubeconfig == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				<-p.done
				return nil, fmt.Errorf("kubeproof up exited before printing its kubeconfig (%v):\n%s", p.err, p.log())
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "kubeconfig:"); ok {
				p.kubeconfig = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "API server:"); ok {
				p.url = strings.TrimSpace(v)
			}
		case <-timeout:
			_ = p.cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("kubeproof up printed no kubeconfig within 2m:\n%s", p.log())
		}
	}
	return p, nil
}

// waitNodesReady waits until the named nodes are registered and Ready.
func waitNodesReady(t *testing.T, p *upProcess, names ...string) {
	t.Helper()
	for _, n := range names {
		eventuallyKubectl(t, "node "+n+" registered", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _, err := p.kubectl(ctx, "", nil, "get", "node", n)
			return err == nil
		})
		runWith(t, p, "", nil, "wait", "--for=condition=Ready", "node/"+n, "--timeout=60s")
	}
}

// eventuallyKubectl polls cond for up to 90 s.
func eventuallyKubectl(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// livePods are the names of the pods matching selector that are not being
// deleted.
func livePods(t *testing.T, p *upProcess, ns, selector string) []string {
	t.Helper()
	out := runWith(t, p, "", nil, "get", "pods", "-n", ns, "-l", selector, "-o",
		`jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.deletionTimestamp}{"\n"}{end}`)
	var live []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 1 {
			live = append(live, f[0])
		}
	}
	return live
}

func isAvailable(p corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func availablePods(pods map[string]corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if isAvailable(p) {
			n++
		}
	}
	return n
}

// kubectlWatch is `kubectl get RESOURCE -w --output-watch-events -o json`
// running in the background: every event updates a map of the objects by
// name, and a copy of the map after each event is kept in order.
type kubectlWatch[T any] struct {
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	states []map[string]T
	cur    map[string]T
}

func startWatch[T any](t *testing.T, p *upProcess, resource, ns, selector string) *kubectlWatch[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlPath, "get", resource, "-n", ns, "-l", selector, "--watch", "--output-watch-events", "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig, "KUBECACHEDIR="+filepath.Join(scratch, "cache"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &kubectlWatch[T]{cancel: cancel, done: make(chan error, 1), cur: map[string]T{}}
	go func() {
		dec := json.NewDecoder(stdout)
		var derr error
		for {
			var ev struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					derr = fmt.Errorf("decoding kubectl watch output: %w", err)
				}
				break
			}
			var obj T
			var meta struct {
				Metadata struct{ Name string } `json:"metadata"`
			}
			if err := json.Unmarshal(ev.Object, &obj); err != nil {
				derr = err
				break
			}
			_ = json.Unmarshal(ev.Object, &meta)
			w.mu.Lock()
			next := make(map[string]T, len(w.cur)+1)
			for k, v := range w.cur {
				next[k] = v
			}
			if ev.Type == "DELETED" {
				delete(next, meta.Metadata.Name)
			} else {
				next[meta.Metadata.Name] = obj
			}
			w.cur = next
			w.states = append(w.states, next)
			w.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
		werr := cmd.Wait()
		if derr == nil && ctx.Err() == nil && werr != nil {
			derr = fmt.Errorf("kubectl watch exited: %w", werr)
		}
		w.done <- derr
	}()
	t.Cleanup(cancel)
	return w
}

// waitFor waits until the watched state satisfies cond.
func (w *kubectlWatch[T]) waitFor(t *testing.T, what string, cond func(map[string]T) bool) {
	t.Helper()
	eventuallyKubectl(t, what, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return cond(w.cur)
	})
}

// mark is the number of states seen so far.
func (w *kubectlWatch[T]) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.states)
}

// stop ends the watch and returns every state it saw.
func (w *kubectlWatch[T]) stop(t *testing.T) []map[string]T {
	t.Helper()
	w.cancel()
	if err := <-w.done; err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.states
}
