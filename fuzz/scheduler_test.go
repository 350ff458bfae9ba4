package fuzz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

// scheduleSeed is the tie-breaking seed every run uses.
const scheduleSeed = 7

// FuzzScheduler decodes a handful of nodes (capacity, zone label, taints,
// cordon), pods already on them (requests, labels, host ports, required
// anti-affinity) and a pending pod (requests, node selector, tolerations,
// node affinity, host port, topology spread, pod anti-affinity) from the
// fuzzer's bytes and schedules the pod with the default profile.
// Properties:
//   - nothing panics, and the only failure is a FitError;
//   - the pod fails to fit exactly when no node passes every filter;
//   - a chosen node passes every filter, and the pod's requests fit its
//     allocatable cpu, memory and pod count next to the pods already there;
//   - listing the nodes in reverse order gives the same feasible nodes and
//     the same score for each, so the choice differs only among nodes with
//     the top score (the documented tie-break, reproducible by seed).
func FuzzScheduler(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 4, 2, 5, 0, 0, 0, 2, 1, 1, 1, 0, 3, 3, 2, 2, 1, 1})
	f.Add([]byte{5, 1, 1, 5, 1, 1, 0, 3, 3, 2, 5, 1, 9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte("\x06\xff\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &input{data: data}
		nodes, existing, pod := decodeCluster(in)
		ctx := context.Background()

		first := scheduleOnce(t, ctx, nodes, existing, pod)
		reversed := slices.Clone(nodes)
		slices.Reverse(reversed)
		second := scheduleOnce(t, ctx, reversed, existing, pod)

		if !slices.Equal(first.feasible, second.feasible) {
			t.Fatalf("feasible nodes depend on node order: %v vs %v\n%s", first.feasible, second.feasible, describe(nodes, existing, pod))
		}
		for n, s := range first.scores {
			if second.scores[n] != s {
				t.Fatalf("score of %s depends on node order: %d vs %d\n%s", n, s, second.scores[n], describe(nodes, existing, pod))
			}
		}
		if (first.host == "") != (second.host == "") {
			t.Fatalf("scheduling succeeded in one node order only: %q vs %q", first.host, second.host)
		}
		if first.host != "" && first.scores[first.host] != first.scores[second.host] {
			t.Fatalf("node order changed the chosen node's score: %s (%d) vs %s (%d)", first.host, first.scores[first.host], second.host, first.scores[second.host])
		}
	})
}

// outcome is one scheduling of the pod: the chosen host ("" if none), the
// nodes passing every filter (sorted) and each feasible node's total score.
type outcome struct {
	host     string
	feasible []string
	scores   map[string]int64
}

func scheduleOnce(t *testing.T, ctx context.Context, nodes []*v1.Node, existing []*v1.Pod, pod *v1.Pod) outcome {
	t.Helper()
	fwk, snap, err := fwtest.New(existing, nodes, nil)
	if err != nil {
		t.Fatalf("building framework: %v", err)
	}
	res, err := scheduler.NewAlgorithm(100, scheduleSeed).SchedulePod(ctx, fwk, fw.NewCycleState(), pod.DeepCopy(), snap)
	var fitErr *fw.FitError
	if err != nil && !errors.As(err, &fitErr) {
		t.Fatalf("scheduling failed with %v, not a FitError\n%s", err, describe(nodes, existing, pod))
	}

	// The oracle: every filter, node by node, on a fresh cycle state.
	out := outcome{host: res.SuggestedHost, scores: map[string]int64{}}
	state := fw.NewCycleState()
	all, _ := snap.List()
	var feasible []*fw.NodeInfo
	if s := fwk.RunPreFilterPlugins(ctx, state, pod); s.IsSuccess() {
		for _, ni := range all {
			if fwk.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
				feasible = append(feasible, ni)
				out.feasible = append(out.feasible, ni.Name())
			}
		}
	} else if !s.IsRejected() {
		t.Fatalf("PreFilter failed: %v", s.AsError())
	}
	slices.Sort(out.feasible)
	if (err != nil) != (len(feasible) == 0) {
		t.Fatalf("scheduling error %v, but %d nodes pass every filter: %v\n%s", err, len(feasible), out.feasible, describe(nodes, existing, pod))
	}
	if len(feasible) > 0 {
		if s := fwk.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
			t.Fatalf("PreScore failed: %v", s.AsError())
		}
		scores, s := fwk.RunScorePlugins(ctx, state, pod, feasible)
		if !s.IsSuccess() {
			t.Fatalf("Score failed: %v", s.AsError())
		}
		for i, ni := range feasible {
			out.scores[ni.Name()] = scores[i]
		}
	}
	if out.host == "" {
		return out
	}
	if !slices.Contains(out.feasible, out.host) {
		t.Fatalf("chose %s, which fails a filter; feasible: %v\n%s", out.host, out.feasible, describe(nodes, existing, pod))
	}
	if len(feasible) > 1 {
		for n, s := range out.scores {
			if s > out.scores[out.host] {
				t.Fatalf("chose %s (score %d) over %s (score %d)\n%s", out.host, out.scores[out.host], n, s, describe(nodes, existing, pod))
			}
		}
	}
	ni, err := snap.Get(out.host)
	if err != nil {
		t.Fatalf("chosen node %s not in the snapshot: %v", out.host, err)
	}
	checkCapacity(t, ni, pod)
	return out
}

// checkCapacity requires pod to fit ni's allocatable next to its pods.
func checkCapacity(t *testing.T, ni *fw.NodeInfo, pod *v1.Pod) {
	t.Helper()
	alloc := fw.NewResource(ni.Node().Status.Allocatable)
	var used fw.Resource
	for _, p := range ni.Pods {
		r, _ := fw.PodRequests(p.Pod)
		used.MilliCPU += r.MilliCPU
		used.Memory += r.Memory
	}
	want, _ := fw.PodRequests(pod)
	if want.MilliCPU > 0 && used.MilliCPU+want.MilliCPU > alloc.MilliCPU {
		t.Fatalf("placed on %s beyond cpu: %dm used + %dm > %dm", ni.Name(), used.MilliCPU, want.MilliCPU, alloc.MilliCPU)
	}
	if want.Memory > 0 && used.Memory+want.Memory > alloc.Memory {
		t.Fatalf("placed on %s beyond memory: %d used + %d > %d", ni.Name(), used.Memory, want.Memory, alloc.Memory)
	}
	if len(ni.Pods)+1 > alloc.AllowedPodNumber {
		t.Fatalf("placed on %s beyond its pod count: %d pods, %d allowed", ni.Name(), len(ni.Pods)+1, alloc.AllowedPodNumber)
	}
}

var (
	zones     = []string{"zone-a", "zone-b", "zone-c"}
	appLabels = []string{"web", "db"}
	taints    = []v1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Effect: v1.TaintEffectNoExecute},
	}
	tolerations = []v1.Toleration{
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: v1.TolerationOpExists},
		{Operator: v1.TolerationOpExists},
		{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	}
	cpus      = []string{"0", "500m", "1", "2", "4"}
	memories  = []string{"0", "512Mi", "1Gi", "4Gi"}
	podCounts = []string{"0", "1", "2", "3", "110"}
	cpuReqs   = []string{"", "100m", "250m", "1", "3"}
	memReqs   = []string{"", "128Mi", "512Mi", "2Gi"}
)

// decodeCluster builds nodes, the pods on them and a pending pod from in.
func decodeCluster(in *input) ([]*v1.Node, []*v1.Pod, *v1.Pod) {
	var nodes []*v1.Node
	for i := range 1 + in.intn(6) {
		w := testutil.Node(fmt.Sprintf("node-%d", i)).
			Capacity("cpu", pick(in, cpus), "memory", pick(in, memories), "pods", pick(in, podCounts)).
			Label(v1.LabelTopologyZone, pick(in, zones))
		if in.intn(3) == 0 {
			w.Label("disk", "ssd")
		}
		if in.intn(4) == 0 {
			t := pick(in, taints)
			w.Taint(t.Key, t.Value, t.Effect)
		}
		if in.intn(8) == 0 {
			w.Unschedulable()
		}
		nodes = append(nodes, w.Obj())
	}
	var existing []*v1.Pod
	for i := range in.intn(8) {
		p := testutil.Pod(fmt.Sprintf("running-%d", i)).Node(nodes[in.intn(len(nodes))].Name).Label("app", pick(in, appLabels))
		requests(in, p)
		if in.intn(4) == 0 {
			p.HostPort(8080, v1.ProtocolTCP, "")
		}
		if in.intn(6) == 0 {
			p.Affinity(antiAffinity(pick(in, appLabels)))
		}
		existing = append(existing, p.Obj())
	}
	p := testutil.Pod("pending").Label("app", pick(in, appLabels))
	requests(in, p)
	if in.intn(4) == 0 {
		p.NodeSelector(map[string]string{"disk": "ssd"})
	}
	for range in.intn(3) {
		p.Toleration(pick(in, tolerations))
	}
	switch in.intn(6) {
	case 1:
		p.Affinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{pick(in, zones), pick(in, zones)}}}}}}}})
	case 2:
		p.Affinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: int32(1 + in.intn(100)), Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: "disk", Operator: v1.NodeSelectorOpExists}}}}}}})
	case 3:
		p.Affinity(antiAffinity(pick(in, appLabels)))
	}
	if in.intn(4) == 0 {
		p.HostPort(8080, v1.ProtocolTCP, "")
	}
	if in.intn(3) == 0 {
		when := pick(in, []v1.UnsatisfiableConstraintAction{v1.DoNotSchedule, v1.ScheduleAnyway})
		p.Spread(int32(1+in.intn(2)), pick(in, []string{v1.LabelTopologyZone, v1.LabelHostname}), when, "app", pick(in, appLabels))
	}
	return nodes, existing, p.Obj()
}

// requests gives the pod's container fuzzed cpu and memory requests.
func requests(in *input, p *testutil.PodWrapper) {
	if c := pick(in, cpuReqs); c != "" {
		p.Req("cpu", c)
	}
	if m := pick(in, memReqs); m != "" {
		p.Req("memory", m)
	}
}

// antiAffinity keeps a pod off nodes running pods labelled app=value.
func antiAffinity(value string) *v1.Affinity {
	return &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": value}},
		TopologyKey:   v1.LabelHostname,
	}}}}
}

// describe prints the cluster for a failure message.
func describe(nodes []*v1.Node, existing []*v1.Pod, pod *v1.Pod) string {
	s := ""
	for _, n := range nodes {
		s += fmt.Sprintf("node %s labels=%v taints=%v unschedulable=%v allocatable=%v\n", n.Name, n.Labels, n.Spec.Taints, n.Spec.Unschedulable, n.Status.Allocatable)
	}
	for _, p := range append(existing, pod) {
		s += fmt.Sprintf("pod %s node=%q labels=%v requests=%v ports=%v affinity=%v spread=%v tolerations=%v selector=%v\n", p.Name, p.Spec.NodeName, p.Labels,
			p.Spec.Containers[0].Resources.Requests, p.Spec.Containers[0].Ports, p.Spec.Affinity, p.Spec.TopologySpreadConstraints, p.Spec.Tolerations, p.Spec.NodeSelector)
	}
	return s
}
