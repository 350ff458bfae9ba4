package openapi

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// documentSet is everything the handler serves, before encoding.
type documentSet struct {
	swagger *spec.Swagger
	// v3 by group/version path ("api/v1", "apis/apps/v1").
	v3 map[string]*spec3.OpenAPI
}

// buildDocuments derives the Swagger 2.0 document and the per group/version
// OpenAPI 3.0 documents for resources.
func buildDocuments(resources []*resource.Resource) (*documentSet, error) {
	semantics, err := builtinSemantics()
	if err != nil {
		return nil, err
	}
	served := make([]servedResource, 0, len(resources))
	seen := map[schema.GroupVersionResource]bool{}
	for _, r := range resources {
		s, err := newServedResource(r)
		if err != nil {
			return nil, err
		}
		if seen[r.GroupVersionResource()] {
			return nil, fmt.Errorf("resource %s registered twice", r.GroupVersionResource())
		}
		seen[r.GroupVersionResource()] = true
		served = append(served, s)
	}
	kinds := topLevelKinds(served)
	info := &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: kubernetesVersion()}}

	var all []pathItem
	byGroupVersion := map[string][]pathItem{}
	for _, r := range served {
		items := r.pathItems()
		all = append(all, items...)
		key := groupVersionPath(r.GroupVersion)
		byGroupVersion[key] = append(byGroupVersion[key], items...)
	}

	set := &documentSet{
		swagger: swaggerDocument(info, all, newSchemaBuilder(swagger2, semantics, kinds)),
		v3:      map[string]*spec3.OpenAPI{},
	}
	for key, items := range byGroupVersion {
		set.v3[key] = openAPI3Document(info, items, newSchemaBuilder(openAPI3, semantics, kinds))
	}
	return set, nil
}

// topLevelKinds gives the group-version-kinds carried by the definitions of
// the types that travel as whole objects: each resource's kind and list
// kind, the subresources' kinds, and the meta kinds every group serves.
func topLevelKinds(served []servedResource) map[reflect.Type][]schema.GroupVersionKind {
	kinds := map[reflect.Type][]schema.GroupVersionKind{}
	add := func(t reflect.Type, gvk schema.GroupVersionKind) {
		if !slices.Contains(kinds[t], gvk) {
			kinds[t] = append(kinds[t], gvk)
		}
	}
	for _, r := range served {
		add(r.object, r.GroupVersionKind())
		add(r.list, r.GroupVersion.WithKind(r.Kind+"List"))
		if r.Scale != nil {
			add(typeScale, gvkScale)
		}
		if r.GroupVersion == gvkBinding.GroupVersion() && r.Name == "pods" {
			add(typeBinding, gvkBinding)
		}
		add(typeDeleteOptions, r.GroupVersion.WithKind("DeleteOptions"))
		add(typeWatchEvent, r.GroupVersion.WithKind("WatchEvent"))
	}
	add(typeStatus, schema.GroupVersionKind{Version: "v1", Kind: "Status"})
	for _, list := range kinds {
		slices.SortFunc(list, func(a, b schema.GroupVersionKind) int {
			return strings.Compare(a.String(), b.String())
		})
	}
	return kinds
}

// kubernetesVersion is the Kubernetes release whose API types this binary
// serves (k8s.io/api v0.X.Y is Kubernetes v1.X.Y).
func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/api" && strings.HasPrefix(dep.Version, "v0.") {
				return "v1." + strings.TrimPrefix(dep.Version, "v0.")
			}
		}
	}
	return "unversioned"
}

func gvkExtension(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// swaggerDocument writes the Swagger 2.0 document of items.
func swaggerDocument(info *spec.Info, items []pathItem, b *schemaBuilder) *spec.Swagger {
	paths := &spec.Paths{Paths: map[string]spec.PathItem{}}
	for _, item := range items {
		p := spec.PathItem{}
		for _, param := range item.parameters {
			p.Parameters = append(p.Parameters, swaggerParameter(param))
		}
		for _, o := range item.operations {
			op := &spec.Operation{OperationProps: spec.OperationProps{
				Description: o.description,
				Consumes:    o.consumes,
				Produces:    o.produces,
				Schemes:     []string{"https"},
				Tags:        []string{o.tag},
				ID:          o.id,
				Responses:   &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
			}}
			op.AddExtension(extAction, o.action)
			op.AddExtension(extGroupVersionKind, gvkExtension(o.gvk))
			if o.body != nil {
				body := b.ref(o.body)
				op.Parameters = append(op.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
					Name: "body", In: "body", Required: true, Schema: &body,
				}})
			}
			for _, param := range o.parameters {
				op.Parameters = append(op.Parameters, swaggerParameter(param))
			}
			for _, r := range o.responses {
				schema := b.ref(r.body)
				op.Responses.StatusCodeResponses[r.code] = spec.Response{ResponseProps: spec.ResponseProps{Description: r.description, Schema: &schema}}
			}
			op.Responses.StatusCodeResponses[401] = spec.Response{ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}
			switch o.method {
			case "get":
				p.Get = op
			case "put":
				p.Put = op
			case "post":
				p.Post = op
			case "patch":
				p.Patch = op
			case "delete":
				p.Delete = op
			}
		}
		paths.Paths[item.path] = p
	}
	definitions := spec.Definitions{}
	for name, def := range b.definitions {
		definitions[name] = *def
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        info,
		Paths:       paths,
		Definitions: definitions,
		SecurityDefinitions: spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer token authentication",
		}}},
		Security: []map[string][]string{{"BearerToken": {}}},
	}}
}

func swaggerParameter(p parameter) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: p.name, In: p.in, Description: p.description, Required: p.required},
		SimpleSchema:      spec.SimpleSchema{Type: p.typ},
		CommonValidations: spec.CommonValidations{UniqueItems: p.uniqueItems},
	}
}

// openAPI3Document writes the OpenAPI 3.0 document of one group/version's
// items.
func openAPI3Document(info *spec.Info, items []pathItem, b *schemaBuilder) *spec3.OpenAPI {
	paths := &spec3.Paths{Paths: map[string]*spec3.Path{}}
	for _, item := range items {
		p := &spec3.Path{}
		for _, param := range item.parameters {
			p.Parameters = append(p.Parameters, openAPI3Parameter(param))
		}
		for _, o := range item.operations {
			op := &spec3.Operation{OperationProps: spec3.OperationProps{
				Description: o.description,
				Tags:        []string{o.tag},
				OperationId: o.id,
				Responses:   &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
			}}
			op.AddExtension(extAction, o.action)
			op.AddExtension(extGroupVersionKind, gvkExtension(o.gvk))
			if o.body != nil {
				body := b.ref(o.body)
				op.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{
					Content: mediaTypes(o.consumes, &body), Required: true,
				}}
			}
			for _, param := range o.parameters {
				op.Parameters = append(op.Parameters, openAPI3Parameter(param))
			}
			for _, r := range o.responses {
				schema := b.ref(r.body)
				op.Responses.StatusCodeResponses[r.code] = &spec3.Response{ResponseProps: spec3.ResponseProps{
					Description: r.description, Content: mediaTypes(o.produces, &schema),
				}}
			}
			op.Responses.StatusCodeResponses[401] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}
			switch o.method {
			case "get":
				p.Get = op
			case "put":
				p.Put = op
			case "post":
				p.Post = op
			case "patch":
				p.Patch = op
			case "delete":
				p.Delete = op
			}
		}
		paths.Paths[item.path] = p
	}
	schemas := map[string]*spec.Schema{}
	for name, def := range b.definitions {
		schemas[name] = def
	}
	return &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    info,
		Paths:   paths,
		Components: &spec3.Components{
			Schemas: schemas,
			SecuritySchemes: spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
				Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer token authentication",
			}}},
		},
		SecurityRequirement: []map[string][]string{{"BearerToken": {}}},
	}
}

func openAPI3Parameter(p parameter) *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: p.name, In: p.in, Description: p.description, Required: p.required,
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{p.typ}, UniqueItems: p.uniqueItems}},
	}}
}

func mediaTypes(types []string, schema *spec.Schema) map[string]*spec3.MediaType {
	content := make(map[string]*spec3.MediaType, len(types))
	for _, t := range types {
		content[t] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: schema}}
	}
	return content
}
