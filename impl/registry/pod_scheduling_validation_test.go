package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
			invalid + " spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator",
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
		}, []string{required + " spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
			invalid + " spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
			invalid + " spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"}},
		{"topology spread", func(p *corev1.Pod) {
			c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}
			bad := corev1.TopologySpreadConstraint{MaxSkew: 0, WhenUnsatisfiable: "Whatever"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c, bad}
		}, []string{
			duplicate + " spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
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

// wantError checks that errs hold one error rendered exactly as want
// ("<field>: <type>: <detail>", as the API's Status causes read).
func wantError(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	for _, e := range errs {
		if e.Error() == want {
			return
		}
	}
	t.Errorf("no error %q in %v", want, errs.ToAggregate())
}

// TestSchedulingConstraintValidationAsUpstream: node selector
// requirements, pod (anti-)affinity terms and topology spread constraints
// give upstream's errors (pkg/apis/core/validation ValidateNodeSelectorRequirement,
// ValidateNodeFieldSelectorRequirement, validatePodAffinityTerm,
// validateTopologySpreadConstraints): an unknown operator is Invalid "not a
// valid selector operator", a matchFields key other than metadata.name is
// Invalid and its values are node names, pod affinity namespaces are
// reported on ".namespace", an empty topologyKey is also an invalid label
// key, and a spread constraint's topologyKey is not a label key, its
// duplicate reported on the first of the pair, minDomains checked both
// ways and node inclusion policies Honor or Ignore.
func TestSchedulingConstraintValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const req = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
	const pref = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
	const anti = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
	const tsc = "spec.topologySpreadConstraints"
	honor, bogus := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicy("Sometimes")
	cases := []struct {
		name    string
		mutate  func(*corev1.Pod)
		want    []string
		details []string
	}{
		{"unknown operators", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near", Values: []string{"a"}}},
					MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpExists}},
				}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near"}}}}},
			}}
		}, []string{
			invalid + " " + req + ".matchExpressions[0].operator",
			invalid + " " + req + ".matchFields[0].operator",
			invalid + " " + pref + ".matchExpressions[0].operator",
		}, []string{
			req + `.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`,
			req + `.matchFields[0].operator: Invalid value: "Exists": not a valid selector operator`,
		}},
		{"match fields: key and node-name values", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{
						{Key: "metadata.uid", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}},
						{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"Not_A_Node"}},
					},
				}}}}}
		}, []string{invalid + " " + req + ".matchFields[0].key", invalid + " " + req + ".matchFields[1].values[0]"},
			[]string{req + `.matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key`}},
		{"pod affinity namespace and empty topology key", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Namespaces:    []string{"ok", "Not_OK"}}}}}
		}, []string{
			invalid + " " + anti + ".namespace",
			required + " " + anti + ".topologyKey",
			invalid + " " + anti + ".topologyKey",
			invalid + " " + anti + ".topologyKey",
		}, nil},
		{"label selector operators (metav1's ValidateLabelSelector, as upstream)", func(p *corev1.Pod) {
			sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"web"}}}}
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: sel, TopologyKey: "zone"}}}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
		}, []string{
			invalid + " spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator",
			invalid + " " + tsc + "[0].labelSelector.matchExpressions[0].operator",
		}, []string{
			tsc + `[0].labelSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`,
		}},
		{"pod affinity matchLabelKeys and mismatchLabelKeys", func(p *corev1.Pod) {
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{LabelSelector: sel, TopologyKey: "zone", MatchLabelKeys: []string{"app", "bad key!"}, MismatchLabelKeys: []string{"bad key!"}},
					{TopologyKey: "zone", MatchLabelKeys: []string{"app"}},
				}}}
		}, []string{
			invalid + " " + anti + "[0]", // upstream's path for a key in both matchLabelKeys and the selector
			invalid + " " + anti + ".matchLabelKeys[1]",
			invalid + " " + anti + ".mismatchLabelKeys[0]",
			invalid + " " + anti + ".matchLabelKeys[1]",
			forbidden + " spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].matchLabelKeys",
		}, []string{
			anti + `[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`,
			anti + `.matchLabelKeys[1]: Invalid value: "bad key!": exists in both matchLabelKeys and mismatchLabelKeys`,
			"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
		}},
		{"spread: topology key not a label key, duplicate on the first, minDomains, policies", func(p *corev1.Pod) {
			c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "not a label key!", WhenUnsatisfiable: corev1.DoNotSchedule, NodeAffinityPolicy: &honor}
			d := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
				MinDomains: ptr(int32(0)), NodeTaintsPolicy: &bogus}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c, d}
		}, []string{
			duplicate + " " + tsc + "[0].{topologyKey, whenUnsatisfiable}",
			invalid + " " + tsc + "[2].minDomains",
			invalid + " " + tsc + "[2].minDomains",
			notSupported + " " + tsc + "[2].nodeTaintsPolicy",
		}, []string{
			tsc + `[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{not a label key!, DoNotSchedule}"`,
			tsc + `[2].minDomains: Invalid value: 0: must be greater than zero`,
			tsc + `[2].minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway`,
			tsc + `[2].nodeTaintsPolicy: Unsupported value: "Sometimes": supported values: "Honor", "Ignore"`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			defaultPod(p)
			tc.mutate(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}

// TestPodCreateMergesLabelKeysIntoSelectors: on create the values of the
// pod's own labels named by matchLabelKeys are added to the selector as In
// requirements (topology spread constraints and pod (anti-)affinity terms),
// and those named by mismatchLabelKeys as NotIn (affinity terms), as
// upstream's PrepareForCreate (mutatePodAffinity; mutateTopologySpreadConstraints
// with MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default); a key
// the pod has no label for adds nothing, a term without a selector is left
// alone; a workload's template is not merged.
func TestPodCreateMergesLabelKeysIntoSelectors(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	sel := func() *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}
	in := func(k, v string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}}
	}
	notIn := func(k, v string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpNotIn, Values: []string{v}}
	}
	term := func() corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: sel(),
			MatchLabelKeys: []string{"pod-template-hash", "absent"}, MismatchLabelKeys: []string{"tenant"}}
	}
	spec := func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel(),
				MatchLabelKeys: []string{"pod-template-hash", "absent"}},
			{MaxSkew: 1, TopologyKey: "host", WhenUnsatisfiable: corev1.DoNotSchedule},
		}
		s.Affinity = &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{term()},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term()}},
			},
			PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{term()},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term()}},
			},
		}
	}
	p := newPod("web")
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "t1"}
	spec(&p.Spec)
	r.Strategy.Default(p)
	r.Strategy.PrepareForCreate(ctx, p)
	if errs := r.Strategy.Validate(ctx, p); len(errs) > 0 {
		t.Fatalf("pod invalid: %v", errs.ToAggregate())
	}
	wantSel := func(what string, got *metav1.LabelSelector, reqs ...metav1.LabelSelectorRequirement) {
		t.Helper()
		want := sel()
		want.MatchExpressions = reqs
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s selector = %+v, want %+v", what, got, want)
		}
	}
	tscs := p.Spec.TopologySpreadConstraints
	wantSel("spread", tscs[0].LabelSelector, in("pod-template-hash", "abc"))
	if tscs[1].LabelSelector != nil {
		t.Errorf("spread without selector got %+v", tscs[1].LabelSelector)
	}
	a := p.Spec.Affinity
	for what, got := range map[string]*metav1.LabelSelector{
		"affinity required":       a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector,
		"affinity preferred":      a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector,
		"anti-affinity required":  a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector,
		"anti-affinity preferred": a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector,
	} {
		wantSel(what, got, in("pod-template-hash", "abc"), notIn("tenant", "t1"))
	}

	// An update merges nothing (upstream: creation only).
	upd := p.DeepCopy()
	upd.ResourceVersion = "1"
	upd.Labels["pod-template-hash"] = "def"
	r.Strategy.PrepareForUpdate(ctx, upd, p)
	wantSel("spread after update", upd.Spec.TopologySpreadConstraints[0].LabelSelector, in("pod-template-hash", "abc"))

	// A Deployment's template keeps its selectors as written.
	dr := find(t, appsV1, "deployments")
	d := newDeployment()
	d.Spec.Template.Labels["pod-template-hash"] = "abc"
	spec(&d.Spec.Template.Spec)
	dr.Strategy.Default(d)
	dr.Strategy.PrepareForCreate(ctx, d)
	wantSel("template spread", d.Spec.Template.Spec.TopologySpreadConstraints[0].LabelSelector)
	wantSel("template affinity", d.Spec.Template.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector)
}

// TestTopologySpreadMatchLabelKeysValidated: a spread constraint's
// matchLabelKeys are validated as upstream's (1.34+, selector merge on)
// validateMatchLabelKeysAndMismatchLabelKeys on the constraint: label keys,
// Forbidden without a label selector, and a key the selector already
// constrains is Invalid "exists in both matchLabelKeys and labelSelector"
// once the create merged the pod's label for it (reported on the
// constraint's path indexed by the key's position, as upstream).
func TestTopologySpreadMatchLabelKeysValidated(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	const tsc = "spec.topologySpreadConstraints"
	p := newPod("web")
	p.Labels = map[string]string{"app": "web"}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MatchLabelKeys: []string{"bad key!", "app"}},
		{MaxSkew: 1, TopologyKey: "host", WhenUnsatisfiable: corev1.DoNotSchedule, MatchLabelKeys: []string{"app"}},
	}
	// The pod affinity equivalent: the merged key is the selector's second.
	p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone",
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MatchLabelKeys: []string{"app"}}},
	}}
	r.Strategy.Default(p)
	r.Strategy.PrepareForCreate(ctx, p)
	errs := r.Strategy.Validate(ctx, p)
	wantErrors(t, errs,
		invalid+" "+tsc+"[0].matchLabelKeys[0]",
		invalid+" "+tsc+"[0][1]",
		forbidden+" "+tsc+"[1].matchLabelKeys",
		invalid+" spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]",
	)
	wantError(t, errs, tsc+`[0][1]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`)
	wantError(t, errs, tsc+`[1].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set`)
}
