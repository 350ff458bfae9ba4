package registry

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Priority limits and the reserved system classes (scheduling API).
const (
	highestUserDefinablePriority = int32(1000000000)
	systemCriticalPriority       = 2 * highestUserDefinablePriority
	systemPriorityClassPrefix    = "system-"
)

// systemPriorityClasses are the classes the API server creates itself.
var systemPriorityClasses = map[string]int32{
	"system-node-critical":    systemCriticalPriority + 1000,
	"system-cluster-critical": systemCriticalPriority,
}

func priorityClasses(now func() time.Time) *resource.Resource {
	k := kind[*schedulingv1.PriorityClass]{
		namespaced:     false,
		defaults:       defaultPriorityClass,
		validate:       validatePriorityClass,
		validateUpdate: validatePriorityClassUpdate,
		table: &tableSpec[*schedulingv1.PriorityClass]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Value", "integer", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
				column("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]),
				ageColumn(),
				column("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]),
			},
			cells: func(pc *schedulingv1.PriorityClass, now time.Time) []any {
				policy := "<none>"
				if pc.PreemptionPolicy != nil {
					policy = string(*pc.PreemptionPolicy)
				}
				return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: schedulingv1.SchemeGroupVersion,
		Name:         "priorityclasses", SingularName: "priorityclass", Kind: "PriorityClass",
		Namespaced: false, ShortNames: []string{"pc"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList:  func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy: newStrategy(k, now),
	}
}

func defaultPriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &p
	}
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if value, system := systemPriorityClasses[pc.Name]; system {
		if pc.Value != value {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), "name of a system priority class is reserved with a fixed value"))
		}
	} else {
		if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only"))
		}
		if pc.Value > highestUserDefinablePriority {
			errs = append(errs, field.Forbidden(field.NewPath("value"), "maximum allowed value of a user defined priority is 1000000000"))
		}
	}
	if p := pc.PreemptionPolicy; p != nil {
		errs = append(errs, validatePreemptionPolicy(*p, field.NewPath("preemptionPolicy"))...)
	}
	return errs
}

func validatePreemptionPolicy(p corev1.PreemptionPolicy, path *field.Path) field.ErrorList {
	switch p {
	case corev1.PreemptLowerPriority, corev1.PreemptNever:
		return nil
	case "":
		return field.ErrorList{field.Required(path, "")}
	}
	return field.ErrorList{field.NotSupported(path, p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)})}
}

func validatePriorityClassUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	return errs
}
