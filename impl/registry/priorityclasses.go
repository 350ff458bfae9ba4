package registry

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// SystemPriorityClassesHook is kube-apiserver's post-start hook creating
// the system PriorityClasses.
const SystemPriorityClassesHook = "scheduling/bootstrap-system-priority-classes"

// SystemPriorityClasses returns new copies of the classes the API server
// creates at start, as kube-apiserver's scheduling API defines them: name,
// value and description only (the create path defaults preemptionPolicy;
// no labels, not the global default).
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:  metav1.ObjectMeta{Name: "system-node-critical"},
			Value:       systemCriticalPriority + 1000,
			Description: "Used for system critical pods that must not be moved from their current node.",
		},
		{
			ObjectMeta:  metav1.ObjectMeta{Name: "system-cluster-critical"},
			Value:       systemCriticalPriority,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
		},
	}
}

// knownSystemPriorityClass checks a class whose name has the system
// prefix against the system classes: same value and globalDefault, as
// kube-apiserver's check words it (description, labels and the rest may
// differ). Pure.
func knownSystemPriorityClass(name string, value int32, globalDefault bool) error {
	for _, spc := range SystemPriorityClasses() {
		if spc.Name != name {
			continue
		}
		if spc.Value != value {
			return fmt.Errorf("value of %v PriorityClass must be %v", spc.Name, spc.Value)
		}
		if spc.GlobalDefault != globalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", spc.Name, spc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", name)
}

// forbidSystemPriorityClassDelete refuses the DELETE of a system class
// with kube-apiserver's 403.
func forbidSystemPriorityClassDelete(name string) error {
	for _, spc := range SystemPriorityClasses() {
		if spc.Name == name {
			return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name,
				errors.New("this is a system priority class and cannot be deleted"))
		}
	}
	return nil
}

func priorityClasses(now func() time.Time) *resource.Resource {
	k := kind[*schedulingv1.PriorityClass]{
		namespaced: false,
		defaults:   defaultPriorityClass,
		// Generation 1 from the create on, as upstream's strategy sets it;
		// an update keeps it (no spec to bump it).
		prepareForCreate: func(pc *schedulingv1.PriorityClass) { pc.Generation = 1 },
		// Upstream checks the reserved names and values on create only:
		// an update may change what value and preemptionPolicy's
		// immutability leave (globalDefault, description, metadata).
		validateCreate: validatePriorityClass,
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
		New:          func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList:      func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy:     newStrategy(k, now),
		ForbidDelete: forbidSystemPriorityClassDelete,
		Bootstrap: &resource.Bootstrap{Hook: SystemPriorityClassesHook, Objects: func() []runtime.Object {
			var out []runtime.Object
			for _, pc := range SystemPriorityClasses() {
				out = append(out, pc)
			}
			return out
		}},
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
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		if err := knownSystemPriorityClass(pc.Name, pc.Value, pc.GlobalDefault); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
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
