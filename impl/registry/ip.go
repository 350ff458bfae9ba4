package registry

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validationIsValidIP checks an IP address field.
func validationIsValidIP(p *field.Path, ip string) field.ErrorList {
	return validation.IsValidIP(p, ip)
}
