package registry

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields names what a pod update may change, in the
// "pod updates may not change fields other than ..." message.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// validatePodUpdate enforces that most of a pod's spec is immutable: only
// images, activeDeadlineSeconds (set or lowered), tolerations (added),
// scheduling gates (removed) and a stored negative termination grace
// period (to 1) may change; while the stored pod is gated, nodeSelector
// entries may be added and the node affinity narrowed too. In particular spec.nodeName cannot be written by
// an update: pods are bound only through pods/binding (SCHED-1).
func validatePodUpdate(p, old *corev1.Pod) field.ErrorList {
	spec := field.NewPath("spec")
	errs, stop := validateContainerUpdates(p.Spec.Containers, old.Spec.Containers, spec.Child("containers"))
	if stop {
		return errs
	}
	initErrs, stop := validateContainerUpdates(p.Spec.InitContainers, old.Spec.InitContainers, spec.Child("initContainers"))
	if errs = append(errs, initErrs...); stop {
		return errs
	}

	if ads := p.Spec.ActiveDeadlineSeconds; ads != nil {
		if *ads < 0 || *ads > math.MaxInt32 {
			return append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *ads, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oldADS := old.Spec.ActiveDeadlineSeconds; oldADS != nil && *oldADS < *ads {
			return append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *ads, "must be less than or equal to previous value"))
		}
	} else if old.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), p.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateOnlyAddedTolerations(p.Spec.Tolerations, old.Spec.Tolerations, spec.Child("tolerations"))...)
	errs = append(errs, validateOnlyRemovedSchedulingGates(p.Spec.SchedulingGates, old.Spec.SchedulingGates, spec.Child("schedulingGates"))...)

	// Take what may change from old; anything left that differs is an
	// illegal change.
	munged := *p.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.Tolerations = old.Spec.Tolerations
	munged.SchedulingGates = old.Spec.SchedulingGates
	// Only from a stored negative period to 1, as upstream; a pod being
	// deleted may not change it either (a graceful delete shortens the
	// period through its options, podGracefulDeleter).
	if tgps, oldTGPS := p.Spec.TerminationGracePeriodSeconds, old.Spec.TerminationGracePeriodSeconds; tgps != nil && oldTGPS != nil &&
		*oldTGPS < 0 && *tgps == 1 {
		munged.TerminationGracePeriodSeconds = oldTGPS
	}
	if len(old.Spec.SchedulingGates) > 0 {
		errs = append(errs, mungeGatedSchedulingDirectives(&munged, &old.Spec, spec)...)
	}
	if !apiequality.Semantic.DeepEqual(munged, old.Spec) {
		diff := cmp.Diff(old.Spec, munged)
		errs = append(errs, field.Forbidden(spec, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return errs
}

// mungeGatedSchedulingDirectives is upstream ValidatePodUpdate's branch
// for a pod whose stored spec still has scheduling gates (KEP-3838,
// mutable scheduling directives): nodeSelector entries may be added
// (validateNodeSelectorMutation) and the node affinity changed within
// validateNodeAffinityMutation's rules; either is then taken from old in
// munged, so that only the checks here judge it. The pod (anti-)affinity
// stays immutable: a change of it beside the node affinity remains in
// munged.
func mungeGatedSchedulingDirectives(munged, old *corev1.PodSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(munged.NodeSelector, old.NodeSelector) {
		errs = append(errs, validateNodeSelectorMutation(munged.NodeSelector, old.NodeSelector, spec.Child("nodeSelector"))...)
		munged.NodeSelector = old.NodeSelector
	}
	var oldNA, newNA *corev1.NodeAffinity
	if old.Affinity != nil {
		oldNA = old.Affinity.NodeAffinity
	}
	if munged.Affinity != nil {
		newNA = munged.Affinity.NodeAffinity
	}
	if apiequality.Semantic.DeepEqual(oldNA, newNA) {
		return errs
	}
	errs = append(errs, validateNodeAffinityMutation(newNA, oldNA, spec.Child("affinity", "nodeAffinity"))...)
	switch {
	case munged.Affinity == nil && oldNA == nil:
	case munged.Affinity == nil:
		munged.Affinity = &corev1.Affinity{NodeAffinity: oldNA}
	case old.Affinity == nil && munged.Affinity.PodAffinity == nil && munged.Affinity.PodAntiAffinity == nil:
		// Only a node affinity was added: the affinity is as it was.
		munged.Affinity = nil
	default:
		a := *munged.Affinity
		a.NodeAffinity = oldNA
		munged.Affinity = &a
	}
	return errs
}

// validateNodeSelectorMutation: a gated pod's nodeSelector keeps every
// entry it had, with its value.
func validateNodeSelectorMutation(selector, old map[string]string, path *field.Path) field.ErrorList {
	for k, v := range old {
		if got, ok := selector[k]; !ok || got != v {
			return field.ErrorList{field.Invalid(path, selector, "only additions to spec.nodeSelector are allowed (no mutations or deletions)")}
		}
	}
	return nil
}

// validateNodeAffinityMutation: when the stored pod requires node
// selector terms, a gated pod keeps as many terms, each with its
// requirements as a prefix of the new term's matchExpressions and
// matchFields (an empty term stays empty). Without stored required terms
// anything may be set; the preferred terms are not checked.
func validateNodeAffinityMutation(na, old *corev1.NodeAffinity, path *field.Path) field.ErrorList {
	if old == nil || old.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	termsPath := path.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	oldTerms := old.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var terms []corev1.NodeSelectorTerm
	if na != nil && na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	if len(oldTerms) > 0 && len(oldTerms) != len(terms) {
		return field.ErrorList{field.Invalid(termsPath, terms, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")}
	}
	var errs field.ErrorList
	for i := range oldTerms {
		if !nodeSelectorTermOnlyAdds(terms[i], oldTerms[i]) {
			errs = append(errs, field.Invalid(termsPath.Index(i), terms[i], "only additions are allowed (no mutations or deletions)"))
		}
	}
	return errs
}

// nodeSelectorTermOnlyAdds: term is old with requirements appended.
func nodeSelectorTermOnlyAdds(term, old corev1.NodeSelectorTerm) bool {
	if len(old.MatchExpressions) == 0 && len(old.MatchFields) == 0 {
		return len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0
	}
	prefix := func(reqs, old []corev1.NodeSelectorRequirement) bool {
		return len(old) == 0 || (len(reqs) >= len(old) && apiequality.Semantic.DeepEqual(reqs[:len(old)], old))
	}
	return prefix(term.MatchExpressions, old.MatchExpressions) && prefix(term.MatchFields, old.MatchFields)
}

// validateOnlyAddedTolerations: existing tolerations stay; only their
// tolerationSeconds may change.
func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, o := range old {
		found := false
		want := o
		want.TolerationSeconds = nil
		for _, t := range tolerations {
			got := t
			got.TolerationSeconds = nil
			if got == want {
				found = true
				break
			}
		}
		if !found {
			errs = append(errs, field.Forbidden(path, "existing toleration can not be modified except its tolerationSeconds"))
			return errs
		}
	}
	return append(errs, validateTolerations(tolerations, path)...)
}

// validateOnlyRemovedSchedulingGates: a gate the stored pod lacks is
// Forbidden on its name, as upstream's validateOnlyDeletedSchedulingGates.
func validateOnlyRemovedSchedulingGates(gates, old []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	previous := sets.New[string]()
	for _, g := range old {
		previous.Insert(g.Name)
	}
	var errs field.ErrorList
	for i, g := range gates {
		if !previous.Has(g.Name) {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// validateContainerUpdates is upstream's ValidateContainerUpdates: an
// update may not add or remove containers (stop: nothing else is checked);
// each image is required and without surrounding whitespace.
func validateContainerUpdates(cs, old []corev1.Container, path *field.Path) (field.ErrorList, bool) {
	if len(cs) != len(old) {
		return field.ErrorList{field.Forbidden(path, "pod updates may not add or remove containers")}, true
	}
	var errs field.ErrorList
	for i, c := range cs {
		if c.Image == "" {
			errs = append(errs, field.Required(path.Index(i).Child("image"), ""))
		}
		if strings.TrimSpace(c.Image) != c.Image {
			errs = append(errs, field.Invalid(path.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs, false
}
