// Package props checks the running implementation against the model
// (issue 6): randomized state-machine tests (pgregory.net/rapid) drive a real
// in-process cluster (impl/cluster: API server on embedded etcd, controller
// manager, scheduler, simulated kubelets) with user operations and node
// failures, and after every action an Observer snapshots the cluster through
// the API and the kubelets' runtimes, maps the snapshot to a model.State with
// the model's abstraction function (model.FromSnapshot) and checks every
// safety invariant of spec/README.md on it (RS-2, DEP-1, SCHED-2,
// KUBELET-1..4), plus implementation-level checks that need no model. A
// Recorder watches every pod, ReplicaSet and deployment change and checks the
// step properties on each observed change (SCHED-1: spec.nodeName is set at
// most once; KUBELET-5: a phase never leaves Succeeded or Failed; RS-2 on
// every pod version). Consecutive observed model states are validated as a
// behaviour of the model (TraceValidator: a best-first search for a path of
// model actions, taking only the user operations the harness did). Faults include
// node failure, cordons, etcd compaction and lagging, coalescing watches of
// one component (impl/faults transport hooks). After faults stop, every run
// must converge (LIVE-1, LIVE-2, LIVE-3) within a bounded time.
// TestMutantsAreCaught switches on each mutation of impl/faults' catalog and
// requires the harness to catch it (README.md has the table).
//
// Faults also include named crash points inside reconciles and component
// crashes (the harness runs the controller manager, scheduler and kubelets
// itself and restarts them without memory) and, in TestEtcdMemberLoss, the
// loss of a member of a 3-member etcd cluster. The recorder's History
// checks RS-1, DEP-2, SCHED-2 at bindings, SCHED-3 and the taint manager's
// part of GC-1 on the recorded versions; probes check STORE-1, STORE-4,
// GC-1/LIVE-2 and KUBELET-7.
//
// Budgets: `go test ./e2e/props/` runs three rapid runs of up to 10 actions,
// TestCrashPoints, TestEtcdMemberLoss and the mutation test (several
// minutes on a loaded 2-core machine). PROPS_CHECKS (runs per rapid.Check), PROPS_STEPS (actions per run)
// and PROPS_DURATION (repeat with fresh seeds until it has passed, e.g. 1h)
// make a campaign; rapid's own -rapid.checks and -rapid.seed
// flags win when given. A failure prints the shrunk action script, the last
// recorded changes with their resourceVersions, and rapid's seed and fail
// file (testdata/rapid/...), which -rapid.failfile replays; the timing of the
// components is not replayed, so a replay may need a few attempts.
package props

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// AppLabel is the label every deployment the harness creates selects its
// pods by; its value is the deployment's name.
const AppLabel = "app"

// Sandbox is one pod sandbox a node's runtime holds.
type Sandbox struct {
	ID, Node     string
	PodUID       string
	PodNamespace string
	PodName      string
	Ready        bool   // SANDBOX_READY: live, holding an IP
	IP           string // "" unless Ready
}

// Observation is what the harness saw of one namespace: the API objects and
// the sandboxes of every node runtime.
type Observation struct {
	Deployments []appsv1.Deployment
	// DeploymentStable[name] is false when the deployment's generation or
	// observedGeneration changed while the ReplicaSets were listed (its
	// surge bound is then not checked on this observation).
	DeploymentStable map[string]bool
	ReplicaSets      []appsv1.ReplicaSet
	Pods             []v1.Pod
	Nodes            []v1.Node
	// Consistent is true when the API objects are one state of the store:
	// listed twice in a row with no change in between (see Observe).
	Consistent bool
	// Sandboxes are those present, in the same state, both before and after
	// the API objects were listed: the runtime held them all along.
	Sandboxes []Sandbox
	// UnstableSandboxes counts sandboxes of the namespace that were in only
	// one of the two runtime listings, or changed between them: the
	// observation says nothing about them (so it is not a full abstract
	// state for trace validation).
	UnstableSandboxes int
}

// Observer lists a namespace's objects and the runtimes' sandboxes.
type Observer struct {
	Client    kubernetes.Interface
	Namespace string
	// Runtimes maps a node name to its kubelet's runtime.
	Runtimes map[string]runtime.Runtime
}

// observeAttempts bounds how often Observe lists again to get a consistent
// state, observeRetryPause how long it waits before another try.
const (
	observeAttempts   = 12
	observeRetryPause = 25 * time.Millisecond
)

// Observe takes one observation. Sandboxes are listed before and after the
// API objects and only those in both lists (same state) are kept, so that a
// sandbox created or removed while listing is never paired with an object
// list taken at another moment. The API objects (deployments, ReplicaSets,
// pods, nodes) are listed one kind after another, then again: when the
// second round shows every object at the same resourceVersion as the first
// (and node taints unchanged), nothing changed between the first list of
// the last kind and the second list of the first, so the lists are one
// state of the store (Consistent). Otherwise, or when a sandbox changed, it
// tries again a little later, a few times: the cluster is rarely still for
// long while it works, but often for the few milliseconds one try takes.
func (o *Observer) Observe(ctx context.Context) (*Observation, error) {
	var ob *Observation
	for attempt := 0; attempt < observeAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(observeRetryPause):
			}
		}
		var err error
		if ob, err = o.observeOnce(ctx); err != nil {
			return nil, err
		}
		if ob.Consistent && ob.UnstableSandboxes == 0 {
			break
		}
	}
	return ob, nil
}

func (o *Observer) observeOnce(ctx context.Context) (*Observation, error) {
	before, err := o.sandboxes(ctx)
	if err != nil {
		return nil, err
	}
	first, err := o.listObjects(ctx)
	if err != nil {
		return nil, err
	}
	ob, err := o.listObjects(ctx)
	if err != nil {
		return nil, err
	}
	after, err := o.sandboxes(ctx)
	if err != nil {
		return nil, err
	}
	ob.Consistent = first.versions() == ob.versions()
	ob.DeploymentStable = map[string]bool{}
	firstGen := map[string][2]int64{}
	for _, d := range first.Deployments {
		firstGen[d.Name] = [2]int64{d.Generation, d.Status.ObservedGeneration}
	}
	for _, d := range ob.Deployments {
		g, ok := firstGen[d.Name]
		ob.DeploymentStable[d.Name] = ok && g == [2]int64{d.Generation, d.Status.ObservedGeneration}
	}
	seen := map[string]Sandbox{}
	for _, s := range before {
		seen[s.ID] = s
	}
	stable := map[string]bool{}
	for _, s := range after {
		if b, ok := seen[s.ID]; ok && b == s && s.PodNamespace == o.Namespace {
			ob.Sandboxes = append(ob.Sandboxes, s)
			stable[s.ID] = true
		}
	}
	for _, list := range [][]Sandbox{before, after} {
		for _, s := range list {
			if s.PodNamespace == o.Namespace && !stable[s.ID] {
				ob.UnstableSandboxes++
			}
		}
	}
	return ob, nil
}

// listObjects lists the namespace's deployments, ReplicaSets and pods and
// the nodes, in that order.
func (o *Observer) listObjects(ctx context.Context) (*Observation, error) {
	deps, err := o.Client.AppsV1().Deployments(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	rss, err := o.Client.AppsV1().ReplicaSets(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing replicasets: %w", err)
	}
	pods, err := o.Client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	nodes, err := o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return &Observation{Deployments: deps.Items, ReplicaSets: rss.Items, Pods: pods.Items, Nodes: nodes.Items}, nil
}

// versions renders the identity of the listed state: every namespaced
// object's kind, name and resourceVersion, and every node's taints (a
// node's status changes with each heartbeat, which the abstraction does
// not look at).
func (ob *Observation) versions() string {
	var b strings.Builder
	for _, d := range ob.Deployments {
		fmt.Fprintf(&b, "d %s %s\n", d.Name, d.ResourceVersion)
	}
	for _, r := range ob.ReplicaSets {
		fmt.Fprintf(&b, "r %s %s\n", r.Name, r.ResourceVersion)
	}
	for _, p := range ob.Pods {
		fmt.Fprintf(&b, "p %s %s\n", p.Name, p.ResourceVersion)
	}
	for _, n := range ob.Nodes {
		fmt.Fprintf(&b, "n %s %v %v\n", n.Name, n.Spec.Taints, n.Spec.Unschedulable)
	}
	return b.String()
}

func (o *Observer) sandboxes(ctx context.Context) ([]Sandbox, error) {
	names := make([]string, 0, len(o.Runtimes))
	for n := range o.Runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Sandbox
	for _, node := range names {
		rt := o.Runtimes[node]
		list, err := rt.ListPodSandbox(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("listing sandboxes of %s: %w", node, err)
		}
		for _, s := range list {
			sb := Sandbox{ID: s.Id, Node: node, PodUID: s.Labels[runtime.LabelPodUID],
				Ready: s.State == runtimeapi.PodSandboxState_SANDBOX_READY}
			if s.Metadata != nil {
				sb.PodNamespace, sb.PodName = s.Metadata.Namespace, s.Metadata.Name
			}
			if sb.Ready {
				st, err := rt.PodSandboxStatus(ctx, s.Id)
				if errors.Is(err, runtime.ErrNotFound) {
					continue // removed since listed: not stable
				}
				if err != nil {
					return nil, fmt.Errorf("status of sandbox %s on %s: %w", s.Id, node, err)
				}
				if st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
					continue
				}
				if st.Network != nil {
					sb.IP = st.Network.Ip
				}
			}
			out = append(out, sb)
		}
	}
	return out, nil
}

// Terminal reports whether a pod phase is Succeeded or Failed.
func Terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// PodReady reports the pod's Ready condition.
func PodReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// ControllerOwners returns the pod's ownerReferences with controller=true.
func ControllerOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			out = append(out, r)
		}
	}
	return out
}

// image is the first container image of a pod template (the harness's
// deployments have one container and change only its image).
func image(spec *v1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	return spec.Containers[0].Image
}

func describePod(p *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s (uid %s, node %q, phase %s", p.Name, p.UID, p.Spec.NodeName, p.Status.Phase)
	if p.DeletionTimestamp != nil {
		b.WriteString(", terminating")
	}
	b.WriteString(")")
	return b.String()
}
