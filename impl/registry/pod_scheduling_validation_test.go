package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodSchedulingConstraintValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"valid node affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
					MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}},
				}}}}}
		}, nil},
		{"In without values, bad operator", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}, {Key: "x", Operator: "Near"}},
				}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0}},
			}}
		}, []string{
			required + " spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
			notSupported + " spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator",
			invalid + " spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
		}},
		{"required node affinity values are label values, preferred ones are not checked", func(p *corev1.Pod) {
			bad := []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "not a label value"}}}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: bad}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: bad}}},
			}}
		}, []string{invalid + " spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[1]"}},
		{"anti-affinity without topology key", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
		}, []string{required + " spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"}},
		{"topology spread", func(p *corev1.Pod) {
			c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}
			bad := corev1.TopologySpreadConstraint{MaxSkew: 0, WhenUnsatisfiable: "Whatever"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c, bad}
		}, []string{
			duplicate + " spec.topologySpreadConstraints[1]",
			invalid + " spec.topologySpreadConstraints[2].maxSkew",
			required + " spec.topologySpreadConstraints[2].topologyKey",
			notSupported + " spec.topologySpreadConstraints[2].whenUnsatisfiable",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			defaultPod(p)
			tc.mutate(p)
			wantErrors(t, r.Strategy.Validate(context.Background(), p), tc.want...)
		})
	}
}
