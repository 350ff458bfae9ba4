package registry

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	unsatisfiableActions = []string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}
	// nodeInclusionPolicies as upstream lists them (sorted).
	nodeInclusionPolicies = []string{string(corev1.NodeInclusionPolicyHonor), string(corev1.NodeInclusionPolicyIgnore)}
)

// invalidOperatorMsg is upstream's detail for an unknown selector operator
// (node selector requirements, as metav1 label selectors).
const invalidOperatorMsg = "not a valid selector operator"

// validateAffinity checks node affinity requirements (the values of
// required terms' expressions as label values, unless opts allow what the
// old object had; preferred terms' values never, as upstream) and pod
// (anti-)affinity terms.
func validateAffinity(a *corev1.Affinity, path *field.Path, opts podValidationOptions) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := path.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := p.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(rp, "must have at least one node selector term"))
			}
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, validateNodeSelectorTerm(term, rp.Index(i), !opts.allowInvalidLabelValueInRequiredNodeAffinity)...)
			}
		}
		for i, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(pref.Weight, pp.Child("weight"))...)
			errs = append(errs, validateNodeSelectorTerm(pref.Preference, pp.Child("preference"), false)...)
		}
	}
	for _, pa := range []struct {
		name      string
		required  []corev1.PodAffinityTerm
		preferred []corev1.WeightedPodAffinityTerm
	}{
		{"podAffinity", podAffinityRequired(a.PodAffinity), podAffinityPreferred(a.PodAffinity)},
		{"podAntiAffinity", podAntiAffinityRequired(a.PodAntiAffinity), podAntiAffinityPreferred(a.PodAntiAffinity)},
	} {
		p := path.Child(pa.name)
		for i, term := range pa.required {
			errs = append(errs, validatePodAffinityTerm(term, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i), opts)...)
		}
		for i, w := range pa.preferred {
			wp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(w.Weight, wp.Child("weight"))...)
			errs = append(errs, validatePodAffinityTerm(w.PodAffinityTerm, wp.Child("podAffinityTerm"), opts)...)
		}
	}
	return errs
}

func podAffinityRequired(a *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAffinityPreferred(a *corev1.PodAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func podAntiAffinityRequired(a *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAntiAffinityPreferred(a *corev1.PodAntiAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func validateWeight(w int32, p *field.Path) field.ErrorList {
	if w < 1 || w > 100 {
		return field.ErrorList{field.Invalid(p, w, "must be in the range 1-100")}
	}
	return nil
}

// validateNodeSelectorTerm checks a node selector term; checkValues holds
// its expressions' values to label value syntax.
func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, p *field.Path, checkValues bool) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		errs = append(errs, validateNodeSelectorRequirement(req, rp, true)...)
		if checkValues {
			errs = append(errs, validateLabelValues(req.Values, rp.Child("values"))...)
		}
	}
	for i, req := range term.MatchFields {
		errs = append(errs, validateNodeFieldSelectorRequirement(req, p.Child("matchFields").Index(i))...)
	}
	return errs
}

// validateNodeFieldSelectorRequirement checks a matchFields requirement as
// upstream's ValidateNodeFieldSelectorRequirement: In or NotIn with exactly
// one value (any other operator is Invalid), the key metadata.name (Invalid
// otherwise) and its values node names (DNS-1123 subdomains).
func validateNodeFieldSelectorRequirement(req corev1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, invalidOperatorMsg))
	}
	if req.Key != metav1.ObjectNameField {
		errs = append(errs, field.Invalid(p.Child("key"), req.Key, "not a valid field selector key"))
	} else {
		for i, v := range req.Values {
			errs = append(errs, dnsSubdomain(v, p.Child("values").Index(i))...)
		}
	}
	return errs
}

// validateLabelValues checks each of values as a label value.
func validateLabelValues(values []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	return errs
}

func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, p *field.Path, keyIsLabel bool) field.ErrorList {
	var errs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, invalidOperatorMsg))
	}
	if keyIsLabel {
		errs = append(errs, validateLabelKey(req.Key, p.Child("key"))...)
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, p *field.Path, opts podValidationOptions) field.ErrorList {
	errs := validatePodAffinityTermSelectors(term, p, opts.allowInvalidLabelValueInSelector)
	// Upstream reports a bad namespace name on ".namespace", without an
	// index, and an empty topologyKey both as required and as an invalid
	// label key (validatePodAffinityTerm).
	for _, ns := range term.Namespaces {
		errs = append(errs, dnsLabel(ns, p.Child("namespace"))...)
	}
	errs = append(errs, validateMatchLabelKeysAndMismatchLabelKeys(p, term.MatchLabelKeys, term.MismatchLabelKeys, term.LabelSelector)...)
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, validateLabelKey(term.TopologyKey, p.Child("topologyKey"))...)
}

// validateMatchLabelKeysAndMismatchLabelKeys checks a pod affinity term's
// matchLabelKeys and mismatchLabelKeys as upstream's function of that
// name: label keys, only beside a label selector; a matchLabelKeys key the
// selector already has and repeats in its expressions is Invalid (on the
// term's path indexed by the key's position, as upstream); no key in both
// lists. It runs after a pod's create merged its labels into the selector
// (mergeLabelKeysIntoSelectors), so a key the written selector also
// constrains is there twice; a template is not merged. Topology spread
// constraints are checked with it too (upstream 1.34+ with
// MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default; its
// legacy check refused any key of the selector, which the merge would
// always trip).
func validateMatchLabelKeysAndMismatchLabelKeys(p *field.Path, match, mismatch []string, sel *metav1.LabelSelector) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", match}, {"mismatchLabelKeys", mismatch}} {
		if len(l.keys) == 0 {
			continue
		}
		if sel == nil {
			errs = append(errs, field.Forbidden(p.Child(l.name), "must not be specified when labelSelector is not set"))
			continue
		}
		for i, k := range l.keys {
			errs = append(errs, validateLabelKey(k, p.Child(l.name).Index(i))...)
		}
	}
	if sel != nil {
		index := map[string]int{}
		for i, k := range match {
			index[k] = i
		}
		seen := sets.New[string]()
		for k := range sel.MatchLabels {
			seen.Insert(k)
		}
		for _, e := range sel.MatchExpressions {
			if i, ok := index[e.Key]; ok && seen.Has(e.Key) {
				errs = append(errs, field.Invalid(p.Index(i), e.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			seen.Insert(e.Key)
		}
	}
	for i, k := range match {
		if slices.Contains(mismatch, k) {
			errs = append(errs, field.Invalid(p.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

// validatePodAffinityTermSelectors checks a pod (anti-)affinity term's
// label and namespace selectors (upstream's ValidatePodAffinityTermSelector);
// allowInvalidValues skips the label value check of their expressions.
func validatePodAffinityTermSelectors(term corev1.PodAffinityTerm, p *field.Path, allowInvalidValues bool) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidValues}
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, p.Child("labelSelector"))
	return append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
}

// mergeLabelKeysIntoSelectors adds to each topology spread constraint's
// and pod (anti-)affinity term's label selector a requirement "key In
// (value)" for each matchLabelKeys key the pod has a label for, and for an
// affinity term "key NotIn (value)" for each such mismatchLabelKeys key, as
// upstream's PrepareForCreate (mutatePodAffinity, and
// mutateTopologySpreadConstraints with MatchLabelKeysInPodTopologySpread
// and MatchLabelKeysInPodTopologySpreadSelectorMerge, both on by default).
// Only on create: a later label change is not reflected (as upstream). A
// constraint or term without a selector matches nothing and is left alone.
func mergeLabelKeysIntoSelectors(p *corev1.Pod) {
	for i := range p.Spec.TopologySpreadConstraints {
		c := &p.Spec.TopologySpreadConstraints[i]
		mergeLabelKeys(c.LabelSelector, c.MatchLabelKeys, nil, p.Labels)
	}
	a := p.Spec.Affinity
	if a == nil {
		return
	}
	var terms []*corev1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	for _, t := range terms {
		mergeLabelKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, p.Labels)
	}
}

// mergeLabelKeys appends to sel (when set) the In requirements of match
// and the NotIn requirements of mismatch for the keys labels has.
func mergeLabelKeys(sel *metav1.LabelSelector, match, mismatch []string, labels map[string]string) {
	if sel == nil {
		return
	}
	for _, l := range []struct {
		keys []string
		op   metav1.LabelSelectorOperator
	}{{match, metav1.LabelSelectorOpIn}, {mismatch, metav1.LabelSelectorOpNotIn}} {
		for _, k := range l.keys {
			if v, ok := labels[k]; ok {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: l.op, Values: []string{v}})
			}
		}
	}
}

// validateTopologySpreadConstraints checks each constraint as upstream's
// validateTopologySpreadConstraints: maxSkew positive, topologyKey set (it
// is not checked as a label key), whenUnsatisfiable known, a
// {topologyKey, whenUnsatisfiable} pair repeated later reported on the
// first constraint of the pair, minDomains positive and only with
// DoNotSchedule, node affinity and taints policies Honor or Ignore,
// matchLabelKeys (validateMatchLabelKeysAndMismatchLabelKeys on the
// constraint's path) and the label selector (each unless opts allow what
// the old object had).
func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, path *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := path.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, unsatisfiableActions))
		}
		for _, later := range cs[i+1:] {
			if later.TopologyKey == c.TopologyKey && later.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, pol := range []struct {
			name   string
			policy *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.policy != nil && !slices.Contains(nodeInclusionPolicies, string(*pol.policy)) {
				errs = append(errs, field.NotSupported(p.Child(pol.name), *pol.policy, nodeInclusionPolicies))
			}
		}
		if !opts.oldPodViolatesMatchLabelKeysValidation {
			errs = append(errs, validateMatchLabelKeysAndMismatchLabelKeys(p, c.MatchLabelKeys, nil, c.LabelSelector)...)
		}
		if c.LabelSelector != nil && !opts.allowInvalidTopologySpreadConstraintLabelSelector {
			errs = append(errs, validateLabelSelector(c.LabelSelector, p.Child("labelSelector"))...)
		}
	}
	return errs
}
