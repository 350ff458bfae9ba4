package registry

import (
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateWorkloadSelector checks the selector of a Deployment or
// ReplicaSet and that it selects the pod template; it returns the parsed
// selector (nil when invalid).
func validateWorkloadSelector(sel *metav1.LabelSelector, template *corev1.PodTemplateSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sel == nil {
		return append(errs, field.Required(spec.Child("selector"), ""))
	}
	errs = append(errs, validateLabelSelector(sel, spec.Child("selector"))...)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for deployment"))
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(spec.Child("selector"), sel, "invalid label selector"))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(template.Labels)) {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// dropDisabledTemplateFields drops from a workload's pod template what is
// dropped from pods while its feature is off, unless old (the stored
// template on update, nil on create) already uses it, as upstream's
// DropDisabledTemplateFields, which every workload strategy calls on
// create and update: today the containers' lifecycle.stopSignal
// (dropDisabledStopSignals).
func dropDisabledTemplateFields(t, old *corev1.PodTemplateSpec) {
	var oldSpec *corev1.PodSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	dropDisabledStopSignals(&t.Spec, oldSpec)
}

// validateReplicatedTemplate validates the pod template of a Deployment or
// ReplicaSet: a valid template that restarts always and has no deadline.
// opts relax what an update's stored template already had.
func validateReplicatedTemplate(t *corev1.PodTemplateSpec, path *field.Path, opts podValidationOptions) field.ErrorList {
	errs := validatePodTemplateSpec(t, path, opts)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways && t.Spec.RestartPolicy != "" {
		errs = append(errs, field.NotSupported(path.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

// validateStatusReplicas checks the replica counters of a workload status.
func validateStatusReplicas(status *field.Path, replicas, ready, available int32, others map[string]int32) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(replicas), status.Child("replicas"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(ready), status.Child("readyReplicas"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(available), status.Child("availableReplicas"))...)
	for name, v := range others {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v), status.Child(name))...)
		if v > replicas {
			errs = append(errs, field.Invalid(status.Child(name), v, "cannot be greater than status.replicas"))
		}
	}
	if ready > replicas {
		errs = append(errs, field.Invalid(status.Child("readyReplicas"), ready, "cannot be greater than status.replicas"))
	}
	if available > replicas {
		errs = append(errs, field.Invalid(status.Child("availableReplicas"), available, "cannot be greater than status.replicas"))
	}
	if available > ready {
		errs = append(errs, field.Invalid(status.Child("availableReplicas"), available, "cannot be greater than readyReplicas"))
	}
	return errs
}

// scaleOf builds the autoscaling/v1 Scale view of a workload.
func scaleOf(meta metav1.ObjectMeta, specReplicas *int32, statusReplicas int32, sel *metav1.LabelSelector) (*autoscalingv1.Scale, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, err
	}
	replicas := int32(1)
	if specReplicas != nil {
		replicas = *specReplicas
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID,
			ResourceVersion: meta.ResourceVersion, CreationTimestamp: meta.CreationTimestamp,
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: statusReplicas, Selector: selector.String()},
	}, nil
}

// containerCells renders the CONTAINERS and IMAGES cells.
func containerCells(cs []corev1.Container) (names, images string) {
	n := make([]string, len(cs))
	im := make([]string, len(cs))
	for i, c := range cs {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}
