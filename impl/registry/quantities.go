package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const isNegativeErrorMsg = "must be greater than or equal to 0"

// validateNonNegativeQuantity rejects quantities below zero.
func validateNonNegativeQuantity(q resource.Quantity, path *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(path, q.String(), isNegativeErrorMsg)}
	}
	return nil
}

// validateResourceName accepts qualified names ("cpu", "example.com/gpu").
func validateResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// isStandardContainerResource reports whether name is a built-in resource
// a container may request.
func isStandardContainerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// validateContainerResourceName accepts standard container resources and
// domain-prefixed extended resources.
func validateContainerResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	errs := validateResourceName(name, path)
	if len(errs) == 0 && !strings.Contains(string(name), "/") && !isStandardContainerResource(name) {
		errs = append(errs, field.Invalid(path, name, "must be a standard resource for containers"))
	}
	return errs
}

// validateResourceList checks names and non-negative quantities of a list.
func validateResourceList(list corev1.ResourceList, path *field.Path, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	for name, q := range list {
		p := path.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateNonNegativeQuantity(q, p)...)
	}
	return errs
}
