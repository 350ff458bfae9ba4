package endpoints

import "testing"

// A Deployment create with a deprecated node label in its template's
// nodeSelector gets upstream's Warning header (GetWarningsForPodTemplate
// under spec.template), and still succeeds.
func TestDeploymentTemplateWarningThroughTheAPI(t *testing.T) {
	h, _ := servedHandler(t, "deployments")
	r := do(h, "POST", "/apis/apps/v1/namespaces/default/deployments", "application/json",
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{
		"selector":{"matchLabels":{"app":"web"}},
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{
			"nodeSelector":{"beta.kubernetes.io/os":"linux"},
			"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if want := `299 - "spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead"`; r.warning != want {
		t.Errorf("Warning header %q, want %q", r.warning, want)
	}
}
