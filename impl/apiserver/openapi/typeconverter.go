package openapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// NewTypeConverter returns the structured-merge-diff type converter for the
// kinds of resources (what server-side apply and managed fields work with),
// built from the same OpenAPI 3.0 schemas the handler serves, as
// kube-apiserver builds its own from its OpenAPI models.
func NewTypeConverter(resources []*resource.Resource) (managedfields.TypeConverter, error) {
	docs, err := buildDocuments(resources)
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI schemas: %w", err)
	}
	schemas := map[string]*spec.Schema{}
	for _, doc := range docs.v3 {
		for name, s := range doc.Components.Schemas {
			schemas[name] = s
		}
	}
	converter, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building the type converter: %w", err)
	}
	return converter, nil
}
