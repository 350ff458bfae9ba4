package registry

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func deployments(now func() time.Time) *resource.Resource {
	k := kind[*appsv1.Deployment]{
		namespaced: true,
		defaults:   defaultDeployment,
		// Annotations are copied to the ReplicaSets, so they count as spec.
		// The controller's observedGeneration compares against this
		// generation (DEP-1 holds once the current generation is observed).
		spec: func(d *appsv1.Deployment) any {
			return struct {
				Spec        appsv1.DeploymentSpec
				Annotations map[string]string
			}{d.Spec, d.Annotations}
		},
		prepareForCreate: func(d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{}
			dropDisabledTemplateFields(&d.Spec.Template, nil)
		},
		prepareForUpdate: func(d, old *appsv1.Deployment) {
			d.Status = old.Status
			dropDisabledTemplateFields(&d.Spec.Template, &old.Spec.Template)
		},
		// The template's checks are relaxed on update by what the stored
		// template already had (upstream's GetValidationOptionsFromPodTemplate).
		validateCreate: func(d *appsv1.Deployment) field.ErrorList { return validateDeployment(d, podValidationOptions{}) },
		validateUpdate: func(d, old *appsv1.Deployment) field.ErrorList {
			errs := validateDeployment(d, podValidationOptionsFor(&old.Spec.Template.Spec))
			return append(errs, apivalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
		},
		warnings: func(d, old *appsv1.Deployment) []string {
			if old == nil {
				return workloadWarnings(&d.ObjectMeta, nil, &d.Spec.Template)
			}
			return workloadWarnings(&d.ObjectMeta, &old.ObjectMeta, &d.Spec.Template)
		},
		table: &tableSpec[*appsv1.Deployment]{columns: deploymentColumns, cells: deploymentCells},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Name:         "deployments", SingularName: "deployment", Kind: "Deployment",
		Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &appsv1.Deployment{} },
		NewList:  func() runtime.Object { return &appsv1.DeploymentList{} },
		Strategy: s,
		Status: statusStrategy[*appsv1.Deployment]{s: s, k: statusKind[*appsv1.Deployment]{
			keep: func(d, old *appsv1.Deployment) {
				d.Spec = old.Spec
				d.Labels = old.Labels
			},
			validate: func(d, _ *appsv1.Deployment) field.ErrorList { return validateDeploymentStatus(&d.Status) },
		}},
		Scale: deploymentScale{},
	}
}

// defaultDeployment is SetDefaults_Deployment plus the pod template's
// defaults.
func defaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrInt32(1)
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			st.RollingUpdate.MaxUnavailable = &v
		}
		if st.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString("25%")
			st.RollingUpdate.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrInt32(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptrInt32(600)
	}
	defaultPodTemplateSpec(&d.Spec.Template)
}

func ptrInt32(v int32) *int32 { return &v }

func validateDeployment(d *appsv1.Deployment, opts podValidationOptions) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if d.Spec.Replicas != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*d.Spec.Replicas), spec.Child("replicas"))...)
	}
	errs = append(errs, validateWorkloadSelector(d.Spec.Selector, &d.Spec.Template, spec)...)
	errs = append(errs, validateReplicatedTemplate(&d.Spec.Template, spec.Child("template"), opts)...)
	errs = append(errs, validateDeploymentStrategy(&d.Spec.Strategy, spec.Child("strategy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(d.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	if d.Spec.RevisionHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*d.Spec.RevisionHistoryLimit), spec.Child("revisionHistoryLimit"))...)
	}
	if pds := d.Spec.ProgressDeadlineSeconds; pds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*pds), spec.Child("progressDeadlineSeconds"))...)
		if *pds <= d.Spec.MinReadySeconds {
			errs = append(errs, field.Invalid(spec.Child("progressDeadlineSeconds"), *pds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(st *appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if st.RollingUpdate == nil {
			return append(errs, field.Required(path.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		}
		ru := path.Child("rollingUpdate")
		errs = append(errs, validatePositiveIntOrPercent(st.RollingUpdate.MaxUnavailable, ru.Child("maxUnavailable"))...)
		errs = append(errs, validatePositiveIntOrPercent(st.RollingUpdate.MaxSurge, ru.Child("maxSurge"))...)
		if intOrPercentValue(st.RollingUpdate.MaxUnavailable) == 0 && intOrPercentValue(st.RollingUpdate.MaxSurge) == 0 {
			errs = append(errs, field.Invalid(ru.Child("maxUnavailable"), st.RollingUpdate.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		if v := st.RollingUpdate.MaxUnavailable; v != nil && v.Type == intstr.String && intOrPercentValue(v) > 100 {
			errs = append(errs, field.Invalid(ru.Child("maxUnavailable"), v, "must not be greater than 100%"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), st.Type, []string{
			string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	return errs
}

// validatePositiveIntOrPercent accepts a non-negative integer or "N%".
func validatePositiveIntOrPercent(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(path, v, msg))
		}
		return errs
	}
	return apivalidation.ValidateNonnegativeField(int64(v.IntValue()), path)
}

// intOrPercentValue is the number in an int or "N%" value (-1 if neither).
func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	var n int
	if _, err := fmt.Sscanf(v.StrVal, "%d%%", &n); err != nil {
		return -1
	}
	return n
}

func validateDeploymentStatus(s *appsv1.DeploymentStatus) field.ErrorList {
	status := field.NewPath("status")
	errs := apivalidation.ValidateNonnegativeField(s.ObservedGeneration, status.Child("observedGeneration"))
	errs = append(errs, validateStatusReplicas(status, s.Replicas, s.ReadyReplicas, s.AvailableReplicas,
		map[string]int32{"updatedReplicas": s.UpdatedReplicas})...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.UnavailableReplicas), status.Child("unavailableReplicas"))...)
	if s.CollisionCount != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.CollisionCount), status.Child("collisionCount"))...)
	}
	return errs
}

// deploymentScale is the /scale subresource of deployments.
type deploymentScale struct{}

func (deploymentScale) Scale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, fmt.Errorf("scale of %T: not a Deployment", obj)
	}
	return scaleOf(d.ObjectMeta, d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector)
}

func (deploymentScale) SetReplicas(obj runtime.Object, replicas int32) (runtime.Object, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, fmt.Errorf("scaling %T: not a Deployment", obj)
	}
	d = d.DeepCopy()
	d.Spec.Replicas = &replicas
	return d, nil
}

var deploymentColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Ready", "string", "Ready pods out of desired replicas."),
	column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
	column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
	ageColumn(),
	wideColumn("Containers", "string", "Names of the containers of the pod template."),
	wideColumn("Images", "string", "Images of the containers of the pod template."),
	wideColumn("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
}

func deploymentCells(d *appsv1.Deployment, now time.Time) []any {
	desired := int32(0)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return []any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired), int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now), names, images, selector}
}
