package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGatedPodSchedulingDirectivesAsUpstream: while the stored pod has
// scheduling gates an update may add nodeSelector entries and narrow the
// required node affinity (requirements appended to each existing term, or
// any terms when there were none), and change the preferred node affinity,
// as upstream ValidatePodUpdate's gated branch (validateNodeSelectorMutation,
// validateNodeAffinityMutation); an ungated pod's are immutable.
func TestGatedPodSchedulingDirectivesAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	const terms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
	zone := func(op corev1.NodeSelectorOperator, v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: "zone", Operator: op, Values: v}
	}
	required := func(ts ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts}}}
	}
	withAffinity := func(p *corev1.Pod) {
		p.Spec.Affinity = required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone(corev1.NodeSelectorOpIn, "a", "b")}})
	}
	cases := []struct {
		name    string
		gated   bool
		old     func(*corev1.Pod)
		mutate  func(*corev1.Pod)
		want    []string
		details []string
	}{
		{"add nodeSelector entry", true, nil, func(p *corev1.Pod) { p.Spec.NodeSelector["disk"] = "ssd" }, nil, nil},
		{"add nodeSelector entry while removing the last gate", true, nil, func(p *corev1.Pod) {
			p.Spec.NodeSelector["disk"] = "ssd"
			p.Spec.SchedulingGates = nil
		}, nil, nil},
		{"change nodeSelector entry", true, nil, func(p *corev1.Pod) { p.Spec.NodeSelector["zone"] = "b" },
			[]string{invalid + " spec.nodeSelector"},
			[]string{`spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)`}},
		{"remove nodeSelector entry", true, nil, func(p *corev1.Pod) { p.Spec.NodeSelector = nil },
			[]string{invalid + " spec.nodeSelector"}, nil},
		{"add nodeSelector entry to an ungated pod", false, nil, func(p *corev1.Pod) { p.Spec.NodeSelector["disk"] = "ssd" },
			[]string{forbidden + " spec"}, nil},
		{"set required node affinity", true, nil, withAffinity, nil, nil},
		{"set required node affinity of an ungated pod", false, nil, withAffinity, []string{forbidden + " spec"}, nil},
		{"append a requirement to a term", true, withAffinity, func(p *corev1.Pod) {
			term := &p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
			term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpExists})
			term.MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}
		}, nil, nil},
		{"change a requirement", true, withAffinity, func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0] = zone(corev1.NodeSelectorOpIn, "a")
		}, []string{invalid + " " + terms + "[0]"},
			[]string{terms + "[0]: Invalid value: {\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}: only additions are allowed (no mutations or deletions)"}},
		{"add a term", true, withAffinity, func(p *corev1.Pod) {
			ns := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone(corev1.NodeSelectorOpIn, "c")}})
		}, []string{invalid + " " + terms}, nil},
		{"remove the node affinity", true, withAffinity, func(p *corev1.Pod) { p.Spec.Affinity = nil },
			[]string{invalid + " " + terms}, nil},
		{"set preferred node affinity", true, withAffinity, func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{
				Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone(corev1.NodeSelectorOpIn, "a")}}}}
		}, nil, nil},
		{"remove the pod affinity beside the node affinity", true, func(p *corev1.Pod) {
			withAffinity(p)
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: "zone"}}}
		}, func(p *corev1.Pod) { p.Spec.Affinity.PodAffinity = nil }, []string{forbidden + " spec"}, nil},
		{"set required beside a preferred node affinity", true, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone(corev1.NodeSelectorOpIn, "a")}}}}}}
		}, func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{zone(corev1.NodeSelectorOpIn, "b")}}).NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newPod("p")
			old.Spec.NodeSelector = map[string]string{"zone": "a"}
			if tc.gated {
				old.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			}
			if tc.old != nil {
				tc.old(old)
			}
			old = defaultedPod(t, old)
			p := old.DeepCopy()
			tc.mutate(p)
			r.Strategy.PrepareForUpdate(ctx, p, old)
			errs := r.Strategy.ValidateUpdate(ctx, p, old)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}
