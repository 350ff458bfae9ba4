package registry

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// podDisruptionBudgets serves policy/v1 PodDisruptionBudgets. The spec is
// mutable (as since Kubernetes 1.15) and its changes bump generation; the
// status is written by the disruption controller and the eviction
// subresource through /status.
func podDisruptionBudgets(now func() time.Time) *resource.Resource {
	k := kind[*policyv1.PodDisruptionBudget]{
		namespaced:       true,
		spec:             func(p *policyv1.PodDisruptionBudget) any { return p.Spec },
		prepareForCreate: func(p *policyv1.PodDisruptionBudget) { p.Status = policyv1.PodDisruptionBudgetStatus{} },
		prepareForUpdate: func(p, old *policyv1.PodDisruptionBudget) { p.Status = old.Status },
		validate:         validatePodDisruptionBudget,
		table: &tableSpec[*policyv1.PodDisruptionBudget]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Min Available", "string", policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()["minAvailable"]),
				column("Max Unavailable", "string", policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()["maxUnavailable"]),
				column("Allowed Disruptions", "integer", policyv1.PodDisruptionBudgetStatus{}.SwaggerDoc()["disruptionsAllowed"]),
				ageColumn(),
			},
			cells: func(p *policyv1.PodDisruptionBudget, now time.Time) []any {
				return []any{p.Name, intOrPercentCell(p.Spec.MinAvailable), intOrPercentCell(p.Spec.MaxUnavailable),
					int64(p.Status.DisruptionsAllowed), age(p.CreationTimestamp, now)}
			},
		},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: policyv1.SchemeGroupVersion,
		Name:         "poddisruptionbudgets", SingularName: "poddisruptionbudget", Kind: "PodDisruptionBudget",
		Namespaced: true, ShortNames: []string{"pdb"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:  func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Strategy: s,
		Status: statusStrategy[*policyv1.PodDisruptionBudget]{s: s, k: statusKind[*policyv1.PodDisruptionBudget]{
			keep: func(p, old *policyv1.PodDisruptionBudget) { p.Spec = old.Spec },
			validate: func(p, _ *policyv1.PodDisruptionBudget) field.ErrorList {
				return validatePodDisruptionBudgetStatus(&p.Status, field.NewPath("status"))
			},
		}},
	}
}

// intOrPercentCell is how kubectl shows minAvailable/maxUnavailable.
func intOrPercentCell(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}

func validatePodDisruptionBudget(p *policyv1.PodDisruptionBudget) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if p.Spec.MinAvailable != nil && p.Spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(spec, p.Spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, f := range []struct {
		name string
		v    *intstr.IntOrString
	}{{"minAvailable", p.Spec.MinAvailable}, {"maxUnavailable", p.Spec.MaxUnavailable}} {
		name, v := f.name, f.v
		if v == nil {
			continue
		}
		errs = append(errs, validatePositiveIntOrPercent(v, spec.Child(name))...)
		if v.Type == intstr.String && intOrPercentValue(v) > 100 {
			errs = append(errs, field.Invalid(spec.Child(name), v, "must not be greater than 100%"))
		}
	}
	if p.Spec.Selector != nil {
		opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: true}
		errs = append(errs, metav1validation.ValidateLabelSelector(p.Spec.Selector, opts, spec.Child("selector"))...)
	}
	if pol := p.Spec.UnhealthyPodEvictionPolicy; pol != nil {
		switch *pol {
		case policyv1.IfHealthyBudget, policyv1.AlwaysAllow:
		default:
			errs = append(errs, field.NotSupported(spec.Child("unhealthyPodEvictionPolicy"), *pol,
				[]string{string(policyv1.IfHealthyBudget), string(policyv1.AlwaysAllow)}))
		}
	}
	return errs
}

func validatePodDisruptionBudgetStatus(s *policyv1.PodDisruptionBudgetStatus, status *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, status.Child("observedGeneration"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.DisruptionsAllowed), status.Child("disruptionsAllowed"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.CurrentHealthy), status.Child("currentHealthy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.DesiredHealthy), status.Child("desiredHealthy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.ExpectedPods), status.Child("expectedPods"))...)
	errs = append(errs, metav1validation.ValidateConditions(s.Conditions, status.Child("conditions"))...)
	return errs
}
