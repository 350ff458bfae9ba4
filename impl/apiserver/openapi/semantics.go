package openapi

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Extension names Kubernetes uses in its OpenAPI documents.
const (
	extGroupVersionKind = "x-kubernetes-group-version-kind"
	extAction           = "x-kubernetes-action"
	extPatchStrategy    = "x-kubernetes-patch-strategy"
	extPatchMergeKey    = "x-kubernetes-patch-merge-key"
	extListType         = "x-kubernetes-list-type"
	extListMapKeys      = "x-kubernetes-list-map-keys"
	extMapType          = "x-kubernetes-map-type"
)

// mergeSemantics answers how lists and maps of the built-in types merge
// (the +listType, +listMapKey, +mapType and +structType markers upstream's
// types carry in their comments). The answers come from client-go's
// structured-merge-diff schema of every built-in type, the same data
// client-go's apply configurations and field managers use.
type mergeSemantics struct {
	schema *smdschema.Schema
}

// builtinSemantics loads the structured-merge-diff schema once.
var builtinSemantics = sync.OnceValues(func() (*mergeSemantics, error) {
	converter := applyconfigurations.NewTypeConverter(scheme.Scheme)
	pod := &corev1.Pod{}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	typed, err := converter.ObjectToTyped(pod)
	if err != nil {
		return nil, fmt.Errorf("loading client-go's structured-merge-diff schema: %w", err)
	}
	return &mergeSemantics{schema: typed.Schema()}, nil
})

// structIsAtomic reports whether the named struct type is replaced as a
// whole by apply (+structType=atomic).
func (m *mergeSemantics) structIsAtomic(definition string) bool {
	if m == nil {
		return false
	}
	def, ok := m.schema.FindNamedType(definition)
	return ok && def.Map != nil && def.Map.ElementRelationship == smdschema.Atomic
}

// fieldExtensions returns the list/map extensions of field name of the
// struct type definition, and whether the schema knows that field at all.
func (m *mergeSemantics) fieldExtensions(definition, name string) (map[string]any, bool) {
	if m == nil {
		return nil, false
	}
	def, ok := m.schema.FindNamedType(definition)
	if !ok || def.Map == nil {
		return nil, false
	}
	field, ok := def.Map.FindField(name)
	if !ok {
		return nil, false
	}
	ext := map[string]any{}
	atom, _ := m.schema.Resolve(field.Type)
	switch {
	case atom.List != nil && atom.List.ElementRelationship == smdschema.Associative:
		if len(atom.List.Keys) > 0 {
			ext[extListType] = "map"
			ext[extListMapKeys] = append([]string(nil), atom.List.Keys...)
		} else {
			ext[extListType] = "set"
		}
	case field.Type.NamedType == nil && atom.Map != nil && atom.Map.ElementRelationship == smdschema.Atomic:
		// An inline map marked +mapType=atomic.
		ext[extMapType] = "atomic"
	case field.Type.NamedType != nil && field.Type.ElementRelationship != nil &&
		*field.Type.ElementRelationship == smdschema.Atomic:
		// A reference to a struct that this field replaces as a whole.
		ext[extMapType] = "atomic"
	}
	return ext, true
}

// tagExtensions derives the list extensions from a field's strategic merge
// patch tags, for types the structured-merge-diff schema does not know: a
// merged list with a merge key is a map keyed by it; a merged list of
// scalars is a set.
func tagExtensions(patchStrategy, patchMergeKey string, elementIsScalar bool) map[string]any {
	if !strings.Contains(patchStrategy, "merge") {
		return nil
	}
	switch {
	case patchMergeKey != "":
		return map[string]any{extListType: "map", extListMapKeys: []string{patchMergeKey}}
	case elementIsScalar:
		return map[string]any{extListType: "set"}
	}
	return nil
}
