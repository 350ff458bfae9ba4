package openapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientopenapi "k8s.io/client-go/openapi"
)

// TestStructuredMergeDiffTypes builds client-go's server-side-apply type
// converter from the served v3 documents and checks the list semantics it
// derives: containers and their ports are keyed lists, so field sets name
// their elements by key.
func TestStructuredMergeDiffTypes(t *testing.T) {
	disco, _, _ := testServer(t)
	converter, err := clientopenapi.NewTypeConverter(disco.OpenAPIV3(), false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(podManifestTwoContainers+`    ports:
    - containerPort: 80
      protocol: TCP
  nodeSelector:
    disk: ssd
`), &obj.Object); err != nil {
		t.Fatal(err)
	}
	typed, err := converter.ObjectToTyped(obj)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	fields := set.String()
	for _, want := range []string{
		`.spec.containers[name="a"].image`,
		`.spec.containers[name="b"].ports[containerPort=80,protocol="TCP"].containerPort`,
		`.spec.nodeSelector`,
	} {
		if !strings.Contains(fields, want) {
			t.Errorf("field set lacks %s:\n%s", want, fields)
		}
	}
	// nodeSelector is atomic: its keys are not fields of their own.
	if strings.Contains(fields, ".spec.nodeSelector.disk") {
		t.Errorf("atomic nodeSelector split into fields:\n%s", fields)
	}

	// A typed Go object converts too.
	pod := &corev1.Pod{}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	pod.Spec.Containers = []corev1.Container{{Name: "a", Image: "a"}}
	if _, err := converter.ObjectToTyped(pod); err != nil {
		t.Errorf("ObjectToTyped(*corev1.Pod): %v", err)
	}
}

func TestNewTypeConverter(t *testing.T) {
	converter, err := NewTypeConverter(issueResources())
	if err != nil {
		t.Fatal(err)
	}
	deployment := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    spec:
      containers:
      - name: a
        image: nginx
        env:
        - name: X
          value: "1"
`), &deployment.Object); err != nil {
		t.Fatal(err)
	}
	typed, err := converter.ObjectToTyped(deployment)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	fields := set.String()
	for _, want := range []string{`.spec.template.spec.containers[name="a"].env[name="X"].value`, `.spec.selector`} {
		if !strings.Contains(fields, want) {
			t.Errorf("field set lacks %s:\n%s", want, fields)
		}
	}
	// The selector is an atomic struct.
	if strings.Contains(fields, ".spec.selector.matchLabels") {
		t.Errorf("atomic selector split into fields:\n%s", fields)
	}
	// Kinds the server does not serve are unknown.
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job"}}
	if _, err := converter.ObjectToTyped(job); err == nil {
		t.Error("ObjectToTyped accepted a batch/v1 Job")
	}
}
