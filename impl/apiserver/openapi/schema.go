package openapi

//go:generate sh -c "go run ./internal/optionalgen > optional_generated.go"

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// dialect is the OpenAPI version a schema is written for. The two differ in
// where definitions live ("#/definitions/" or "#/components/schemas/"), in
// how a reference carries sibling keywords (allOf in 3.0), and in how
// multi-typed values are written (oneOf in 3.0).
type dialect int

const (
	swagger2 dialect = iota
	openAPI3
)

func (d dialect) refPrefix() string {
	if d == openAPI3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// specialType is implemented by API types whose JSON form is not their Go
// structure (Quantity, IntOrString, Time, MicroTime, Duration).
type specialType interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

// oneOfType is implemented by special types that are one of several JSON
// types (IntOrString: integer or string; Quantity: string or number).
type oneOfType interface {
	OpenAPIV3OneOfTypes() []string
}

// schemaBuilder derives OpenAPI schemas from Go types by reflection and
// collects the definitions of every named type it meets.
type schemaBuilder struct {
	dialect   dialect
	semantics *mergeSemantics
	// kinds gives the group-version-kinds of top-level definitions.
	kinds map[reflect.Type][]schema.GroupVersionKind
	// definitions by name; an entry is nil while it is being built, which
	// ends recursion through self-referencing types.
	definitions map[string]*spec.Schema
}

func newSchemaBuilder(d dialect, semantics *mergeSemantics, kinds map[reflect.Type][]schema.GroupVersionKind) *schemaBuilder {
	return &schemaBuilder{dialect: d, semantics: semantics, kinds: kinds, definitions: map[string]*spec.Schema{}}
}

// ref returns a reference to the definition of the named type t, building
// that definition (and everything it references) on first use.
func (b *schemaBuilder) ref(t reflect.Type) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := definitionName(t)
	if _, built := b.definitions[name]; !built {
		b.definitions[name] = nil
		def := b.definition(t, name)
		b.definitions[name] = &def
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(b.dialect.refPrefix() + name)}}
}

// definition is the schema of the named type t.
func (b *schemaBuilder) definition(t reflect.Type, name string) spec.Schema {
	var s spec.Schema
	if special, ok := reflect.Zero(t).Interface().(specialType); ok {
		s = b.specialSchema(t, special)
	} else {
		s = b.structSchema(t, name)
	}
	if gvks := b.kinds[t]; len(gvks) > 0 {
		list := make([]any, 0, len(gvks))
		for _, gvk := range gvks {
			list = append(list, map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
		}
		s.AddExtension(extGroupVersionKind, list)
	}
	if b.semantics.structIsAtomic(name) {
		s.AddExtension(extMapType, "atomic")
	}
	return s
}

// specialSchema writes a type that serializes as a scalar: a string in
// Swagger 2.0 (with the type's format), oneOf its JSON types in OpenAPI 3.0
// where it has several.
func (b *schemaBuilder) specialSchema(t reflect.Type, special specialType) spec.Schema {
	s := spec.Schema{}
	s.Format = special.OpenAPISchemaFormat()
	if oneOf, ok := special.(oneOfType); ok && b.dialect == openAPI3 {
		for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
			s.OneOf = append(s.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}}})
		}
		return s
	}
	s.Type = special.OpenAPISchemaType()
	return s
}

// structSchema writes a struct as an object whose properties are its JSON
// fields, inlined embedded structs included.
func (b *schemaBuilder) structSchema(t reflect.Type, definition string) spec.Schema {
	s := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
	s.Description = swaggerDoc(t)[""]
	b.addFields(&s, t, definition)
	sort.Strings(s.Required)
	return s
}

func (b *schemaBuilder) addFields(s *spec.Schema, t reflect.Type, definition string) {
	docs := swaggerDoc(t)
	overrides := commentOptionality[t.PkgPath()+"."+t.Name()]
	defaults := commentDefaults[t.PkgPath()+"."+t.Name()]
	for i := range t.NumField() {
		f := t.Field(i)
		name, options, skip := jsonName(f)
		if skip {
			continue
		}
		if name == "" {
			// Inlined (",inline" or embedded without a name): its fields
			// are this object's.
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				b.addFields(s, ft, definition)
				continue
			}
			name = f.Name
		}
		if s.Properties == nil {
			s.Properties = map[string]spec.Schema{}
		}
		fs := b.fieldSchema(f, name, definition, docs[name])
		if d, ok := defaults[name]; ok {
			// Upstream's documents carry +default values; server-side
			// apply takes a missing list map key's value from them
			// (a port's protocol).
			var v any
			if err := json.Unmarshal([]byte(d), &v); err == nil {
				if b.dialect == openAPI3 && fs.Ref.String() != "" {
					fs = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{fs}}}
				}
				fs.Default = v
			}
		}
		s.Properties[name] = fs
		isRequired, overridden := overrides[name]
		if !overridden {
			isRequired = required(options)
		}
		if isRequired {
			s.Required = append(s.Required, name)
		}
	}
}

// required is upstream's rule for fields without a +optional or +required
// comment tag: a field is required when its json tag is neither omitempty
// nor omitzero. (Pointers are no exception: apps/v1 selectors are required
// pointers.) The fields whose comment tag says otherwise are listed in
// commentOptionality (optional_generated.go, made by
// internal/optionalgen from the k8s.io/api sources), which addFields
// consults first, as upstream's generator reads the comment first.
func required(jsonOptions string) bool {
	for _, option := range strings.Split(jsonOptions, ",") {
		if option == "omitempty" || option == "omitzero" {
			return false
		}
	}
	return true
}

// jsonName reads a field's json tag: its name ("" when inlined), its
// options, and whether the field is not serialized at all.
func jsonName(f reflect.StructField) (name, options string, skip bool) {
	if !f.IsExported() && !f.Anonymous {
		return "", "", true
	}
	tag, hasTag := f.Tag.Lookup("json")
	if tag == "-" {
		return "", "", true
	}
	name, options, _ = strings.Cut(tag, ",")
	if strings.Contains(","+options+",", ",inline,") {
		return "", options, false
	}
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	if !hasTag && f.Anonymous && !f.IsExported() {
		return "", "", true
	}
	return name, options, false
}

// swaggerDocumented is implemented by the k8s.io/api and apimachinery types:
// their generated SwaggerDoc gives the type's description ("" key) and each
// field's, by JSON name, from the Go comments upstream's OpenAPI documents
// are generated from.
type swaggerDocumented interface {
	SwaggerDoc() map[string]string
}

// swaggerDoc is t's field documentation, empty for types without any.
func swaggerDoc(t reflect.Type) map[string]string {
	if d, ok := reflect.Zero(t).Interface().(swaggerDocumented); ok {
		return d.SwaggerDoc()
	}
	if d, ok := reflect.New(t).Interface().(swaggerDocumented); ok {
		return d.SwaggerDoc()
	}
	return nil
}

// fieldSchema is the schema of one struct field, with its description and
// the merge extensions its tags and the structured-merge-diff schema give
// it.
func (b *schemaBuilder) fieldSchema(f reflect.StructField, name, definition, description string) spec.Schema {
	s := b.schemaOf(f.Type)
	ext := spec.Extensions{}
	strategy, mergeKey := f.Tag.Get("patchStrategy"), f.Tag.Get("patchMergeKey")
	if strategy != "" {
		ext[extPatchStrategy] = strategy
	}
	if mergeKey != "" {
		ext[extPatchMergeKey] = mergeKey
	}
	if known, ok := b.semantics.fieldExtensions(definition, name); ok {
		for k, v := range known {
			ext[k] = v
		}
	} else if s.Items != nil && s.Items.Schema != nil {
		for k, v := range tagExtensions(strategy, mergeKey, s.Items.Schema.Ref.String() == "") {
			ext[k] = v
		}
	}
	if len(ext) == 0 && description == "" {
		return s
	}
	if b.dialect == openAPI3 && s.Ref.String() != "" {
		// OpenAPI 3.0 ignores the siblings of a $ref; upstream wraps the
		// reference in allOf so the description and extensions count.
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = description
	if len(ext) > 0 {
		s.Extensions = ext
	}
	return s
}

// schemaOf is the schema of a value of type t: a reference for named
// structs, inline for everything else.
func (b *schemaBuilder) schemaOf(t reflect.Type) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, ok := reflect.Zero(t).Interface().(specialType); ok && t.Name() != "" {
		return b.ref(t)
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.Name() != "" {
			return b.ref(t)
		}
		return b.structSchema(t, "")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return scalar("string", "byte")
		}
		items := b.schemaOf(t.Elem())
		return spec.Schema{SchemaProps: spec.SchemaProps{
			Type:  spec.StringOrArray{"array"},
			Items: &spec.SchemaOrArray{Schema: &items},
		}}
	case reflect.Map:
		values := b.schemaOf(t.Elem())
		return spec.Schema{SchemaProps: spec.SchemaProps{
			Type:                 spec.StringOrArray{"object"},
			AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &values},
		}}
	case reflect.String:
		return scalar("string", "")
	case reflect.Bool:
		return scalar("boolean", "")
	case reflect.Int8, reflect.Uint8:
		return scalar("integer", "byte")
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint16:
		return scalar("integer", "int32")
	case reflect.Int64, reflect.Uint32, reflect.Uint64:
		return scalar("integer", "int64")
	case reflect.Float32:
		return scalar("number", "float")
	case reflect.Float64:
		return scalar("number", "double")
	}
	// interface{} and anything else JSON can hold: an object of any shape.
	return scalar("object", "")
}

func scalar(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}, Format: format}}
}
