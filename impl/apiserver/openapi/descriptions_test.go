package openapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/registry"
)

// TestDescriptions: types and fields carry the descriptions of the
// k8s.io/api types' SwaggerDoc, in both documents; a described reference
// is a sibling in 2.0 and wrapped in allOf in 3.0, as upstream writes them.
func TestDescriptions(t *testing.T) {
	docs, err := buildDocuments(registry.All())
	if err != nil {
		t.Fatal(err)
	}
	v2 := jsonOf(t, docs.swagger)["definitions"].(map[string]any)
	v3 := jsonOf(t, docs.v3["api/v1"])["components"].(map[string]any)["schemas"].(map[string]any)
	field := func(defs map[string]any, def, name string) map[string]any {
		t.Helper()
		return defs[def].(map[string]any)["properties"].(map[string]any)[name].(map[string]any)
	}
	for _, tc := range []struct{ what, got, want string }{
		{"Pod", v2["io.k8s.api.core.v1.Pod"].(map[string]any)["description"].(string),
			"Pod is a collection of containers that can run on a host."},
		{"Container.image", field(v2, "io.k8s.api.core.v1.Container", "image")["description"].(string), "Container image name."},
		{"v3 Service.spec", field(v3, "io.k8s.api.core.v1.Service", "spec")["description"].(string), "Spec defines the behavior of a service."},
		{"ObjectMeta.name via inline", field(v2, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name")["description"].(string), "Name must be unique within a namespace."},
		{"Pod.kind from TypeMeta", field(v2, "io.k8s.api.core.v1.Pod", "kind")["description"].(string), "Kind is a string value representing the REST resource"},
	} {
		if !strings.HasPrefix(tc.got, tc.want) {
			t.Errorf("%s: description %q, want it to start with %q", tc.what, tc.got, tc.want)
		}
	}
	if spec := field(v3, "io.k8s.api.core.v1.Service", "spec"); spec["allOf"] == nil || spec["$ref"] != nil {
		t.Errorf("v3 described reference not wrapped in allOf: %v", spec)
	}
	if spec := field(v2, "io.k8s.api.core.v1.Service", "spec"); spec["$ref"] == nil {
		t.Errorf("v2 described reference lost its $ref: %v", spec)
	}
}

// TestRequiredAsUpstream: required lists follow upstream's generator —
// the +optional/+required comment tag first, omitempty second. The
// expectations are upstream's published definitions.
func TestRequiredAsUpstream(t *testing.T) {
	docs, err := buildDocuments(registry.All())
	if err != nil {
		t.Fatal(err)
	}
	defs := jsonOf(t, docs.swagger)["definitions"].(map[string]any)
	for name, want := range map[string][]string{
		// omitempty alone
		"io.k8s.api.core.v1.Container":                        {"name"},
		"io.k8s.api.core.v1.PodSpec":                          {"containers"},
		"io.k8s.api.core.v1.ServicePort":                      {"port"},
		"io.k8s.api.core.v1.EndpointAddress":                  {"ip"},
		"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {"apiVersion", "kind", "name", "uid"},
		"io.k8s.api.apps.v1.DeploymentSpec":                   {"selector", "template"},
		// +optional without omitempty
		"io.k8s.api.core.v1.Event":                     {"involvedObject", "metadata"},
		"io.k8s.api.core.v1.TypedLocalObjectReference": {"kind", "name"},
		"io.k8s.api.core.v1.GRPCAction":                {"port"},
		"io.k8s.api.rbac.v1.ClusterRole":               nil,
		"io.k8s.api.rbac.v1.Role":                      nil,
		// +required with omitempty
		"io.k8s.api.apps.v1.Deployment": {"spec"},
	} {
		d, ok := defs[name].(map[string]any)
		if !ok {
			t.Errorf("no definition %s", name)
			continue
		}
		var got []string
		if r, ok := d["required"].([]any); ok {
			for _, f := range r {
				got = append(got, f.(string))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s required %v, want %v", name, got, want)
		}
	}
}

// TestDefaults: +default values are in the documents (server-side apply
// needs the port protocol's to key ports given without one).
func TestDefaults(t *testing.T) {
	docs, err := buildDocuments(registry.All())
	if err != nil {
		t.Fatal(err)
	}
	defs := jsonOf(t, docs.swagger)["definitions"].(map[string]any)
	for _, def := range []string{"io.k8s.api.core.v1.ServicePort", "io.k8s.api.core.v1.ContainerPort"} {
		p := defs[def].(map[string]any)["properties"].(map[string]any)["protocol"].(map[string]any)
		if p["default"] != "TCP" {
			t.Errorf("%s.protocol default %v, want TCP", def, p["default"])
		}
	}
}

// TestOptionalityGeneratedIsCurrent: optional_generated.go is what the
// generator makes from the k8s.io/api version in go.mod (run go generate
// after a dependency bump).
func TestOptionalityGeneratedIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goTool, "run", "./internal/optionalgen")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running optionalgen: %v", err)
	}
	have, err := os.ReadFile("optional_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(have) {
		t.Error("optional_generated.go is stale: run go generate ./impl/apiserver/openapi")
	}
}
