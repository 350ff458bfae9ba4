package registry

import (
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	nodeSelectorOperators = []string{string(corev1.NodeSelectorOpIn), string(corev1.NodeSelectorOpNotIn),
		string(corev1.NodeSelectorOpExists), string(corev1.NodeSelectorOpDoesNotExist),
		string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpLt)}
	unsatisfiableActions = []string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}
)

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
		rp := p.Child("matchFields").Index(i)
		if req.Key != "metadata.name" {
			errs = append(errs, field.NotSupported(rp.Child("key"), req.Key, []string{"metadata.name"}))
		}
		if req.Operator != corev1.NodeSelectorOpIn && req.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.NotSupported(rp.Child("operator"), req.Operator, []string{string(corev1.NodeSelectorOpIn), string(corev1.NodeSelectorOpNotIn)}))
		} else if len(req.Values) != 1 {
			errs = append(errs, field.Required(rp.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
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
		errs = append(errs, field.NotSupported(p.Child("operator"), req.Operator, nodeSelectorOperators))
	}
	if keyIsLabel {
		errs = append(errs, validateLabelKey(req.Key, p.Child("key"))...)
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, p *field.Path, opts podValidationOptions) field.ErrorList {
	errs := validatePodAffinityTermSelectors(term, p, opts.allowInvalidLabelValueInSelector)
	for i, ns := range term.Namespaces {
		errs = append(errs, dnsLabel(ns, p.Child("namespaces").Index(i))...)
	}
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, validateLabelKey(term.TopologyKey, p.Child("topologyKey"))...)
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

// validateTopologySpreadConstraints checks maxSkew, topologyKey,
// whenUnsatisfiable, the label selector (unless opts allow what the old
// object had) and that key/action pairs are unique.
func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, path *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	type pair struct {
		key    string
		action corev1.UnsatisfiableConstraintAction
	}
	seen := sets.New[pair]()
	for i, c := range cs {
		p := path.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, validateLabelKey(c.TopologyKey, p.Child("topologyKey"))...)
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, unsatisfiableActions))
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be greater than 0"))
			} else if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "can only use minDomains if whenUnsatisfiable=DoNotSchedule"))
			}
		}
		if c.LabelSelector != nil && !opts.allowInvalidTopologySpreadConstraintLabelSelector {
			errs = append(errs, validateLabelSelector(c.LabelSelector, p.Child("labelSelector"))...)
		}
		k := pair{c.TopologyKey, c.WhenUnsatisfiable}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p, "{"+c.TopologyKey+", "+string(c.WhenUnsatisfiable)+"}"))
		}
		seen.Insert(k)
	}
	return errs
}
