package openapi

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A type without a generated model name, to check the name derivation.
type localKind struct {
	Inline    `json:",inline"`
	Name      string            `json:"name"`
	Count     *int64            `json:"count,omitempty"`
	Ratio     float64           `json:"ratio,omitempty"`
	Raw       []byte            `json:"raw,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Items     []localItem       `json:"items,omitempty" patchStrategy:"merge" patchMergeKey:"id"`
	Tags      []string          `json:"tags,omitempty" patchStrategy:"merge"`
	Self      *localKind        `json:"self,omitempty"`
	Skipped   string            `json:"-"`
	unexposed string
}

type Inline struct {
	Kind string `json:"kind,omitempty"`
}

type localItem struct {
	ID int32 `json:"id"`
}

func TestDefinitionNames(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[corev1.Pod](), "io.k8s.api.core.v1.Pod"},
		{reflect.TypeFor[metav1.ObjectMeta](), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
		{reflect.TypeFor[intstr.IntOrString](), "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
		{reflect.TypeFor[localKind](), "com.github.kubeproof.kubeproof.impl.apiserver.openapi.localKind"},
	} {
		if got := definitionName(tc.typ); got != tc.want {
			t.Errorf("definitionName(%v) = %q, want %q", tc.typ, got, tc.want)
		}
	}
	// The derivation agrees with the generated names.
	if got := restFriendlyName("k8s.io/api/apps/v1/Deployment"); got != "io.k8s.api.apps.v1.Deployment" {
		t.Errorf("restFriendlyName = %q", got)
	}
}

// jsonOf renders a value as generic JSON, the way clients see it.
func jsonOf(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReflectedStruct(t *testing.T) {
	b := newSchemaBuilder(swagger2, nil, nil)
	b.ref(reflect.TypeFor[localKind]())
	def := jsonOf(t, b.definitions["com.github.kubeproof.kubeproof.impl.apiserver.openapi.localKind"])
	props := def["properties"].(map[string]any)
	var names []string
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	if got, want := strings.Join(names, ","), "count,items,kind,labels,name,ratio,raw,self,tags"; got != want {
		t.Errorf("properties = %s, want %s", got, want)
	}
	if got := mustJSON(t, def["required"]); got != `["name"]` {
		t.Errorf("required = %s, want only name (the one field without omitempty)", got)
	}
	for field, want := range map[string]string{
		"count":  `{"format":"int64","type":"integer"}`,
		"ratio":  `{"format":"double","type":"number"}`,
		"raw":    `{"format":"byte","type":"string"}`,
		"labels": `{"additionalProperties":{"type":"string"},"type":"object"}`,
		"self":   `{"$ref":"#/definitions/com.github.kubeproof.kubeproof.impl.apiserver.openapi.localKind"}`,
		// Without a structured-merge-diff schema the list semantics come
		// from the patch tags.
		"items": `{"items":{"$ref":"#/definitions/com.github.kubeproof.kubeproof.impl.apiserver.openapi.localItem"},"type":"array","x-kubernetes-list-map-keys":["id"],"x-kubernetes-list-type":"map","x-kubernetes-patch-merge-key":"id","x-kubernetes-patch-strategy":"merge"}`,
		"tags":  `{"items":{"type":"string"},"type":"array","x-kubernetes-list-type":"set","x-kubernetes-patch-strategy":"merge"}`,
	} {
		if got := mustJSON(t, props[field]); got != want {
			t.Errorf("%s = %s\nwant %s", field, got, want)
		}
	}
	item := jsonOf(t, b.definitions["com.github.kubeproof.kubeproof.impl.apiserver.openapi.localItem"])
	if got := mustJSON(t, item["properties"]); got != `{"id":{"format":"int32","type":"integer"}}` {
		t.Errorf("localItem properties = %s", got)
	}
}

func TestBuiltinDefinitions(t *testing.T) {
	docs, err := buildDocuments(issueResources())
	if err != nil {
		t.Fatal(err)
	}
	v2 := jsonOf(t, docs.swagger)["definitions"].(map[string]any)
	v3 := jsonOf(t, docs.v3["api/v1"])["components"].(map[string]any)["schemas"].(map[string]any)
	apps := jsonOf(t, docs.v3["apis/apps/v1"])["components"].(map[string]any)["schemas"].(map[string]any)

	def := func(defs map[string]any, name string) map[string]any {
		t.Helper()
		d, ok := defs[name].(map[string]any)
		if !ok {
			t.Fatalf("no definition %s", name)
		}
		return d
	}
	// prop is a field's schema without its description (checked by
	// TestDescriptions).
	prop := func(defs map[string]any, name, field string) string {
		t.Helper()
		p := maps.Clone(def(defs, name)["properties"].(map[string]any)[field].(map[string]any))
		delete(p, "description")
		return mustJSON(t, p)
	}
	quantity := definitionName(reflect.TypeFor[resource.Quantity]())
	intOrString := definitionName(reflect.TypeFor[intstr.IntOrString]())

	for _, tc := range []struct{ what, got, want string }{
		{"v2 Quantity", mustJSON(t, def(v2, quantity)), `{"type":"string"}`},
		{"v3 Quantity", mustJSON(t, def(v3, quantity)), `{"oneOf":[{"type":"string"},{"type":"number"}]}`},
		{"v2 IntOrString", mustJSON(t, def(v2, intOrString)), `{"format":"int-or-string","type":"string"}`},
		{"v3 IntOrString", mustJSON(t, def(apps, intOrString)), `{"format":"int-or-string","oneOf":[{"type":"integer"},{"type":"string"}]}`},
		{"Time", mustJSON(t, def(v2, "io.k8s.apimachinery.pkg.apis.meta.v1.Time")), `{"format":"date-time","type":"string"}`},
		{"MicroTime", mustJSON(t, def(v2, "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime")), `{"format":"date-time","type":"string"}`},
		{"RawExtension", mustJSON(t, def(v2, "io.k8s.apimachinery.pkg.runtime.RawExtension")), `{"type":"object"}`},
		{"FieldsV1", mustJSON(t, def(v2, "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1")["type"]), `"object"`},
		{"Pod kind", mustJSON(t, def(v2, "io.k8s.api.core.v1.Pod")["x-kubernetes-group-version-kind"]), `[{"group":"","kind":"Pod","version":"v1"}]`},
		{"Deployment kind", mustJSON(t, def(apps, "io.k8s.api.apps.v1.Deployment")["x-kubernetes-group-version-kind"]), `[{"group":"apps","kind":"Deployment","version":"v1"}]`},
		{"DeploymentList kind", mustJSON(t, def(apps, "io.k8s.api.apps.v1.DeploymentList")["x-kubernetes-group-version-kind"]), `[{"group":"apps","kind":"DeploymentList","version":"v1"}]`},
		{"Scale kind", mustJSON(t, def(apps, "io.k8s.api.autoscaling.v1.Scale")["x-kubernetes-group-version-kind"]), `[{"group":"autoscaling","kind":"Scale","version":"v1"}]`},
		{"Secret data", prop(v2, "io.k8s.api.core.v1.Secret", "data"), `{"additionalProperties":{"format":"byte","type":"string"},"type":"object"}`},
		{"replicas", prop(v2, "io.k8s.api.apps.v1.DeploymentSpec", "replicas"), `{"format":"int32","type":"integer"}`},
		{"containers", prop(v2, "io.k8s.api.core.v1.PodSpec", "containers"),
			`{"items":{"$ref":"#/definitions/io.k8s.api.core.v1.Container"},"type":"array","x-kubernetes-list-map-keys":["name"],"x-kubernetes-list-type":"map","x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"}`},
		{"v3 containers", prop(v3, "io.k8s.api.core.v1.PodSpec", "containers"),
			`{"items":{"$ref":"#/components/schemas/io.k8s.api.core.v1.Container"},"type":"array","x-kubernetes-list-map-keys":["name"],"x-kubernetes-list-type":"map","x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"}`},
		// Keys the patch tags alone would get wrong come from the
		// structured-merge-diff schema.
		{"ports", prop(v2, "io.k8s.api.core.v1.Container", "ports"),
			`{"items":{"$ref":"#/definitions/io.k8s.api.core.v1.ContainerPort"},"type":"array","x-kubernetes-list-map-keys":["containerPort","protocol"],"x-kubernetes-list-type":"map","x-kubernetes-patch-merge-key":"containerPort","x-kubernetes-patch-strategy":"merge"}`},
		{"finalizers", prop(v2, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers"),
			`{"items":{"type":"string"},"type":"array","x-kubernetes-list-type":"set","x-kubernetes-patch-strategy":"merge"}`},
		{"nodeSelector", prop(v2, "io.k8s.api.core.v1.PodSpec", "nodeSelector"),
			`{"additionalProperties":{"type":"string"},"type":"object","x-kubernetes-map-type":"atomic"}`},
		{"LabelSelector atomic", mustJSON(t, def(v2, "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")["x-kubernetes-map-type"]), `"atomic"`},
		// A reference with extensions: a sibling in 2.0, wrapped in allOf in 3.0.
		{"v2 strategy", prop(v2, "io.k8s.api.apps.v1.DeploymentSpec", "strategy"),
			`{"$ref":"#/definitions/io.k8s.api.apps.v1.DeploymentStrategy","x-kubernetes-patch-strategy":"retainKeys"}`},
		{"v3 strategy", prop(apps, "io.k8s.api.apps.v1.DeploymentSpec", "strategy"),
			`{"allOf":[{"$ref":"#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}],"x-kubernetes-patch-strategy":"retainKeys"}`},
		{"Container required", mustJSON(t, def(v2, "io.k8s.api.core.v1.Container")["required"]), `["name"]`},
		{"Pod metadata", prop(v2, "io.k8s.api.core.v1.Pod", "metadata"), `{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.what, tc.got, tc.want)
		}
	}

	// The per group/version documents hold only what their paths reach.
	if _, ok := v3["io.k8s.api.apps.v1.Deployment"]; ok {
		t.Error("the api/v1 document defines apps/v1 Deployment")
	}
	if _, ok := apps["io.k8s.api.core.v1.PodSpec"]; !ok {
		t.Error("the apps/v1 document lacks core/v1 PodSpec, which Deployment's template needs")
	}
}

// TestEveryReferenceResolves walks every document for $ref and checks each
// names a definition of the same document.
func TestEveryReferenceResolves(t *testing.T) {
	docs, err := buildDocuments(issueResources())
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, doc map[string]any, prefix string, defs map[string]any) {
		count := 0
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok {
					count++
					target, found := strings.CutPrefix(ref, prefix)
					if _, defined := defs[target]; !found || !defined {
						t.Errorf("%s: dangling reference %s", name, ref)
					}
				}
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(doc)
		if count == 0 {
			t.Errorf("%s: no references at all", name)
		}
	}
	v2 := jsonOf(t, docs.swagger)
	check("v2", v2, "#/definitions/", v2["definitions"].(map[string]any))
	wantGroupVersions := []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1",
		"apis/rbac.authorization.k8s.io/v1", "apis/scheduling.k8s.io/v1"}
	var got []string
	for gv, doc := range docs.v3 {
		got = append(got, gv)
		m := jsonOf(t, doc)
		check(gv, m, "#/components/schemas/", m["components"].(map[string]any)["schemas"].(map[string]any))
	}
	slices.Sort(got)
	if !slices.Equal(got, wantGroupVersions) {
		t.Errorf("v3 documents for %v, want %v", got, wantGroupVersions)
	}
}
