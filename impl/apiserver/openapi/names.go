package openapi

import (
	"reflect"
	"strings"
)

// modelNamer is implemented by the API types that carry their generated
// OpenAPI model name (k8s.io/api and apimachinery types do).
type modelNamer interface {
	OpenAPIModelName() string
}

// definitionName is the OpenAPI definition name of a named Go type, as
// upstream names it: the type's own OpenAPIModelName if it has one, else its
// package path with the leading domain reversed and slashes turned into dots
// ("k8s.io/api/core/v1".Pod → "io.k8s.api.core.v1.Pod").
func definitionName(t reflect.Type) string {
	if namer, ok := reflect.Zero(t).Interface().(modelNamer); ok {
		return namer.OpenAPIModelName()
	}
	return restFriendlyName(t.PkgPath() + "/" + t.Name())
}

// restFriendlyName turns "k8s.io/api/core/v1/Pod" into
// "io.k8s.api.core.v1.Pod": the first path element, when it is a domain, is
// reversed; all path separators become dots.
func restFriendlyName(path string) string {
	if i := strings.Index(path, "/vendor/"); i >= 0 {
		path = path[i+len("/vendor/"):]
	}
	parts := strings.Split(path, "/")
	if strings.Contains(parts[0], ".") {
		domain := strings.Split(parts[0], ".")
		for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
			domain[i], domain[j] = domain[j], domain[i]
		}
		parts[0] = strings.Join(domain, ".")
	}
	return strings.Join(parts, ".")
}
