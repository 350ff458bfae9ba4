package registry

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func replicaSets(now func() time.Time) *resource.Resource {
	k := kind[*appsv1.ReplicaSet]{
		namespaced: true,
		defaults: func(rs *appsv1.ReplicaSet) {
			if rs.Spec.Replicas == nil {
				rs.Spec.Replicas = ptrInt32(1)
			}
			defaultPodTemplateSpec(&rs.Spec.Template)
		},
		spec: func(rs *appsv1.ReplicaSet) any { return rs.Spec },
		prepareForCreate: func(rs *appsv1.ReplicaSet) {
			rs.Status = appsv1.ReplicaSetStatus{}
			dropDisabledTemplateFields(&rs.Spec.Template, nil)
		},
		prepareForUpdate: func(rs, old *appsv1.ReplicaSet) {
			rs.Status = old.Status
			dropDisabledTemplateFields(&rs.Spec.Template, &old.Spec.Template)
		},
		// The template's checks are relaxed on update by what the stored
		// template already had (upstream's GetValidationOptionsFromPodTemplate).
		validateCreate: func(rs *appsv1.ReplicaSet) field.ErrorList { return validateReplicaSet(rs, podValidationOptions{}) },
		validateUpdate: func(rs, old *appsv1.ReplicaSet) field.ErrorList {
			errs := validateReplicaSet(rs, podValidationOptionsFor(&old.Spec.Template.Spec))
			return append(errs, apivalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
		},
		warnings: func(rs, old *appsv1.ReplicaSet) []string {
			if old == nil {
				return workloadWarnings(&rs.ObjectMeta, nil, &rs.Spec.Template)
			}
			return workloadWarnings(&rs.ObjectMeta, &old.ObjectMeta, &rs.Spec.Template)
		},
		fields: func(rs *appsv1.ReplicaSet) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(rs.Status.Replicas))}
		},
		table: &tableSpec[*appsv1.ReplicaSet]{columns: replicaSetColumns, cells: replicaSetCells},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Name:         "replicasets", SingularName: "replicaset", Kind: "ReplicaSet",
		Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:  func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Strategy: s,
		Status: statusStrategy[*appsv1.ReplicaSet]{s: s, k: statusKind[*appsv1.ReplicaSet]{
			keep:     func(rs, old *appsv1.ReplicaSet) { rs.Spec = old.Spec },
			validate: func(rs, _ *appsv1.ReplicaSet) field.ErrorList { return validateReplicaSetStatus(&rs.Status) },
		}},
		Scale: replicaSetScale{},
	}
}

func validateReplicaSet(rs *appsv1.ReplicaSet, opts podValidationOptions) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if rs.Spec.Replicas != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*rs.Spec.Replicas), spec.Child("replicas"))...)
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(rs.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	errs = append(errs, validateWorkloadSelector(rs.Spec.Selector, &rs.Spec.Template, spec)...)
	errs = append(errs, validateReplicatedTemplate(&rs.Spec.Template, spec.Child("template"), opts)...)
	return errs
}

func validateReplicaSetStatus(s *appsv1.ReplicaSetStatus) field.ErrorList {
	status := field.NewPath("status")
	errs := apivalidation.ValidateNonnegativeField(s.ObservedGeneration, status.Child("observedGeneration"))
	return append(errs, validateStatusReplicas(status, s.Replicas, s.ReadyReplicas, s.AvailableReplicas,
		map[string]int32{"fullyLabeledReplicas": s.FullyLabeledReplicas})...)
}

// replicaSetScale is the /scale subresource of replicasets.
type replicaSetScale struct{}

func (replicaSetScale) Scale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return nil, fmt.Errorf("scale of %T: not a ReplicaSet", obj)
	}
	return scaleOf(rs.ObjectMeta, rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector)
}

func (replicaSetScale) SetReplicas(obj runtime.Object, replicas int32) (runtime.Object, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return nil, fmt.Errorf("scaling %T: not a ReplicaSet", obj)
	}
	rs = rs.DeepCopy()
	rs.Spec.Replicas = &replicas
	return rs, nil
}

var replicaSetColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
	column("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
	column("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
	ageColumn(),
	wideColumn("Containers", "string", "Names of the containers of the pod template."),
	wideColumn("Images", "string", "Images of the containers of the pod template."),
	wideColumn("Selector", "string", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
}

func replicaSetCells(rs *appsv1.ReplicaSet, now time.Time) []any {
	desired := int32(0)
	if rs.Spec.Replicas != nil {
		desired = *rs.Spec.Replicas
	}
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return []any{rs.Name, int64(desired), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
		age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
}
