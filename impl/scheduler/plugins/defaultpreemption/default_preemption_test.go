package defaultpreemption_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins/defaultpreemption"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

// runPostFilter filters every node, then runs preemption on the result.
func runPostFilter(t *testing.T, pods []*v1.Pod, nodes []*v1.Node, pod *v1.Pod, opts ...fw.Option) (*fw.PostFilterResult, *fw.Status) {
	t.Helper()
	f, snap, err := fwtest.New(pods, nodes, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	state := fw.NewCycleState()
	if s := f.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	statuses := fw.NodeToStatus{}
	all, _ := snap.List()
	for _, ni := range all {
		if s := f.RunFilterPlugins(context.Background(), state, pod, ni); !s.IsSuccess() {
			statuses[ni.Name()] = s
		}
	}
	if len(statuses) < len(all) {
		t.Fatalf("pod fits somewhere already; statuses %v", statuses)
	}
	return f.RunPostFilterPlugins(context.Background(), state, pod, statuses)
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func node(name string) *v1.Node { return tu.Node(name).Capacity("cpu", "4", "memory", "16Gi").Obj() }

func TestPreemptsFewestLowestPriorityVictims(t *testing.T) {
	nodes := []*v1.Node{node("n1"), node("n2")}
	pods := []*v1.Pod{
		// n1: one priority-10 pod using all cpu.
		tu.Pod("n1-big").Req("cpu", "4").Priority(10).Node("n1").Obj(),
		// n2: four priority-5 pods of 1 cpu: the lowest highest-victim
		// priority wins, even with more victims than needed elsewhere.
		tu.Pod("n2-a").Req("cpu", "1").Priority(5).Node("n2").Obj(),
		tu.Pod("n2-b").Req("cpu", "1").Priority(5).Node("n2").Obj(),
		tu.Pod("n2-c").Req("cpu", "1").Priority(5).Node("n2").Obj(),
		tu.Pod("n2-d").Req("cpu", "1").Priority(5).Node("n2").Obj(),
	}
	pod := tu.Pod("vip").Req("cpu", "2").Priority(100).Obj()
	res, s := runPostFilter(t, pods, nodes, pod)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	if res.NominatedNodeName != "n2" {
		t.Errorf("nominated %q, want n2 (victims of priority 5 beat a victim of priority 10)", res.NominatedNodeName)
	}
	if len(res.Victims) != 2 {
		t.Errorf("victims %v, want exactly 2 of the 1-cpu pods (reprieve the rest)", names(res.Victims))
	}
}

func TestReprievesHigherPriorityPods(t *testing.T) {
	nodes := []*v1.Node{node("n1")}
	pods := []*v1.Pod{
		tu.Pod("p1").Req("cpu", "1").Priority(1).Node("n1").Obj(),
		tu.Pod("p2").Req("cpu", "1").Priority(2).Node("n1").Obj(),
		tu.Pod("p3").Req("cpu", "1").Priority(3).Node("n1").Obj(),
		tu.Pod("p4").Req("cpu", "1").Priority(4).Node("n1").Obj(),
	}
	res, s := runPostFilter(t, pods, nodes, tu.Pod("vip").Req("cpu", "2").Priority(100).Obj())
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	if got := names(res.Victims); strings.Join(got, ",") != "p1,p2" {
		t.Errorf("victims %v, want the two lowest priorities p1,p2", got)
	}
}

func TestNoPreemptionOfEqualOrHigherPriority(t *testing.T) {
	nodes := []*v1.Node{node("n1"), node("n2")}
	pods := []*v1.Pod{
		tu.Pod("a").Req("cpu", "4").Priority(100).Node("n1").Obj(),
		tu.Pod("b").Req("cpu", "4").Priority(200).Node("n2").Obj(),
	}
	res, s := runPostFilter(t, pods, nodes, tu.Pod("vip").Req("cpu", "2").Priority(100).Obj())
	if s.IsSuccess() || res != nil {
		t.Fatalf("preempted %v; nothing has lower priority", res)
	}
	want := "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
	if s.Message() != want {
		t.Errorf("message %q, want %q", s.Message(), want)
	}
}

func TestPreemptionNotHelpfulForUnresolvableNodes(t *testing.T) {
	nodes := []*v1.Node{node("n1"), tu.Node("tainted").Capacity("cpu", "4", "memory", "16Gi").Taint("k", "v", v1.TaintEffectNoSchedule).Obj()}
	pods := []*v1.Pod{tu.Pod("a").Req("cpu", "4").Priority(1).Node("n1").Obj(), tu.Pod("b").Req("cpu", "4").Priority(1).Node("tainted").Obj()}
	res, s := runPostFilter(t, pods, nodes, tu.Pod("vip").Req("cpu", "2").Priority(100).Obj())
	if !s.IsSuccess() || res.NominatedNodeName != "n1" {
		t.Fatalf("got %v %v, want n1 (the tainted node cannot be helped)", res, s)
	}
}

func TestPreemptionPolicyNever(t *testing.T) {
	nodes := []*v1.Node{node("n1")}
	pods := []*v1.Pod{tu.Pod("a").Req("cpu", "4").Priority(1).Node("n1").Obj()}
	pod := tu.Pod("vip").Req("cpu", "2").Priority(100).Obj()
	never := v1.PreemptNever
	pod.Spec.PreemptionPolicy = &never
	_, s := runPostFilter(t, pods, nodes, pod)
	if s.IsSuccess() || s.Message() != defaultpreemption.MsgPolicyNever {
		t.Errorf("got %v, want %q", s, defaultpreemption.MsgPolicyNever)
	}
}

func budgets(pdbs ...*policyv1.PodDisruptionBudget) fw.Option {
	return fw.WithPodDisruptionBudgets(func() ([]*policyv1.PodDisruptionBudget, error) { return pdbs, nil })
}

func budget(allowed int32, app string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestPreemptionPrefersNodesWithoutPDBViolations(t *testing.T) {
	nodes := []*v1.Node{node("n1"), node("n2")}
	pods := []*v1.Pod{
		tu.Pod("guarded").Req("cpu", "4").Priority(1).Label("app", "db").Node("n1").Obj(),
		tu.Pod("free").Req("cpu", "4").Priority(5).Label("app", "batch").Node("n2").Obj(),
	}
	vip := tu.Pod("vip").Req("cpu", "2").Priority(100).Obj()

	res, s := runPostFilter(t, pods, nodes, vip)
	if !s.IsSuccess() || res.NominatedNodeName != "n1" {
		t.Fatalf("without budgets: %v %v, want n1 (lowest priority victim)", res, s)
	}
	res, s = runPostFilter(t, pods, nodes, vip, budgets(budget(0, "db")))
	if !s.IsSuccess() || res.NominatedNodeName != "n2" || strings.Join(names(res.Victims), ",") != "free" {
		t.Fatalf("with db's budget exhausted: %v %v, want n2 evicting free", res, s)
	}
	// A budget that still allows a disruption is no obstacle.
	res, s = runPostFilter(t, pods, nodes, vip, budgets(budget(1, "db")))
	if !s.IsSuccess() || res.NominatedNodeName != "n1" {
		t.Fatalf("with a disruption allowed: %v %v, want n1", res, s)
	}
}

func TestPreemptionViolatesABudgetWhenNothingElseHelps(t *testing.T) {
	nodes := []*v1.Node{node("n1")}
	pods := []*v1.Pod{tu.Pod("guarded").Req("cpu", "4").Priority(1).Label("app", "db").Node("n1").Obj()}
	res, s := runPostFilter(t, pods, nodes, tu.Pod("vip").Req("cpu", "2").Priority(100).Obj(), budgets(budget(0, "db")))
	if !s.IsSuccess() || res.NominatedNodeName != "n1" || strings.Join(names(res.Victims), ",") != "guarded" {
		t.Fatalf("got %v %v: a budget steers preemption but does not forbid it", res, s)
	}
}

func TestVictimsOnANodeSpareBudgetedPodsFirst(t *testing.T) {
	nodes := []*v1.Node{node("n1")}
	pods := []*v1.Pod{
		tu.Pod("a").Req("cpu", "1").Priority(5).Label("app", "web").Node("n1").Obj(),
		tu.Pod("b").Req("cpu", "1").Priority(5).Label("app", "web").Node("n1").Obj(),
		tu.Pod("c").Req("cpu", "1").Priority(5).Label("app", "web").Node("n1").Obj(),
		tu.Pod("d").Req("cpu", "1").Priority(5).Label("app", "web").Node("n1").Obj(),
	}
	vip := tu.Pod("vip").Req("cpu", "2").Priority(100).Obj()
	res, s := runPostFilter(t, pods, nodes, vip)
	if !s.IsSuccess() || strings.Join(names(res.Victims), ",") != "c,d" {
		t.Fatalf("without budgets: %v %v, want the least important c,d", res, s)
	}
	// The budget allows one disruption, taken by a (the first, as all are
	// equally important); b, c and d would violate it, so they are given
	// back first and only d cannot be.
	res, s = runPostFilter(t, pods, nodes, vip, budgets(budget(1, "web")))
	if !s.IsSuccess() || strings.Join(names(res.Victims), ",") != "a,d" {
		t.Fatalf("with a budget of one: %v %v, want a,d", res, s)
	}
}
